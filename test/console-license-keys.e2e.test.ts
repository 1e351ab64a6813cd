import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN, chooseOption, confirmIdentity, type ConsoleE2e, reportServerOnFailure, SCREENSHOTS, signInAsAdmin, startConsoleE2e } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';
import { postJson } from './support/processes.js';

// The license page's "Reissue key" (confirmation with the overlap choice, the new key shown once with a copy button)
// and the deactivate dialog's promise (a deactivated device fails its next device-scoped validate) in Chromium
// against the real server. Screenshots at 1280 and 375 px go to test-output/screenshots/.

const chromiumNeed = needChromium();
let e2e: ConsoleE2e;
reportServerOnFailure(() => e2e);
let page: Page;
let licenseId: string;
let firstKey: string;

const api = async (route: string, body: Record<string, unknown>) => (await postJson(`${e2e.server.url}/api/v1/${route}`, body)).json;
const validate = (licenseKey: string, extra: Record<string, unknown> = {}) => api('validate', { licenseKey, ...extra });
async function activate(licenseKey: string, deviceId: string, deviceName: string) {
  const { nonce } = (await (await fetch(`${e2e.server.url}/api/v1/nonce`)).json()) as { nonce: string };
  return api('activate', { licenseKey, nonce, deviceId, deviceName });
}

beforeAll(async () => {
  if (chromiumNeed.missing) return; // describeWith reports the skip
  e2e = await startConsoleE2e('console_keys', chromiumNeed.path);
  const { createProduct } = await e2e.gql('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id } } }', { input: { name: 'Acme Studio' } });
  const { createLicense } = await e2e.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key license { id } } }', {
    input: { productId: createProduct.product.id, maxActivations: 3 },
  });
  licenseId = createLicense.license.id;
  firstKey = createLicense.key;
  expect(await activate(firstKey, 'laptop-fingerprint', 'Ada laptop')).toMatchObject({ isValid: true });
  page = await e2e.newPage(1280);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: e2e.server.url });
}, 600_000);

afterAll(async () => {
  await e2e?.stop();
});

/** The page's session re-authenticated (a reissue asks for it once, then not again for 10 minutes). */
let identityConfirmed = false;

/** Opens Reissue key, picks the overlap, confirms; returns the key the dialog shows once (copied with its button). */
async function reissueInConsole(overlap: RegExp): Promise<string> {
  await page.getByRole('button', { name: 'Reissue key' }).click();
  const confirm = page.getByRole('dialog', { name: 'Reissue the key of this license?' });
  await expect.poll(() => confirm.getByText('its activations keep their seats').count()).toBe(1);
  await confirm.getByRole('radio', { name: overlap }).check();
  await confirm.getByRole('button', { name: 'Reissue key' }).click();
  if (!identityConfirmed) {
    await confirmIdentity(page, ADMIN.password);
    identityConfirmed = true;
  }
  const shown = page.getByRole('dialog', { name: 'New license key' });
  const key = (await shown.getByTestId('secret-value').textContent())!.trim();
  expect(key).toMatch(/^ACME(-[A-Z0-9]{4}){4}$/);
  await shown.getByRole('button', { name: 'Copy license key' }).click();
  await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(key);
  return key;
}

