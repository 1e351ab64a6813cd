import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN, confirmIdentity, type ConsoleE2e, reportServerOnFailure, SCREENSHOTS, signInAsAdmin, startConsoleE2e } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';
import { runCli } from './support/processes.js';

/**
 * Console details (Chromium, the real server on PostgreSQL, WEBHOOK_ALLOW_PRIVATE off): the onboarding checklist opens
 * the forms, errors said once on their field, one address scheme for settings, the license search kept in the URL,
 * webhooks (internal-address warning, test event sent at once, status badge, phone layout), one quota rule, the
 * member deactivation wording. Screenshots at 1280 and 375 px go to test-output/screenshots/details-*.png.
 */
const chromiumNeed = needChromium();
const MEMBER = 'bob@acme.test';

let e2e: ConsoleE2e;
reportServerOnFailure(() => e2e);
const gql = (query: string, variables: Record<string, unknown> = {}) => e2e.gql(query, variables);

async function signedIn(width: number): Promise<Page> {
  const page = await e2e.newPage(width);
  await signInAsAdmin(page);
  return page;
}

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `details-${name}.png`), fullPage: true });
const toasts = (page: Page) => page.locator('.mantine-Notification-root');

beforeAll(async () => {
  if (chromiumNeed.missing) return; // describeWith reports the skip
  e2e = await startConsoleE2e('details', chromiumNeed.path);
  expect(runCli(['user:create', '--tenant', 'ACME', '--email', MEMBER, '--password', 'bobs own password', '--role', 'ReadOnly', '--json'], e2e.env).status).toBe(0);
}, 600_000);

afterAll(async () => {
  const errors = e2e?.errors ?? [];
  await e2e?.stop();
  expect(errors, 'browser errors').toEqual([]);
});

