import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContextOptions, type Locator, type Page } from 'playwright-core';
import pg from 'pg';
import { afterEach, inject } from 'vitest';
import { ServerSecrets } from '../../server/src/crypto/secrets.js';
import { checkOverlaysWithAxe, type OverlayChecks } from './axe.js';
import { renderToken, unsealEmailToken } from '../../server/src/services/notifications/sealed-token.js';
import { createDatabase, dropDatabase, uniqueName } from './pg.js';
import { postJson, startServerProcess, type ServerProcess } from './processes.js';

/**
 * The start of a console end-to-end suite: the console built, the real server on a fresh PostgreSQL database, first-run
 * setup done (company Acme Corp, prefix ACME, admin ADMIN) and Chromium launched. Call from beforeAll, after
 * needChromium(); `stop()` in afterAll. Screenshots go to SCREENSHOTS.
 */
export const ROOT = path.resolve(import.meta.dirname, '../..');
export const SCREENSHOTS = path.join(ROOT, 'test-output/screenshots');
export const ADMIN = { email: 'ada@acme.test', password: 'correct horse battery' };

export interface ConsoleE2e {
  server: ServerProcess;
  /** The server's DATABASE_URL, DATA_DIR and SERVER_SECRET: what the operator CLI (runCli) needs to reach the same data. */
  env: Record<string, string>;
  browser: Browser;
  /** The admin's access token (from setup). */
  token: string;
  /** A GraphQL call as the admin; throws on errors. */
  gql(query: string, variables: Record<string, unknown>): Promise<any>;
  /**
   * A page at `width` px (US English, UTC, reduced motion), 20 s timeouts; browser errors go to `errors`, and so do its
   * Content-Security-Policy violations and the serious axe-core violations of every menu, popover and dialog it opens
   * (test/support/axe.ts).
   */
  newPage(width: number, options?: BrowserContextOptions): Promise<Page>;
  errors: string[];
  /** The overlays axe checked on this suite's pages (`violations` is `errors`). */
  overlays: OverlayChecks;
  /** The GraphQL errors the pages were answered (many are a test's intent), kept for a failure's report. */
  answeredErrors: string[];
  stop(): Promise<void>;
}

/**
 * After a failed test of the suite: the GraphQL errors its pages were answered and the server's warnings and errors,
 * which a timed-out wait for a heading never shows. Call at the top of the suite's file.
 */
export function reportServerOnFailure(suite: () => ConsoleE2e | undefined) {
  afterEach((context) => {
    const e2e = suite();
    if (!e2e || context.task.result?.state !== 'fail') return;
    const logged = e2e.server.output().split('\n').filter((line) => /"level":(40|50|60)/.test(line)).slice(-5);
    console.error(`${context.task.name}: the pages' GraphQL errors:\n${e2e.answeredErrors.slice(-10).join('\n') || '(none)'}\nthe server's warnings and errors:\n${logged.map((line) => line.slice(0, 1500)).join('\n') || '(none)'}`);
  });
}

