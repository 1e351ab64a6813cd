import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { currentTotp } from '../server/src/services/auth/mfa.js';
import { checkOverlaysWithAxe } from './support/axe.js';
import { confirmIdentity, outboxLink, chooseOption, recordCspViolations } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';
import { createDatabase, dropDatabase, uniqueName } from './support/pg.js';
import { postJson, runCli, startServerProcess, type ServerProcess } from './support/processes.js';
import { clearOfUtcMidnight } from './support/time.js';

/**
 * The admin console end to end: the built console served by the real server (a separate process) on its own
 * PostgreSQL database, driven in Debian Chromium. Screenshots of each main page go to
 * test-output/screenshots/ (look at them after a UI change).
 */
const ROOT = path.resolve(import.meta.dirname, '..');
const CONSOLE = path.join(ROOT, 'console');
const SCREENSHOTS = path.join(ROOT, 'test-output/screenshots');
const chromiumNeed = needChromium();
const CHROMIUM = chromiumNeed.path;
const ADMIN = { email: 'ada@acme.test', password: 'correct horse battery' };
const SERVER_SECRET = 'console-e2e-secret-0123456789abcdef0123456789';
const DAY = 86_400_000;

/** Builds console/dist unless it is up to date with the console's sources (the same check `pnpm start` makes). */
function ensureConsoleBuilt() {
  const result = spawnSync(process.execPath, ['server/scripts/build-if-changed.mjs', 'console'], { cwd: ROOT, encoding: 'utf8', timeout: 180_000 });
  if (result.status !== 0) throw new Error(`console build failed:\n${result.stdout}\n${result.stderr}`);
}

let server: ServerProcess;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let dbName: string;
let dataDir: string;
let databaseUrl: string;
const pageErrors: string[] = [];

/**
 * The Console guide's and README's images (docs/public/images) are these pages as this suite drives them: with
 * DOCS_SCREENSHOTS=1 the named shots are also written there, at the viewport's size.
 */
const DOCS_IMAGES = path.resolve(import.meta.dirname, '../docs/public/images');

async function shot(name: string, docsImage?: string) {
  await expect.poll(() => page.getByRole('status').count(), { timeout: 15_000 }).toBe(0); // loading states done
  // Toasts were checked where they matter; close them so they do not cover the page.
  // A toast may still be arriving (a slow machine): keep closing until none is left.
  await expect
    .poll(
      async () => {
        for (const close of await page.locator('.mantine-Notification-root button').all()) await close.click({ timeout: 1000 }).catch(() => undefined);
        return page.locator('.mantine-Notification-root').count();
      },
      { timeout: 15_000 },
    )
    .toBe(0);
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  if (docsImage && process.env.DOCS_SCREENSHOTS === '1') await page.screenshot({ path: path.join(DOCS_IMAGES, `${docsImage}.png`) });
}

async function nav(label: string) {
  await page.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: label, exact: true }).click();
}

/**
 * A TOTP code the server accepts now: a time step newer than the last one used (codes are one-use) and within
 * its ±1 step window, waiting for the clock when needed.
 */
let lastTotpStep = 0;
async function nextTotp(secret: string): Promise<string> {
  const step = Math.max(Math.floor(Date.now() / 30_000), lastTotpStep + 1);
  // A wall-clock wait on purpose: the real server checks codes against real time, so the next 30 s step can only
  // be waited for (polling the clock, not sleeping a fixed time).
  while (Math.floor(Date.now() / 30_000) + 1 < step) await new Promise((resolve) => setTimeout(resolve, 500));
  lastTotpStep = step;
  return currentTotp(secret, new Date(step * 30_000 + 15_000));
}

const toast = (text: string | RegExp) => page.locator('.mantine-Notification-root').filter({ hasText: text }).first();

