import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN, type ConsoleE2e, reportServerOnFailure, SCREENSHOTS, signInAsAdmin, startConsoleE2e } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';
import { runCli } from './support/processes.js';

/**
 * The System page's Installation tab in the console (Chromium, the real server on PostgreSQL): the installation
 * operator (OPERATOR_EMAILS) sees every company together, another company's admin only their own company.
 * Screenshots at 1280 and 375 px go to test-output/screenshots/.
 */
const chromiumNeed = needChromium();
const OPERATOR = ADMIN;
const OTHER_ADMIN = { email: 'gus@globex.test', password: 'globex admin password' };

let e2e: ConsoleE2e;
reportServerOnFailure(() => e2e);

beforeAll(async () => {
  if (chromiumNeed.missing) return; // describeWith reports the skip
  e2e = await startConsoleE2e('system', chromiumNeed.path, { JOBS_WORKER: 'false', OPERATOR_EMAILS: OPERATOR.email });
  const env = e2e.env;
  // A second company with its own admin (the operator CLI).
  expect(runCli(['tenant:create', '--name', 'Globex', '--prefix', 'GLBX', '--json'], env).status).toBe(0);
  expect(runCli(['user:create', '--tenant', 'GLBX', '--email', OTHER_ADMIN.email, '--password', OTHER_ADMIN.password, '--role', 'CompanyAdmin', '--json'], env).status).toBe(0);
  for (const job of ['audit-checkpoints', 'audit-verify']) expect(runCli(['jobs:run', job, '--json'], env).status).toBe(0);
  // A waiting email of each company: the installation counts both.
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  await db.query(
    `INSERT INTO email_outbox (id, tenant_id, kind, idempotency_key, to_address, subject, html, text, created_at, next_attempt_at)
     SELECT gen_random_uuid(), id, 'test', 'system-e2e-' || key_prefix, 'ops@example.test', 'Hi', '<p>Hi</p>', 'Hi', now() - interval '7 minutes', now() + interval '1 day' FROM tenants`,
  ).finally(() => db.end());
}, 600_000);

afterAll(async () => {
  const errors = e2e?.errors ?? [];
  await e2e?.stop();
  expect(errors, 'browser errors').toEqual([]);
});

describeWith(chromiumNeed)('the System page for an installation operator', () => {
  it('the operator opens the Installation tab: every company together, the job runs and the dependencies', async () => {
    for (const width of [1280, 375]) {
      const page = await e2e.newPage(width);
      await signInAsAdmin(page, OPERATOR);
      await page.goto('/system');
      // The company's own view comes first: one email waits for Acme.
      await expect.poll(() => page.getByText('Emails pending').first().locator('..').textContent()).toMatch(/Emails pending1 \(oldest \d+ minutes ago\)/);
      await page.getByRole('tab', { name: 'Installation' }).click();
      const installation = page.getByTestId('installation-status');
      await installation.waitFor();
      await expect.poll(() => installation.getByText('Emails pending').locator('..').textContent()).toMatch(/Emails pending2 \(oldest \d+ minutes ago\)/);
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
    const page = await e2e.newPage(1280);
    await signInAsAdmin(page, OTHER_ADMIN);
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