/** `serverEnv`: extra settings for the server (e.g. OPERATOR_EMAILS). */
export async function startConsoleE2e(name: string, chromiumPath: string, serverEnv: Record<string, string> = {}): Promise<ConsoleE2e> {
  const built = spawnSync(process.execPath, ['server/scripts/build-if-changed.mjs', 'console'], { cwd: ROOT, encoding: 'utf8', timeout: 240_000 });
  if (built.status !== 0) throw new Error(`console build failed:\n${built.stdout}\n${built.stderr}`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  const dbName = uniqueName(`kf_${name}`);
  const databaseUrl = await createDatabase(dbName, inject('templateDatabase'));
  const dataDir = mkdtempSync(path.join(tmpdir(), `kf-${name}-`));
  const env = { DATABASE_URL: databaseUrl, DATA_DIR: dataDir, SERVER_SECRET: `${name}-secret-0123456789abcdef0123456789` };
  const server = await startServerProcess({ ...env, LOG_LEVEL: 'warn', ...serverEnv });
  const setup = await postJson(`${server.url}/api/graphql`, {
    query: 'mutation($input: SetupInput!) { setup(input: $input) { accessToken } }',
    variables: { input: { companyName: 'Acme Corp', keyPrefix: 'ACME', email: ADMIN.email, password: ADMIN.password } },
  });
  const token = setup.json.data.setup.accessToken as string;
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
  const errors: string[] = [];
  const overlays: OverlayChecks = { checked: [], violations: errors };
  const answeredErrors: string[] = [];
  return {
    server,
    env,
    browser,
    token,
    errors,
    overlays,
    answeredErrors,
    async gql(query, variables) {
      const response = await fetch(`${server.url}/api/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await response.json()) as { data: any; errors?: unknown };
      if (body.errors) throw new Error(JSON.stringify(body.errors));
      return body.data;
    },
    async newPage(width, options = {}) {
      const context = await browser.newContext({ viewport: { width, height: 860 }, baseURL: server.url, locale: 'en-US', timezoneId: 'UTC', reducedMotion: 'reduce', ...options });
      const page = await context.newPage();
      page.setDefaultTimeout(20_000);
      page.on('pageerror', (error) => errors.push(error.message));
      // A built asset that does not load is a broken build (or one rebuilt under the running server), never a test's intent.
      page.on('response', (response) => {
        const { pathname } = new URL(response.url());
        if (response.status() >= 400 && pathname.startsWith('/assets/')) errors.push(`${response.status()} for ${response.url()}`);
        if (pathname.endsWith('/graphql')) {
          void response
            .json()
            .then((body: { errors?: unknown[] }) => body.errors && answeredErrors.push(`${pathname} ${JSON.stringify(body.errors).slice(0, 500)}`))
            .catch(() => undefined); // not JSON, or the page closed first
        }
      });
      await recordCspViolations(page, errors);
      await checkOverlaysWithAxe(page, overlays);
      return page;
    },
    async stop() {
      await browser.close();
      await server.stop('SIGKILL');
      await dropDatabase(dbName);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Every Content-Security-Policy violation on `page` goes to `into`, as Chromium reports it both ways: the page's
 * `securitypolicyviolation` event (written to the console by an init script, which the policy does not govern) and
 * Chromium's own "Refused to …" console error.
 */
export async function recordCspViolations(page: Page, into: string[]) {
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      console.error(`securitypolicyviolation: ${event.effectiveDirective} blocked ${event.blockedURI || 'inline'} at ${event.documentURI}`);
    });
  });
  page.on('console', (message) => {
    const text = message.text();
    if (message.type() === 'error' && (text.startsWith('securitypolicyviolation:') || /Content Security Policy/.test(text))) into.push(`CSP: ${text}`);
  });
}

/** Signs the admin (or `who`) in on the login page and waits for the dashboard. */
export async function signInAsAdmin(page: Page, who: { email: string; password: string } = ADMIN) {
  await page.goto('/login');
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel(/^Password/).fill(who.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
}

/**
 * Picks the option `name` of a select field (Mantine's combobox). A click that lands while the field's dialog is still
 * opening can leave the list shut; the field is clicked again only while it reports the list shut (Mantine's
 * data-expanded), never to toggle an open list closed.
 */
export async function chooseOption(page: Page, field: Locator, name: string) {
  const option = page.getByRole('option', { name });
  for (let attempt = 1; ; attempt++) {
    if ((await field.getAttribute('data-expanded')) === null) await field.click();
    try {
      await option.waitFor({ state: 'visible', timeout: 4_000 });
      break;
    } catch (error) {
      if (attempt === 5) throw error;
    }
  }
  await option.click();
}

/**
 * Answers the console's "Confirm it is you" dialog (recent re-authentication, docs/security.md) with the password and,
 * when MFA is on, a code; the console then retries the action that asked for it.
 */
export async function confirmIdentity(page: Page, password: string, code?: string) {
  const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
  await dialog.waitFor();
  await dialog.getByLabel(/^Password/).fill(password);
  if (code !== undefined) await dialog.getByLabel(/^Authentication code/).fill(code);
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await dialog.waitFor({ state: 'hidden' });
}

/**
 * The newest single-use link of one kind mailed to `to`, as its addressee receives it: the stored body holds a
 * placeholder, and the token is sealed under the server secret (docs/security.md).
 */
export async function outboxLink(env: Record<string, string>, kind: 'password-reset' | 'invitation' | 'portal-sign-in', to: string): Promise<string> {
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  const { rows } = await db
    .query<{ text: string; idempotency_key: string; to_address: string; sealed_token: string }>(
      'SELECT text, idempotency_key, to_address, sealed_token FROM email_outbox WHERE kind = $1 AND to_address = $2 ORDER BY created_at DESC LIMIT 1',
      [kind, to],
    )
    .finally(() => db.end());
  if (rows.length !== 1) throw new Error(`no ${kind} email to ${to} in the outbox`);
  const row = rows[0];
  const token = unsealEmailToken(new ServerSecrets(env.SERVER_SECRET), { idempotencyKey: row.idempotency_key, to: row.to_address, sealedToken: row.sealed_token });
  const pathname = { invitation: 'accept-invite', 'password-reset': 'reset-password', 'portal-sign-in': 'portal/[\\w-]+/sign-in' }[kind];
  return new RegExp(`/${pathname}#token=kf[rip]_[\\w-]+`).exec(renderToken(row.text, token))![0];
}
