import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { inject } from 'vitest';
import { createDatabase, dropDatabase, uniqueName } from './pg.js';
import { postJson, startServerProcess, type ServerProcess } from './processes.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const SCREENSHOTS = path.join(ROOT, 'test-output/screenshots');
export const CONSOLE_ADMIN = { email: 'ada@acme.test', password: 'correct horse battery' };

/**
 * The built console served by a real server process on a database of its own, set up as Acme Corp (prefix ACME)
 * with CONSOLE_ADMIN, and a Chromium page at 1280 px collecting page errors. `token` is the admin's access token.
 */
export async function startConsoleE2e(name: string, chromiumPath: string) {
  const built = spawnSync(process.execPath, ['server/scripts/build-if-changed.mjs', 'console'], { cwd: ROOT, encoding: 'utf8', timeout: 180_000 });
  if (built.status !== 0) throw new Error(`console build failed:\n${built.stdout}\n${built.stderr}`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  const dbName = uniqueName(`kf_console_${name}`);
  const databaseUrl = await createDatabase(dbName, inject('templateDatabase'));
  const dataDir = mkdtempSync(path.join(tmpdir(), `kf-console-${name}-`));
  let server: ServerProcess | undefined;
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    await server?.stop('SIGKILL');
    await dropDatabase(dbName);
    rmSync(dataDir, { recursive: true, force: true });
  };
  server = await startServerProcess({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir, SERVER_SECRET: `console-${name}-secret-0123456789abcdef0123456789`, LOG_LEVEL: 'warn' });
  const setup = await postJson(`${server.url}/api/graphql`, {
    query: 'mutation($input: SetupInput!) { setup(input: $input) { accessToken } }',
    variables: { input: { companyName: 'Acme Corp', keyPrefix: 'ACME', email: CONSOLE_ADMIN.email, password: CONSOLE_ADMIN.password } },
  });
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, baseURL: server.url, locale: 'en-US', timezoneId: 'UTC', reducedMotion: 'reduce', acceptDownloads: true });
  const page: Page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  return { server, page, pageErrors, token: setup.json.data.setup.accessToken as string, close };
}

/** Signs CONSOLE_ADMIN in on the console's sign-in page and waits for the dashboard. */
export async function signIn(page: Page) {
  await page.goto('/login');
  await page.getByLabel('Email').fill(CONSOLE_ADMIN.email);
  await page.getByLabel(/^Password/).fill(CONSOLE_ADMIN.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
}