describeWith(chromiumNeed)('console details', () => {
  it('the checklist opens the product form; a duplicate name is shown once, on the field; "Create a license" opens the license form', async () => {
    const page = await signedIn(1280);
    const checklist = page.getByRole('region', { name: 'Getting started' });
    await checklist.getByRole('link', { name: 'Add a product' }).click();
    const dialog = page.getByRole('dialog', { name: 'New product' });
    await dialog.waitFor();
    expect(new URL(page.url()).search).toBe(''); // the ?new=1 is dropped: a reload does not open it again
    await dialog.getByLabel('Name').fill('Studio');
    await dialog.getByRole('button', { name: 'Create product' }).click();
    await dialog.waitFor({ state: 'hidden' });
    // The same name again: the error sits on the Name input, and no "That did not work" toast.
    await page.getByRole('button', { name: 'New product' }).click();
    await dialog.getByLabel('Name').fill('Studio');
    await dialog.getByRole('button', { name: 'Create product' }).click();
    await dialog.getByText('Another product already has this name.').waitFor();
    expect(await dialog.getByLabel('Name').getAttribute('aria-invalid')).toBe('true');
    await shot(page, 'product-duplicate-1280');
    await expect.poll(() => toasts(page).filter({ hasText: 'That did not work' }).count(), { timeout: 2000 }).toBe(0);
    await page.keyboard.press('Escape');

    await page.goto('/');
    await checklist.getByRole('link', { name: 'Create a license' }).click();
    await page.getByRole('dialog', { name: 'New license' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/licenses');
    await page.context().close();
  });

  it('the finished checklist says so', async () => {
    const page = await signedIn(1280);
    await page.evaluate(() => localStorage.setItem('kf.onboarding.completed', 'true'));
    await page.reload();
    await page.getByText('You are set up').waitFor();
    await shot(page, 'checklist-done-1280');
    await page.context().close();
  });

  it('settings live under /settings/…; the old addresses redirect; the license search is kept in the URL', async () => {
    const page = await signedIn(1280);
    for (const [from, to, heading] of [['/team', '/settings/team', 'Team'], ['/api-keys', '/settings/api-keys', 'API keys'], ['/settings', '/settings/company', 'Company'], ['/profile', '/settings/profile', 'My profile']]) {
      await page.goto(from);
      await page.waitForURL((url) => url.pathname === to);
      await page.getByRole('heading', { name: heading, level: 2 }).or(page.getByRole('heading', { name: heading, level: 1 })).first().waitFor();
    }
    const nav = page.getByRole('navigation', { name: 'Main navigation' });
    expect(await nav.getByRole('link', { name: 'Team', exact: true }).getAttribute('href')).toBe('/settings/team');
    expect(await nav.getByRole('link', { name: 'Company', exact: true }).getAttribute('href')).toBe('/settings/company');
    // Only the page that is open is marked current.
    expect(await nav.locator('[aria-current="page"]').count()).toBe(1);

    await page.goto('/licenses');
    await page.getByLabel('Search').fill('buyer@');
    await page.waitForURL((url) => url.searchParams.get('q') === 'buyer@');
    await page.reload();
    expect(await page.getByLabel('Search').inputValue()).toBe('buyer@');
    // A key never goes into the address.
    await page.getByLabel('Search').fill('ACME-7KQ2-M9XH-4TRB-WZ3P');
    await page.waitForURL((url) => !url.searchParams.has('q'));
    expect(page.url()).not.toContain('7KQ2');
    await page.context().close();
  });

  it('webhooks: an internal address is saved with a warning; a test event goes out at once; the badge and the phone layout fit', async () => {
    const page = await signedIn(1280);
    await page.goto('/settings/webhooks');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByLabel('URL').fill('http://127.0.0.1:9/keyforge');
    await page.getByRole('dialog').getByRole('button', { name: 'Add endpoint' }).click();
    await confirmIdentity(page, ADMIN.password); // adding an endpoint needs a recent re-authentication
    await page.getByText('Deliveries to this URL will be refused').waitFor();
    await page.getByText(/127\.0\.0\.1 is an internal address/).waitFor();
    await shot(page, 'webhook-warning-1280');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByRole('button', { name: 'Deliveries' }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    // Sent before the mutation answered: the outcome is known at once (refused by the SSRF guard).
    await toasts(page).filter({ hasText: /Test event failed: refused/ }).waitFor({ timeout: 10_000 });
    const badge = page.getByRole('dialog').locator('.mantine-Badge-root').filter({ hasText: 'failed' }).first();
    await badge.waitFor();
    expect(await badge.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true);
    expect(await badge.innerText()).toBe('FAILED');
    await shot(page, 'webhook-deliveries-1280');
    await page.context().close();

    const phone = await signedIn(375);
    await phone.goto('/settings/webhooks');
    const deliveries = phone.getByRole('button', { name: 'Deliveries' });
    await deliveries.waitFor();
    const card = phone.locator('tr').filter({ has: deliveries });
    const [button, row] = [(await deliveries.boundingBox())!, (await card.boundingBox())!];
    expect(button.x + button.width).toBeLessThanOrEqual(row.x + row.width + 0.5);
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await shot(phone, 'webhooks-375');
    await phone.context().close();
  });

  it('quotas: one rule — settable on a suspended license, not on a revoked one; deactivating a member says what Reactivate undoes', async () => {
    const products = await gql('{ products(first: 10) { nodes { id name } } }');
    const productId = products.products.nodes[0].id;
    const create = 'mutation($p: ID!) { createLicense(input: { productId: $p, maxActivations: 1 }) { license { id } } }';
    const suspended = (await gql(create, { p: productId })).createLicense.license.id;
    const revoked = (await gql(create, { p: productId })).createLicense.license.id;
    await gql('mutation($id: ID!) { suspendLicense(input: { id: $id }) { license { id } } }', { id: suspended });
    await gql('mutation($id: ID!) { revokeLicense(input: { id: $id }) { license { id } } }', { id: revoked });
    const page = await signedIn(1280);
    await page.goto(`/licenses/${suspended}`);
    await expect.poll(() => page.getByRole('button', { name: 'Set quota' }).isEnabled()).toBe(true);
    await page.goto(`/licenses/${revoked}`);
    const setQuota = page.getByRole('button', { name: 'Set quota' });
    await setQuota.waitFor();
    expect(await setQuota.isDisabled()).toBe(true);
    expect(await setQuota.getAttribute('aria-description')).toMatch(/revoked/);

    await page.goto('/settings/team');
    await page.getByRole('row').filter({ hasText: MEMBER }).getByRole('button', { name: 'Deactivate' }).click();
    const confirm = page.getByRole('dialog');
    await confirm.getByText(/cannot sign in until an admin reactivates them/).waitFor();
    expect(await confirm.innerText()).not.toMatch(/cannot sign in again/);
    await page.context().close();
  });
});