describeWith(chromiumNeed)('license keys in the console (Chromium)', () => {
  it('reissues a key with a 24-hour overlap: both keys work, the new one is shown once with a copy button', async () => {
    await signInAsAdmin(page);
    await page.goto(`/licenses/${licenseId}`);
    await page.getByText('Ada laptop').waitFor();

    const secondKey = await reissueInConsole(/24 hours/);
    const shown = page.getByRole('dialog', { name: 'New license key' });
    await expect.poll(() => shown.getByText(/The old key keeps working until/).count()).toBe(1);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'license-reissue-key-1280.png') });
    await shown.getByRole('button', { name: 'Done' }).click();
    // The page now names the new key's hint; the device kept its seat.
    await page.getByRole('heading', { name: new RegExp(`ACME-…-${secondKey.slice(-4)}`) }).waitFor();
    await page.getByText('Ada laptop').waitFor();

    expect(await validate(secondKey)).toMatchObject({ isValid: true, remainingActivations: 2 });
    expect(await validate(firstKey)).toMatchObject({ isValid: true, remainingActivations: 2 });
    expect(await validate(secondKey, { deviceId: 'laptop-fingerprint', requireActivation: true })).toMatchObject({ isValid: true });

    // Reissued again, at once: the two earlier keys stop; only the newest works.
    const thirdKey = await reissueInConsole(/Stop the old key now/);
    await page.getByRole('dialog', { name: 'New license key' }).getByText('The old key no longer works.').waitFor();
    await page.getByRole('dialog', { name: 'New license key' }).getByRole('button', { name: 'Done' }).click();
    for (const old of [firstKey, secondKey]) expect(await validate(old)).toEqual({ isValid: false, message: 'License key not found.', errorCode: 'LicenseNotFound' });
    expect(await validate(thirdKey)).toMatchObject({ isValid: true });

    // The activity log names the reissue (hints only).
    await page.goto(`/activity?entityId=${licenseId}`);
    await expect.poll(() => page.getByText('Reissue license key', { exact: true }).count()).toBeGreaterThanOrEqual(2);
    expect(await page.content()).not.toContain(thirdKey);
    firstKey = thirdKey;
  });

  it('a product that accepts imported keys: the new-license form takes the key the customer already has, kept exactly', async () => {
    await page.goto('/products');
    await page.getByRole('row').filter({ hasText: 'Acme Studio' }).getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Acme Studio' });
    await edit.getByLabel('Accept imported keys').check();
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'hidden' });

    await page.goto('/licenses');
    await page.getByRole('button', { name: 'New license' }).click();
    const dialog = page.getByRole('dialog', { name: 'New license' });
    expect(await dialog.getByLabel('Existing key').count()).toBe(0); // no product chosen yet
    await chooseOption(page, dialog.getByLabel(/^Product/), 'Acme Studio');
    await dialog.getByLabel('Max activations').fill('2');
    const imported = 'legacy-Key_0042/xYz';
    await dialog.getByLabel('Existing key').fill(` ${imported} `);
    await dialog.getByRole('button', { name: 'Create license' }).click();
    const secret = page.getByTestId('secret-value');
    await secret.waitFor();
    expect((await secret.textContent())!.trim()).toBe(imported);
    expect(await validate(imported)).toMatchObject({ isValid: true });
    expect(await validate(imported.toUpperCase())).toMatchObject({ isValid: false, errorCode: 'LicenseNotFound' });
    await page.keyboard.press('Escape');
  });

  it('the deactivate dialog says what happens, and it happens: the device fails its next device-scoped validate', async () => {
    await page.goto(`/licenses/${licenseId}`);
    await page.getByRole('row').filter({ hasText: 'Ada laptop' }).getByRole('button', { name: 'Deactivate' }).click();
    const dialog = page.getByRole('dialog', { name: 'Deactivate Ada laptop?' });
    await dialog.getByText(/refused at its next device-scoped validation/).waitFor();
    await dialog.getByText(/a plain validation checks only the license/).waitFor();
    await dialog.getByRole('button', { name: 'Deactivate device' }).click();
    await expect.poll(() => validate(firstKey, { deviceId: 'laptop-fingerprint', requireActivation: true })).toMatchObject({ isValid: false, errorCode: 'DeviceNotActivated' });
    expect(await validate(firstKey)).toMatchObject({ isValid: true });
  });

  it('fits a 375 px phone, without a browser error', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    await page.goto(`/licenses/${licenseId}`);
    await page.getByRole('button', { name: 'Reissue key' }).click();
    const confirm = page.getByRole('dialog', { name: 'Reissue the key of this license?' });
    await confirm.getByRole('radio', { name: /7 days/ }).waitFor();
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(375);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'license-reissue-key-375.png') });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(e2e.errors).toEqual([]);
  });
});
