import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { describeWith, needChromium } from './support/optional.js';
import { createDatabase, dropDatabase, uniqueName } from './support/pg.js';
import { postJson, runCli, startServerProcess, type ServerProcess } from './support/processes.js';

/**
 * The System page's Installation tab in the console (Chromium, the real server on PostgreSQL): the installation
 * operator (OPERATOR_EMAILS) sees every company together, another company's admin only their own company.
 * Screenshots at 1280 and 375 px go to test-output/screenshots/.
 */
const ROOT = path.resolve(import.meta.dirname, '..');
const SCREENSHOTS = path.join(ROOT, 'test-output/screenshots');
const chromiumNeed = needChromium();
const OPERATOR = { email: 'ada@acme.test', password: 'correct horse battery' };
const OTHER_ADMIN = { email: 'gus@globex.test', password: 'globex admin password' };

let server: ServerProcess;
let browser: Browser;
let dbName: string;
let dataDir: string;

async function newPage(width: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 860 }, baseURL: server.url, locale: 'en-US', timezoneId: 'UTC', reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on('pageerror', (error) => expect.fail(`browser error: ${error.message}`));
  return page;
}

async function signIn(page: Page, email: string, password: string) {
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.pathname === '/');
}

beforeAll(async () => {
  const built = spawnSync(process.execPath, ['server/scripts/build-if-changed.mjs', 'console'], { cwd: ROOT, encoding: 'utf8', timeout: 240_000 });
  if (built.status !== 0) throw new Error(`console build failed:\n${built.stdout}\n${built.stderr}`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  dbName = uniqueName('kf_system');
  const databaseUrl = await createDatabase(dbName, inject('templateDatabase'));
  dataDir = mkdtempSync(path.join(tmpdir(), 'kf-system-'));
  const env = { DATABASE_URL: databaseUrl, DATA_DIR: dataDir, SERVER_SECRET: 'system-e2e-secret-0123456789abcdef0123456789', LOG_LEVEL: 'warn' };
  server = await startServerProcess({ ...env, JOBS_WORKER: 'false', OPERATOR_EMAILS: OPERATOR.email });
  const setup = await postJson(`${server.url}/api/graphql`, {
    query: 'mutation($e: String!, $p: String!) { setup(input: { companyName: "Acme Corp", keyPrefix: "ACME", email: $e, password: $p }) { accessToken } }',
    variables: { e: OPERATOR.email, p: OPERATOR.password },
  });
  expect(setup.json.errors).toBeUndefined();
  // A second company with its own admin (the operator CLI).
  expect(runCli(['tenant:create', '--name', 'Globex', '--prefix', 'GLBX', '--json'], env).status).toBe(0);
  expect(runCli(['user:create', '--tenant', 'GLBX', '--email', OTHER_ADMIN.email, '--password', OTHER_ADMIN.password, '--role', 'CompanyAdmin', '--json'], env).status).toBe(0);
  for (const job of ['audit-checkpoints', 'audit-verify']) expect(runCli(['jobs:run', job, '--json'], env).status).toBe(0);
  // A waiting email of each company: the installation counts both.
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  await db.query(
    `INSERT INTO email_outbox (id, tenant_id, kind, idempotency_key, to_address, subject, html, text, created_at, next_attempt_at)
     SELECT gen_random_uuid(), id, 'test', 'system-e2e-' || key_prefix, 'ops@example.test', 'Hi', '<p>Hi</p>', 'Hi', now() - interval '7 minutes', now() + interval '1 day' FROM tenants`,
  ).finally(() => db.end());
  browser = await chromium.launch({ executablePath: chromiumNeed.path, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop('SIGKILL');
  if (dbName) await dropDatabase(dbName);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describeWith(chromiumNeed)('the System page for an installation operator', () => {
  it('the operator opens the Installation tab: every company together, the job runs and the dependencies', async () => {
    for (const width of [1280, 375]) {
      const page = await newPage(width);
      await signIn(page, OPERATOR.email, OPERATOR.password);
      await page.goto('/system');
      // The company's own view comes first: one email waits for Acme.
      await expect.poll(() => page.getByText('Emails pending').first().locator('..').textContent()).toMatch(/Emails pending1 \(oldest 7 minutes ago\)/);
      await page.getByRole('tab', { name: 'Installation' }).click();
      const installation = page.getByTestId('installation-status');
      await installation.waitFor();
      await expect.poll(() => installation.getByText('Emails pending').locator('..').textContent()).toMatch(/Emails pending2 \(oldest 7 minutes ago\)/);
      await expect.poll(() => installation.getByText('Companies', { exact: true }).locator('..').textContent()).toBe('Companies2');
      await installation.getByText('2 of 2 verified').waitFor();
      await installation.getByText('holds', { exact: true }).waitFor();
      await installation.getByText('development outbox: nothing is sent').waitFor();
      for (const job of ['audit-checkpoints', 'audit-verify']) await installation.getByTestId('job-run').filter({ hasText: job }).getByText('succeeded').waitFor();
      await page.screenshot({ path: path.join(SCREENSHOTS, `system-installation-${width}.png`), fullPage: true });
      await page.context().close();
    }
  });

  it("another company's admin sees their company only: no Installation tab (the server refuses the query: system-installation.test.ts)", async () => {
    const page = await newPage(1280);
    await signIn(page, OTHER_ADMIN.email, OTHER_ADMIN.password);
    await page.goto('/system');
    await expect.poll(() => page.getByText('Emails pending').first().locator('..').textContent()).toMatch(/Emails pending1 \(oldest/);
    await page.getByRole('heading', { name: 'Scheduled jobs' }).waitFor();
    expect(await page.getByRole('tab', { name: 'Installation' }).count()).toBe(0);
    expect(await page.getByTestId('installation-status').count()).toBe(0);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'system-company-only-1280.png'), fullPage: true });
    for (const width of [375]) {
      await page.setViewportSize({ width, height: 860 });
      await page.screenshot({ path: path.join(SCREENSHOTS, `system-company-only-${width}.png`), fullPage: true });
    }
    await page.context().close();
  });
});