beforeAll(async () => {
  // The server runs on the wall clock and the analytics steps count "Today" (since 00:00 UTC): the suite (about
  // 5 minutes) must not straddle a UTC midnight.
  await clearOfUtcMidnight(10 * 60_000);
  ensureConsoleBuilt();
  mkdirSync(SCREENSHOTS, { recursive: true });
  dbName = uniqueName('kf_console');
  databaseUrl = await createDatabase(dbName, inject('templateDatabase'));
  dataDir = mkdtempSync(path.join(tmpdir(), 'kf-console-'));
  server = await startServerProcess({
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    SERVER_SECRET,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PUBLIC_PER_MINUTE: '100000',
    RATE_LIMIT_TENANT_PER_MINUTE: '100000',
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, baseURL: server.url, locale: 'en-US', timezoneId: 'UTC', reducedMotion: 'reduce' });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('pageerror', (error) => pageErrors.push(error.message));
  // Content-Security-Policy violations and the serious axe findings of every menu, popover and dialog count as errors.
  await recordCspViolations(page, pageErrors);
  await checkOverlaysWithAxe(page, { checked: [], violations: pageErrors });
}, 240_000 + 10 * 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop('SIGKILL');
  if (dbName) await dropDatabase(dbName);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describeWith(chromiumNeed)('admin console in Chromium', () => {
  let licenseKey = '';
  let licenseUrl = '';
  let mfaSecret = '';
  let keptCheckpointFile = '';
  const expiresOn = new Date(Date.now() + 10 * DAY).toISOString().slice(0, 10);

  it('serves the console at any client-side route and keeps /api/* for the API', async () => {
    const deepLink = await fetch(`${server.url}/licenses/4f1c8a2b-1c3d-4e5f-a6b7-c8d9e0f1a2b3`);
    expect(deepLink.status).toBe(200);
    expect(deepLink.headers.get('content-type')).toMatch(/text\/html/);
    expect(await deepLink.text()).toContain('<div id="root">');
    const api = await fetch(`${server.url}/api/v1/nonce`);
    expect(api.headers.get('content-type')).toMatch(/json/);
  });

  it('first run: setup creates the company and the first admin, and signs in', async () => {
    await page.goto('/');
    await page.waitForURL('**/setup');
    await page.getByLabel('Company name').fill('Acme Corp');
    await page.getByLabel('License key prefix').fill('acme');
    await expect.poll(() => page.getByLabel('License key prefix').inputValue()).toBe('ACME');
    await page.getByLabel('Your name').fill('Ada Admin');
    await page.getByLabel('Email').fill(ADMIN.email);
    await page.getByLabel(/^Password/).fill(ADMIN.password);
    await page.getByLabel(/^Repeat password/).fill(ADMIN.password);
    await shot('01-setup');
    await page.getByRole('button', { name: 'Create company and sign in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    // An empty company gets the getting-started checklist, pointing at step 1.
    const checklist = page.getByRole('region', { name: 'Getting started' });
    await checklist.getByText('0 of 4 done').waitFor();
    expect(await checklist.getByRole('link', { name: 'Add a product' }).getAttribute('href')).toBe('/products?new=1');
    await shot('01b-getting-started');
    // Setup is closed now: the page hands over to sign-in.
    expect(await (await fetch(`${server.url}/api/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ needsSetup }' }) })).json()).toEqual({ data: { needsSetup: false } });
  });

  it('a reload keeps the session (silent refresh from the httpOnly cookie); the token is not in storage', async () => {
    await page.reload();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
    expect(stored).not.toMatch(/eyJ/); // no JWT anywhere script can read
  });

  it('sign out, then sign in with email and password', async () => {
    await page.getByRole('button', { name: 'Account menu' }).click();
    await page.getByRole('menuitem', { name: 'Sign out' }).click();
    await page.waitForURL('**/login**');
    await page.getByLabel('Email').fill(ADMIN.email);
    await page.getByLabel(/^Password/).fill('wrong password!!');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Invalid email or password' }).waitFor();
    await page.getByLabel(/^Password/).fill(ADMIN.password);
    await shot('02-login');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await expect.poll(() => page.getByText('Licenses Expiring Soon').count()).toBe(0);
  });

  it('creates a product', async () => {
    await nav('Products');
    await page.getByRole('heading', { name: 'Products' }).waitFor();
    await page.getByText('No products yet').waitFor();
    await page.getByRole('button', { name: 'New product' }).click();
    await page.getByRole('dialog').getByLabel('Name').fill('Acme Studio');
    await page.getByRole('dialog').getByRole('button', { name: 'Create product' }).click();
    await toast('Acme Studio was created.').waitFor();
    await page.getByTestId('product-row').filter({ hasText: 'Acme Studio' }).waitFor();
    await shot('03-products');
  });

  it('creates a license: the key is shown once and copied with the copy button', async () => {
    await nav('Licenses');
    await page.getByText('No licenses yet').waitFor();
    await page.getByRole('button', { name: 'New license' }).click();
    const dialog = page.getByRole('dialog');
    await chooseOption(page, dialog.getByLabel(/^Product/), 'Acme Studio');
    await dialog.getByLabel('Max activations').fill('3');
    await dialog.getByLabel('Customer email').fill('buyer@example.com');
    await dialog.getByLabel('Perpetual (never expires)').uncheck();
    await dialog.getByLabel(/^Expires on/).fill(expiresOn);
    await dialog.getByRole('button', { name: 'Create license' }).click();
    const secret = dialog.getByTestId('secret-value');
    await secret.waitFor();
    licenseKey = (await secret.textContent())!.trim();
    expect(licenseKey).toMatch(/^ACME(-[A-Z0-9]{4}){4}$/);
    await dialog.getByRole('button', { name: 'Copy license key' }).click();
    await dialog.getByRole('button', { name: 'license key copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(licenseKey);
    await shot('04-license-created');
    await dialog.getByRole('button', { name: 'Open license' }).click();
    await page.getByText('Not activated yet').waitFor();
    licenseUrl = new URL(page.url()).pathname;
    expect(licenseUrl).toMatch(/^\/licenses\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/); // the UUID as is

    // The Integrate panel: snippets for this server and product, copied with one click.
    const integrate = page.getByRole('tabpanel').filter({ has: page.locator('[data-snippet="curl"]') });
    expect(await integrate.locator('[data-snippet="curl"]').textContent()).toContain(`${server.url}/api/v1/activate`);
    await page.getByRole('button', { name: 'Copy the curl snippet' }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toContain(`curl -s ${server.url}/api/v1/validate`);
    await page.getByRole('tab', { name: 'TypeScript' }).click();
    expect(await page.locator('[data-snippet="typescript"]').textContent()).toContain("const PRODUCT = \"Acme Studio\"");
    await shot('04b-integrate');
  });

  it('the license activates through the public API and the activation shows on its page', async () => {
    const { nonce } = (await (await fetch(`${server.url}/api/v1/nonce`)).json()) as { nonce: string };
    const activated = await postJson(`${server.url}/api/v1/activate`, { licenseKey, nonce, deviceId: 'a'.repeat(64), deviceName: "Ada's laptop", version: '2.4.1' });
    expect(activated).toMatchObject({ status: 200, json: { isValid: true, productName: 'Acme Studio', remainingActivations: 2 } });

    // A deep link loads directly (server fallback to index.html, then silent refresh).
    await page.goto(licenseUrl);
    await page.getByTestId('activation-row').filter({ hasText: "Ada's laptop" }).waitFor();
    await expect.poll(() => page.getByText('1 of 3 used').count()).toBe(1);
  });

  it('edits the license (max activations 3 → 5); a bad version or a negative number is a field error', async () => {
    await page.getByRole('button', { name: 'Edit' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: /Versions, grace periods/ }).click();
    await dialog.getByLabel('Minimum app version').fill('banana');
    await dialog.getByLabel('Maximum app version').fill('1.0.0');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await dialog.getByText('must be a semantic version such as 1.4.2').waitFor();
    await dialog.getByLabel('Minimum app version').fill('');
    await dialog.getByLabel('Maximum app version').fill('');
    await dialog.getByLabel('Max activations').fill('-3');
    await dialog.getByLabel('Max activations').blur();
    await dialog.getByText('At least 1.').waitFor();
    expect(await dialog.getByLabel('Max activations').inputValue()).toBe('-3');
    await dialog.getByLabel('Max activations').fill('5');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await toast('License saved.').waitFor();
    await expect.poll(() => page.getByText('1 of 5 used').count()).toBe(1);
    await shot('05-license-detail', 'console-license');
  });

  it('the dashboard shows totals and the Licenses Expiring Soon panel', async () => {
    await nav('Dashboard');
    const panel = page.getByTestId('expiring-soon');
    await panel.waitFor();
    await expect.poll(() => panel.getByTestId('badge-7-days').textContent()).toBe('0 within 7 days');
    await expect.poll(() => panel.getByTestId('badge-30-days').textContent()).toBe('1 within 30 days');
    const row = panel.getByTestId('expiring-row');
    expect(await row.count()).toBe(1);
    expect(await row.textContent()).toMatch(/Acme Studio.*buyer@example\.com.*in 1[01]d/);
    expect(await page.getByTestId('stat-activeLicenses').textContent()).toBe('1');
    expect(await page.getByTestId('stat-activations').textContent()).toBe('1');
    // Product, license, integrate (a snippet was copied) and the first activation: the checklist says it is done.
    expect(await page.getByRole('region', { name: 'Getting started' }).getByText('You are set up').count()).toBe(1);
    await shot('06-dashboard', 'console-dashboard');
    await row.getByRole('link', { name: 'Acme Studio' }).click();
    await page.waitForURL(`**${licenseUrl}`);
  });

  it('analytics shows the activation with the range selector', async () => {
    await nav('Analytics');
    await page.getByRole('heading', { name: 'Analytics' }).waitFor();
    for (const range of ['Today', 'Last 7 days', 'Last 30 days']) {
      await page.getByRole('radiogroup', { name: 'Time range' }).getByText(range, { exact: true }).click();
      await page.getByTestId('top-product').filter({ hasText: 'Acme Studio' }).waitFor();
      expect(await page.getByTestId('top-product').first().textContent()).toMatch(/Acme Studio\s*1$/);
    }
    await page.getByRole('radiogroup', { name: 'Granularity' }).getByText('Weekly', { exact: true }).click();
    await page.waitForURL(/granularity=WEEK/);
    // Chosen right after the range: the second choice keeps the first (a change renders before the next click).
    expect(new URL(page.url()).searchParams.get('range')).toBe('LAST_30_DAYS');
    // Each chart is a canvas named for screen readers, with its data as a text summary inside (Charts.tsx):
    // read the values the page draws. The state here: one active license of Acme Studio, expiring in 10–11 days,
    // with one activation.
    const chart = (name: string | RegExp) => page.getByRole('img', { name, exact: typeof name === 'string' });
    const trend = chart(/^New activations per week, last 30 days$/);
    await expect.poll(() => trend.count()).toBe(1);
    const trendValues = (await trend.textContent())!.split(': Activations ')[1].split(', ').map((bucket) => Number(bucket.split(' ').at(-1)));
    expect(trendValues.length).toBeGreaterThanOrEqual(4); // 30 days by week
    expect(trendValues.reduce((sum, value) => sum + value, 0)).toBe(1);
    expect(await page.getByRole('region', { name: 'Activation trend' }).textContent()).toContain('1 new activation, last 30 days');
    expect(await chart('Licenses by status').textContent()).toBe('Licenses by status: Licenses by status Active 1, Expired 0, Suspended 0, Revoked 0');
    expect(await chart('Licenses by expiry').textContent()).toBe('Licenses by expiry: Licenses by expiry ≤ 7 days 0, 8–30 days 1, 31–90 days 0, > 90 days 0, Perpetual 0, Expired 0');
    expect(await chart('Licenses by product').textContent()).toBe('Licenses by product: Active Acme Studio 1; Other Acme Studio 0');
    await shot('07-analytics');
  });

  it('the activity log lists the changes, filters them and shows the before/after diff', async () => {
    await nav('Activity log');
    for (const action of ['Sign in', 'Create product', 'Create license', 'Update license', 'Failed sign-in']) {
      await page.getByTestId('activity-row').filter({ hasText: action }).first().waitFor();
    }
    // The list holds every action (more than sixty): type to narrow it, as one does with a searchable select.
    const actionField = page.getByRole('textbox', { name: 'Action' });
    await actionField.fill('Update lic');
    await chooseOption(page, actionField, 'Update license');
    await page.waitForURL(/action=UPDATE_LICENSE/);
    await expect.poll(() => page.getByTestId('activity-row').count(), { timeout: 15_000 }).toBe(1);
    await page.getByRole('button', { name: 'Show details' }).click();
    const diff = page.getByTestId('details-diff');
    await diff.waitFor();
    expect(await diff.textContent()).toMatch(/maxActivations\s*3\s*5/);
    await shot('08-activity', 'console-activity');
  });

  it('the activity log hands out a signed checkpoint to keep, and verifies the log against it', async () => {
    await page.goto('/activity');
    const panel = page.getByTestId('integrity-panel');
    await panel.getByText(/No tampering found: \d+ entries verify/).waitFor();
    await panel.getByText(/Newest checkpoint: entry #\d+, signed/).waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), panel.getByRole('button', { name: 'Download checkpoint' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^keyforge-checkpoint-ACME-\d+\.json$/);
    keptCheckpointFile = path.join(dataDir, download.suggestedFilename());
    await download.saveAs(keptCheckpointFile);
    const kept = JSON.parse(readFileSync(keptCheckpointFile, 'utf8'));
    expect(kept).toMatchObject({ format: 'keyforge-audit-checkpoints/1', company: { keyPrefix: 'ACME' }, checkpoints: [{ checkpoint: expect.stringMatching(/^eyJ/) }] });
    await toast(/saved as keyforge-checkpoint-ACME-/).waitFor();
    await shot('08b-activity-integrity');
    await panel.getByRole('button', { name: 'Verify against kept checkpoints' }).click();
    const dialog = page.getByRole('dialog', { name: 'Verify against kept checkpoints' });
    await dialog.locator('input[type="file"]').setInputFiles(keptCheckpointFile);
    await dialog.getByRole('button', { name: 'Verify', exact: true }).click();
    await dialog.getByText('The log extends every checkpoint you kept').waitFor();
    await dialog.getByText(/The log extends it: entries #1–#\d+ are unchanged\./).waitFor();
    await shot('08c-activity-verified');
    await page.keyboard.press('Escape');
    await panel.getByText(/Last full verification: .* every entry verified \(against 1 kept checkpoint\)/).waitFor();
  });

  it('changes notification preferences', async () => {
    await page.getByRole('button', { name: 'Account menu' }).click();
    await page.getByRole('menuitem', { name: 'My profile' }).click();
    const digest = page.getByRole('switch', { name: /Weekly digest/ });
    await expect.poll(() => digest.isChecked()).toBe(true);
    await digest.click({ force: true });
    await toast('Notification preferences saved.').waitFor();
    await page.reload();
    await expect.poll(() => page.getByRole('switch', { name: /Weekly digest/ }).isChecked()).toBe(false);
    expect(await page.getByRole('switch', { name: /License expiry alerts/ }).isChecked()).toBe(true);
  });

  it('enables MFA with the QR code and backup codes', async () => {
    await page.getByRole('button', { name: 'Enable two-factor authentication' }).click();
    // Turning MFA on is an account-security action: the console asks for the password, then starts the enrolment.
    await confirmIdentity(page, ADMIN.password);
    await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
    mfaSecret = (await page.getByTestId('mfa-secret').textContent())!.trim();
    await page.getByLabel('Code from the app').fill(await nextTotp(mfaSecret));
    await shot('09-profile-mfa-enroll');
    await page.getByRole('button', { name: 'Confirm and turn on' }).click();
    await page.getByTestId('backup-codes').waitFor();
    expect(await page.getByTestId('backup-codes').locator('code').count()).toBe(10);
    await shot('10-profile-backup-codes');
    await page.getByRole('button', { name: 'I have saved them' }).click();
    await page.getByLabel('Turn off with a current code').waitFor();
  });

  it('signs in again with a TOTP code', async () => {
    await page.getByRole('button', { name: 'Account menu' }).click();
    await page.getByRole('menuitem', { name: 'Sign out' }).click();
    await page.waitForURL('**/login**');
    await page.getByLabel('Email').fill(ADMIN.email);
    await page.getByLabel(/^Password/).fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
    await page.getByLabel('Authentication code, digit 1 of 6').click();
    await page.keyboard.type(await nextTotp(mfaSecret));
    await shot('11-login-mfa');
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(/\/settings\/profile$/); // back where the session ended
    await page.getByText('Turn off with a current code').waitFor();
  });

  it('team, API keys (shown once, revoked), company settings and the email outbox', async () => {
    await nav('Team');
    await page.getByText(ADMIN.email).first().waitFor();
    // Members join by invitation (an address gets an account only from whoever reads its mailbox): no "Add member".
    expect(await page.getByRole('button', { name: 'Add member' }).count()).toBe(0);
    await shot('12-team');

    // Invite by email: the link (token in the URL fragment) is read from the outbox, opened in a fresh browser.
    await page.getByRole('button', { name: 'Invite by email' }).click();
    const inviteDialog = page.getByRole('dialog');
    await inviteDialog.getByLabel('Email').fill('bob@acme.test');
    await inviteDialog.getByLabel('Name').fill('Bob Reader');
    await inviteDialog.getByRole('button', { name: 'Send invitation' }).click(); // read-only, the default role
    // No mail provider here: the toast says where the invitation is kept, not that it was sent.
    await toast('Invitation for bob@acme.test kept in the outbox, not emailed: no mail provider is configured. Open it on the Emails page (Preview) and pass the link on.').waitFor();
    await page.getByText('Pending invitations').waitFor();
    await page.getByRole('row').filter({ hasText: 'bob@acme.test' }).waitFor();
    await shot('12b-team-invitations');
    const link = await outboxLink({ DATABASE_URL: databaseUrl, SERVER_SECRET }, 'invitation', 'bob@acme.test');
    const fresh = await browser.newContext({ viewport: { width: 1280, height: 860 }, baseURL: server.url, locale: 'en-US', timezoneId: 'UTC', reducedMotion: 'reduce' });
    try {
      const bob = await fresh.newPage();
      const errors: string[] = [];
      bob.on('pageerror', (error) => errors.push(error.message));
      await recordCspViolations(bob, errors);
      await checkOverlaysWithAxe(bob, { checked: [], violations: errors });
      await bob.goto(link);
      await bob.getByRole('heading', { name: 'Join Acme Corp' }).waitFor();
      await bob.getByText('as bob@acme.test').waitFor();
      await bob.getByLabel(/^Password/).fill('bob password 123');
      await bob.getByLabel(/^Repeat password/).fill('bob password 123');
      await bob.screenshot({ path: path.join(SCREENSHOTS, 'accept-invite.png'), fullPage: true });
      await bob.getByRole('button', { name: 'Join and sign in' }).click();
      await bob.getByRole('heading', { name: 'Dashboard' }).waitFor();
      // The link works once.
      await bob.goto(link);
      await bob.getByText('This invitation link does not work').waitFor();
      expect(errors).toEqual([]);
    } finally {
      await fresh.close();
    }
    await page.reload();
    await page.getByRole('row').filter({ hasText: 'bob@acme.test' }).getByRole('button', { name: 'Deactivate' }).waitFor(); // now a member

    await nav('API keys');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('billing backend');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    // Minting a key is an account-security action: the console asks for the password and a code, then retries.
    await confirmIdentity(page, ADMIN.password, await nextTotp(mfaSecret));
    const key = (await dialog.getByTestId('secret-value').textContent())!.trim();
    expect(key).toMatch(/^kf_/);
    await dialog.getByRole('button', { name: 'I have stored it' }).click();
    const row = page.getByRole('row').filter({ hasText: 'billing backend' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
    await row.getByText(/revoked/).waitFor();
    await shot('13-api-keys');

    await nav('Company');
    await expect.poll(() => page.getByLabel('Company name').inputValue()).toBe('Acme Corp');
    await shot('14-company');

    await nav('Emails');
    await page.getByRole('heading', { name: 'Scheduled jobs' }).waitFor();
    // No mail provider here: the page says so, and a test email is kept, not "sent".
    await page.getByTestId('development-outbox').waitFor();
    // The subtitle names every kind of email the page lists.
    await page
      .getByText('Every email the service sends — weekly digests, expiry alerts to admins and notices to customers, invitations, password reset links, disabled-webhook alerts and test emails')
      .waitFor();
    await page.getByRole('button', { name: 'Send test email' }).click();
    await toast(`Test email kept in the development outbox for ${ADMIN.email}`).waitFor();
    const testRow = page.getByRole('row').filter({ hasText: 'test email from Keyforge' });
    await expect.poll(() => testRow.getByTestId('email-status').textContent()).toBe('kept');
    // Run now: queued, then the job shows a fresh last run.
    // Disabled while the every-minute run is in progress (a busy machine can make one take a while).
    const runNow = page.getByRole('button', { name: 'Run email-delivery now' });
    await expect.poll(() => runNow.isEnabled(), { timeout: 90_000 }).toBe(true);
    await runNow.click();
    await toast('email-delivery is queued').waitFor();
    const deliveryRow = page.getByRole('row').filter({ hasText: 'email-delivery' });
    await expect.poll(() => deliveryRow.textContent(), { timeout: 20_000 }).toMatch(/seconds? ago|now/);
    await shot('14b-emails');
  });

  it('the System page shows the backlogs, the activity log, the dependencies and the jobs', async () => {
    await nav('System');
    await page.getByRole('heading', { name: 'System', level: 2 }).waitFor();
    for (const heading of ['Backlogs', 'Activity log', 'Dependencies', 'Scheduled jobs']) await page.getByRole('heading', { name: heading }).waitFor();
    await expect.poll(() => page.getByText('Emails pending').locator('..').textContent()).toMatch(/Emails pending\d+/);
    await page.getByText('development outbox: nothing is sent').waitFor();
    await page.getByText('not configured').waitFor();
    // The last run with its duration (email-delivery runs every minute).
    const deliveryRow = page.getByRole('row').filter({ hasText: 'email-delivery' });
    await expect
      .poll(
        async () => {
          // Reloaded until it shows a finished run (not one in progress, nor one that finished "now" and says no "ago").
          if (!/ago · took/.test((await deliveryRow.textContent()) ?? '')) await page.reload();
          await deliveryRow.waitFor();
          return deliveryRow.textContent();
        },
        { timeout: 90_000, interval: 2_000 },
      )
      .toMatch(/ago · took \d+(\.\d)? s/);
    await shot('14d-system');
  });

  it('webhooks: adds an endpoint (signing secret shown once), sends a test event, shows it in the delivery log', async () => {
    await nav('Webhooks');
    await page.getByText('No webhook endpoints yet').waitFor();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('URL').fill('ftp://example.com/hooks');
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    await dialog.getByText(/http/i).first().waitFor(); // a field error, the dialog stays open
    await dialog.getByLabel('URL').fill('https://example.com/keyforge-webhooks');
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = (await dialog.getByTestId('secret-value').textContent())!.trim();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{40,}={0,2}$/);
    await dialog.getByRole('button', { name: 'I have stored it' }).click();
    const row = page.getByRole('row').filter({ hasText: 'https://example.com/keyforge-webhooks' });
    await row.waitFor();
    await shot('14d-webhooks');
    await row.getByRole('button', { name: 'Deliveries' }).click();
    const log = page.getByRole('dialog');
    await log.getByText('No deliveries yet').waitFor();
    await log.getByRole('button', { name: 'Send test event' }).click();
    // Sent at once (no delivery run needed): the toast says how it went.
    await toast(/Test event (delivered|failed|not delivered)/).waitFor(); // an outcome, not "queued"
    await expect
      .poll(async () => {
        if (!(await log.getByText('webhook.test').count())) await log.getByRole('button', { name: 'Refresh' }).click();
        return log.getByText('webhook.test').count();
      })
      .toBeGreaterThan(0);
    await shot('14e-webhook-deliveries');
    await page.keyboard.press('Escape');
  });

  it('a read-only member: no Emails in the navigation, and its deep link explains instead of crashing', async () => {
    const readOnly = await browser.newContext({ viewport: { width: 1280, height: 860 }, baseURL: server.url, locale: 'en-US', timezoneId: 'UTC', reducedMotion: 'reduce' });
    const bob = await readOnly.newPage();
    const errors: string[] = [];
    bob.on('pageerror', (error) => errors.push(error.message));
    await recordCspViolations(bob, errors);
    await checkOverlaysWithAxe(bob, { checked: [], violations: errors });
    try {
      await bob.goto('/emails');
      await bob.waitForURL('**/login**');
      await bob.getByLabel('Email').fill('bob@acme.test');
      await bob.getByLabel(/^Password/).fill('bob password 123');
      await bob.getByRole('button', { name: 'Sign in' }).click();
      await bob.waitForURL('**/emails');
      await bob.getByText('This needs the CompanyAdmin role').waitFor();
      expect(await bob.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name: 'Emails' }).count()).toBe(0);
      await bob.screenshot({ path: path.join(SCREENSHOTS, '14c-read-only-emails.png'), fullPage: true });
      // Read-only members read everything else; management actions are not offered.
      await bob.goto(licenseUrl);
      await bob.getByText('Integrate').first().waitFor();
      expect(await bob.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
      expect(await bob.getByText('Unexpected Application Error').count()).toBe(0);
      expect(errors).toEqual([]);
    } finally {
      await readOnly.close();
    }
  });

  it('revokes the license after confirmation; it no longer validates', async () => {
    await page.goto(licenseUrl);
    await page.getByRole('button', { name: 'Revoke' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke this license?' });
    await dialog.getByRole('button', { name: 'Revoke license' }).click();
    await toast('License revoked.').waitFor();
    await expect.poll(() => page.getByTestId('license-status').first().textContent()).toBe('revoked');
    await shot('15-license-revoked');
    const validated = await postJson(`${server.url}/api/v1/validate`, { licenseKey });
    expect(validated.json).toMatchObject({ isValid: false, errorCode: 'LicenseRevoked' });

    await nav('Licenses');
    await page.getByTestId('license-row').first().waitFor();
    await shot('16-licenses', 'console-licenses');
  });

  it('five failed sign-ins lock the account, and the sign-in page says so', async () => {
    await page.getByRole('button', { name: 'Account menu' }).click();
    await page.getByRole('menuitem', { name: 'Sign out' }).click();
    await page.waitForURL('**/login**');
    await page.getByLabel('Email').fill('bob@acme.test');
    await page.getByLabel(/^Password/).fill('not his password');
    for (let attempt = 1; attempt <= 5; attempt++) {
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'Invalid email or password' }).waitFor();
    }
    await page.getByLabel(/^Password/).fill('bob password 123'); // even the right password is refused now
    await page.getByRole('button', { name: 'Sign in' }).click();
    const locked = page.getByRole('alert').filter({ hasText: 'Account locked' });
    await locked.waitFor();
    expect(await locked.textContent()).toMatch(/Too many failed sign-in attempts: the account is locked until .*2\d{3}/);
    // With its time zone (Chromium's short name, e.g. UTC or GMT+2).
    const zone = await page.evaluate(() => new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' }).formatToParts(new Date()).find((part) => part.type === 'timeZoneName')!.value);
    expect(await locked.textContent()).toContain(zone);
    await shot('19-login-locked');
    await page.getByLabel('Email').fill(ADMIN.email);
    await page.getByLabel(/^Password/).fill(ADMIN.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Authentication code, digit 1 of 6').click();
    await page.keyboard.type(await nextTotp(mfaSecret));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(/\/licenses$/); // back where the session ended
  });

  it('works on a 375 px phone: tables become cards, nothing is off-screen', async () => {
    // A license expiring in 3 days (the first one is revoked now), so the widget shows.
    const cli = runCli(['license:create', '--tenant', 'ACME', '--product', 'Acme Studio', '--max-activations', '1', '--expires-at', new Date(Date.now() + 3 * DAY).toISOString(), '--customer-email', 'a.very.long.customer.address@example.com', '--json'],
      { DATABASE_URL: databaseUrl, DATA_DIR: dataDir, SERVER_SECRET });
    expect(cli.status, cli.stderr).toBe(0);
    await page.setViewportSize({ width: 375, height: 812 });
    await page.getByRole('button', { name: 'Open navigation' }).click();
    await nav('Dashboard');
    const expiring = page.getByTestId('expiring-row').first();
    await expiring.waitFor();
    const countdown = expiring.locator('td[data-label="Expires"]');
    expect(await countdown.textContent()).toMatch(/in [23]d/);
    const box = (await countdown.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(375);
    await shot('17-dashboard-narrow');
    await page.getByRole('button', { name: 'Open navigation' }).click();
    await nav('Licenses');
    const row = page.getByTestId('license-row').first();
    await row.waitFor();
    // A card: the header row is hidden, each cell carries its label, and every cell fits the screen.
    expect(await page.locator('thead').first().isVisible()).toBe(false);
    for (const cell of await row.locator('td').all()) {
      const box = (await cell.boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(375);
    }
    expect(await row.locator('td[data-label="Product"]').count()).toBe(1);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await shot('18-licenses-narrow');
    expect(pageErrors).toEqual([]);
  });

  it("detects the database owner's tampering: the kept checkpoint names the entry (and on a phone)", async () => {
    // The owner of the database rewrites entry #2 (the append-only trigger switched off, as only an owner can).
    const owner = new pg.Client({ connectionString: databaseUrl });
    await owner.connect();
    try {
      await owner.query('BEGIN');
      await owner.query('ALTER TABLE audit_log DISABLE TRIGGER USER');
      await owner.query(`UPDATE audit_log SET actor = 'nobody' WHERE seq = 2 AND tenant_id = (SELECT id FROM tenants WHERE key_prefix = 'ACME')`);
      await owner.query('ALTER TABLE audit_log ENABLE TRIGGER USER');
      await owner.query('COMMIT');
    } finally {
      await owner.end();
    }
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.goto('/activity');
    const panel = page.getByTestId('integrity-panel');
    await panel.getByRole('button', { name: 'Verify against kept checkpoints' }).click();
    const dialog = page.getByRole('dialog', { name: 'Verify against kept checkpoints' });
    await dialog.locator('input[type="file"]').setInputFiles(keptCheckpointFile);
    await dialog.getByRole('button', { name: 'Verify', exact: true }).click();
    await dialog.getByText('The log was altered at entry #2').waitFor();
    expect(await dialog.getByTestId('verification-result').textContent()).toContain('Entry #2 was changed: its content no longer gives its hash.');
    await dialog.getByText('Entries changed').waitFor();
    await shot('20-activity-tamper-verification');
    await page.keyboard.press('Escape');
    await panel.getByText('The log was altered at entry #2').waitFor();
    await panel.getByTestId('integrity-problem').waitFor();
    await shot('20b-activity-tampered');
    await page.setViewportSize({ width: 375, height: 812 });
    await page.reload();
    await panel.getByText('The log was altered at entry #2').waitFor();
    for (const button of ['Download checkpoint', 'Verify against kept checkpoints']) {
      const box = (await panel.getByRole('button', { name: button }).boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(375);
    }
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await shot('21-activity-narrow');
    await panel.getByRole('button', { name: 'Verify against kept checkpoints' }).click();
    await dialog.locator('input[type="file"]').setInputFiles(keptCheckpointFile);
    await dialog.getByRole('button', { name: 'Verify', exact: true }).click();
    await dialog.getByText('The log was altered at entry #2').waitFor();
    for (const part of [dialog.getByTestId('verification-result'), dialog.getByRole('button', { name: 'Verify', exact: true })]) {
      const box = (await part.boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(375);
    }
    await shot('21b-activity-verify-narrow');
    await page.keyboard.press('Escape');
    expect(pageErrors).toEqual([]);
  });
});
