import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KeyforgeClient, MemoryStore } from '../sdk/src/index.js';
import { type ConsoleE2e, reportServerOnFailure, SCREENSHOTS, signInAsAdmin, startConsoleE2e } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';
import { postJson } from './support/processes.js';

// The license page's "Offline use" in Chromium against the real server: an air-gapped device's activation request
// pasted in, the response handed back to the SDK (which then validates offline), a license file downloaded and
// verified, and the device freed from its deactivation proof. Screenshots at 1280 and 375 px go to
// test-output/screenshots/offline-*.png.

const chromiumNeed = needChromium();
let e2e: ConsoleE2e;
reportServerOnFailure(() => e2e);
let page: Page;
let licenseId: string;
let key: string;
let device: KeyforgeClient;

const seats = async () => (await e2e.gql('query($id: ID!) { license(id: $id) { currentActivations } }', { id: licenseId })).license.currentActivations as number;

beforeAll(async () => {
  if (chromiumNeed.missing) return; // describeWith reports the skip
  e2e = await startConsoleE2e('console_offline', chromiumNeed.path);
  const { createProduct } = await e2e.gql('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id } } }', { input: { name: 'Acme Studio' } });
  const { createLicense } = await e2e.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key license { id } } }', {
    input: { productId: createProduct.product.id, maxActivations: 3 },
  });
  licenseId = createLicense.license.id;
  key = createLicense.key;
  // The issuer is the server's PUBLIC_URL: read it from a token it signed.
  const { offlineCacheToken } = (await postJson(`${e2e.server.url}/api/v1/validate`, { licenseKey: key })).json;
  const issuer = JSON.parse(Buffer.from(offlineCacheToken.split('.')[1], 'base64url').toString()).iss as string;
  const jwks = await (await fetch(`${e2e.server.url}/.well-known/jwks.json`)).json();
  device = new KeyforgeClient({ baseUrl: e2e.server.url, issuer, product: 'Acme Studio', jwks, store: new MemoryStore() });
  page = await e2e.newPage(1280, { acceptDownloads: true });
}, 600_000);

afterAll(async () => {
  await e2e?.stop();
});

describeWith(chromiumNeed)('offline use in the console (Chromium)', () => {
  it('activates an air-gapped device from its pasted request; the SDK applies the response and validates offline', async () => {
    // A device activated online first: listed without the Offline mark (it has no device key on record).
    const nonce = await (await fetch(`${e2e.server.url}/api/v1/nonce`)).json();
    expect((await postJson(`${e2e.server.url}/api/v1/activate`, { licenseKey: key, deviceId: 'desk-pc-1', deviceName: 'Desk PC 1', nonce: nonce.nonce })).json.isValid).toBe(true);
    await signInAsAdmin(page);
    await page.goto(`/licenses/${licenseId}`);
    await page.getByRole('heading', { name: 'Offline use' }).waitFor();
    const { request, deviceId } = await device.createActivationRequest({ licenseKey: key, deviceId: 'lab-pc-7', deviceName: 'Lab PC 7' });

    await page.getByRole('button', { name: 'Offline activation' }).click();
    const dialog = page.getByRole('dialog', { name: 'Offline activation' });
    await dialog.getByLabel('Or paste the request').fill(request);
    await dialog.getByRole('button', { name: 'Activate' }).click();
    await dialog.getByText('Device activated').waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'offline-activation-1280.png') });
    const response = await dialog.getByLabel('Activation response').inputValue();
    expect(response).toMatch(/^-----BEGIN KEYFORGE LICENSE FILE-----/);
    const download = page.waitForEvent('download');
    await dialog.getByRole('button', { name: 'Download response' }).click();
    expect(await readFile((await (await download).path())!, 'utf8')).toBe(response);
    await dialog.getByRole('button', { name: 'Done' }).click();
    // The activation list shows the device, marked as activated offline.
    const row = page.getByTestId('activation-row').filter({ hasText: 'Lab PC 7' });
    await row.getByText('Offline').waitFor();
    const onlineRow = page.getByTestId('activation-row').filter({ hasText: 'Desk PC 1' });
    await onlineRow.waitFor();
    expect(await onlineRow.getByText('Offline', { exact: true }).count()).toBe(0);
    expect(await seats()).toBe(2);

    await device.applyActivationResponse(response);
    const offline = await device.validateOffline({ licenseKey: key, deviceId, requireActivation: true });
    expect(offline.entitlement).toMatchObject({ licenseId, device: 'lab-pc-7', deviceActivated: true });
  });

  it('downloads a license file that the SDK verifies offline', async () => {
    await page.getByRole('button', { name: 'Download license file' }).click();
    const dialog = page.getByRole('dialog', { name: 'Download a license file' });
    await dialog.getByLabel('Device id').fill('lab-pc-7');
    await dialog.getByLabel('Valid for (days)').fill('5');
    const download = page.waitForEvent('download');
    await dialog.getByRole('button', { name: 'Download' }).click();
    const saved = await download;
    expect(saved.suggestedFilename()).toMatch(/^ACME-[A-Z0-9]{4}-device\.lic$/);
    const file = await readFile((await saved.path())!, 'utf8');
    const entitlement = await device.verifyLicenseFile(file, { deviceId: 'lab-pc-7', requireActivation: true });
    expect(entitlement.expiresAt.getTime() - entitlement.issuedAt.getTime()).toBe(5 * 86_400_000);
  });

  it('frees the device from its pasted deactivation proof, once', async () => {
    const { proof } = await device.deactivateOffline({ licenseKey: key });
    await page.getByRole('button', { name: 'Offline deactivation' }).click();
    const dialog = page.getByRole('dialog', { name: 'Offline deactivation' });
    await dialog.getByLabel('Or paste the proof').fill(proof);
    await dialog.getByRole('button', { name: 'Check and free' }).click();
    await dialog.getByRole('button', { name: 'Free the device' }).click();
    await page.getByText(/Device lab-pc-7 freed/).waitFor();
    await expect.poll(seats).toBe(1); // the device activated online keeps its seat
    // The same proof again: refused, said in the dialog's toast.
    await page.getByRole('button', { name: 'Offline deactivation' }).click();
    await dialog.getByLabel('Or paste the proof').fill(proof);
    await dialog.getByRole('button', { name: 'Check and free' }).click();
    await dialog.getByRole('button', { name: 'Free the device' }).click();
    await page.getByText(/freed already/).waitFor();
  });

  it('fits a 375 px phone, without a browser error', async () => {
    await page.keyboard.press('Escape');
    await page.setViewportSize({ width: 375, height: 800 });
    await page.goto(`/licenses/${licenseId}`);
    await page.getByRole('heading', { name: 'Offline use' }).scrollIntoViewIfNeeded();
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(375);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'offline-use-375.png') });
    expect(e2e.errors).toEqual([]);
  });
});
