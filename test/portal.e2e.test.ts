import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KeyforgeClient, MemoryStore } from '../sdk/src/index.js';
import { seriousViolations } from './support/axe.js';
import { type ConsoleE2e, outboxLink, recordCspViolations, reportServerOnFailure, SCREENSHOTS, signInAsAdmin, startConsoleE2e } from './support/console-e2e.js';
import { describeWith, needChromium } from './support/optional.js';
import { postJson } from './support/processes.js';

/**
 * The customer portal in Chromium at 1280 and 375 px, on the real server and PostgreSQL: the vendor turns it on
 * (handle, accent colour, a product's device-free limit), a customer signs in from the link in the development
 * outbox, sees their license and devices, lists the releases on the stable and the beta channel and downloads one, downloads a device's license file, activates a machine without internet (the SDK's
 * request pasted in, the license file taken back and validated offline), frees a device, and signs out. axe-core checks every portal page
 * and every menu and dialog opened on it (0 serious or critical violations). An unknown handle shows a page that says
 * there is no portal there. The console's and the portal's Content-Security-Policy: present, an injected inline script
 * refused, and every page of both loaded with no violation. Screenshots go to test-output/screenshots/portal-*.png.
 */
const chromiumNeed = needChromium();
const CUSTOMER = 'pat@customer.test';

let e2e: ConsoleE2e;
reportServerOnFailure(() => e2e);
let licenseKey: string;
let productId: string;

/** The application on a machine that never reaches the server: the SDK with the server's published keys. */
async function airGappedMachine() {
  // The issuer is the server's PUBLIC_URL: read it from a token it signed.
  const { offlineCacheToken } = (await postJson(`${e2e.server.url}/api/v1/validate`, { licenseKey })).json;
  const issuer = JSON.parse(Buffer.from(offlineCacheToken.split('.')[1], 'base64url').toString()).iss as string;
  const jwks = await (await fetch(`${e2e.server.url}/.well-known/jwks.json`)).json();
  return new KeyforgeClient({ baseUrl: e2e.server.url, issuer, product: 'Acme Studio', jwks, store: new MemoryStore() });
}

async function activate(licenseKey: string, deviceId: string, deviceName: string) {
  const { nonce } = (await (await fetch(`${e2e.server.url}/api/v1/nonce`)).json()) as { nonce: string };
  const response = await postJson(`${e2e.server.url}/api/v1/activate`, { nonce, licenseKey, deviceId, deviceName, version: '4.2.0' });
  expect(response.status).toBe(200);
}

beforeAll(async () => {
  if (chromiumNeed.missing) return; // describeWith reports the skip
  e2e = await startConsoleE2e('portal', chromiumNeed.path);
  await e2e.gql('mutation($input: UpdateCompanySettingsInput!) { updateCompanySettings(input: $input) { company { portalHandle } } }', {
    input: { portalHandle: 'acme', portalAccentColor: '#0b7285', supportEmail: 'help@acme.test', renewalUrl: 'https://acme.test/renew' },
  });
  const { createProduct } = await e2e.gql('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id } } }', {
    input: { name: 'Acme Studio', deviceFreeLimit: 3, deviceFreeWindowDays: 30, renewalUrl: 'https://acme.test/renew/studio' },
  });
  const { createLicense } = await e2e.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key } }', {
    input: { productId: createProduct.product.id, customerEmail: CUSTOMER, maxActivations: 5, features: ['export', 'cloud-sync'], expiresAt: '2030-01-31T00:00:00.000Z', gracePeriodDays: 14 },
  });
  licenseKey = createLicense.key;
  productId = createProduct.product.id;
  for (const [id, name] of [
    ['dev-studio', 'Studio workstation'],
    ['dev-laptop', 'Pat’s old laptop'],
    ['dev-render', 'Render node 2'],
    ['dev-home', 'Home office PC'],
  ]) {
    await activate(createLicense.key, id, name);
  }
}, 600_000);

afterAll(async () => {
  const errors = e2e?.errors ?? [];
  await e2e?.stop();
  expect(errors, 'browser errors').toEqual([]);
});

describeWith(chromiumNeed)('customer portal in Chromium', () => {
  it('a customer signs in from the emailed link, sees their license and devices, frees a device and signs out (1280 and 375 px)', async () => {
    const freed = ['Pat’s old laptop', 'Render node 2'];
    for (const [index, width] of [1280, 375].entries()) {
      const page = await e2e.newPage(width);
      await page.goto('/portal/acme');
      await page.getByRole('heading', { name: 'Your Acme Corp licenses' }).waitFor();
      expect(await seriousViolations(page), `sign-in page at ${width}px`).toEqual([]);
      await page.screenshot({ path: path.join(SCREENSHOTS, `portal-sign-in-${width}.png`), fullPage: true });

      await page.getByLabel('Email address').fill(CUSTOMER);
      await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
      await page.getByRole('heading', { name: 'Check your inbox' }).waitFor();
      expect(await seriousViolations(page), `check-your-inbox at ${width}px`).toEqual([]);

      // The link from the development outbox, as the customer receives it.
      const link = await outboxLink(e2e.env, 'portal-sign-in', CUSTOMER);
      await page.goto(link);
      await page.getByRole('heading', { name: 'Your licenses' }).waitFor();
      // The token left the address bar at once.
      expect(new URL(page.url()).hash).toBe('');
      const license = page.getByRole('region', { name: 'Acme Studio' });
      await license.getByText('4 of 5 used').or(license.getByText('3 of 5 used')).waitFor();
      await license.getByText('Keeps working until Feb 14, 2030').waitFor();
      expect(await seriousViolations(page), `licenses page at ${width}px`).toEqual([]);
      await page.screenshot({ path: path.join(SCREENSHOTS, `portal-licenses-${width}.png`), fullPage: true });

      // A license file for a device: downloaded as <product>-<device>.lic, armored and signed.
      if (index === 0) {
        const [download] = await Promise.all([page.waitForEvent('download'), license.getByRole('button', { name: 'License file for Studio workstation' }).click()]);
        expect(download.suggestedFilename()).toBe('acme-studio-studio-workstation.lic');
        expect(readFileSync((await download.path())!, 'utf8')).toMatch(/^-----BEGIN KEYFORGE LICENSE FILE-----\n[\s\S]+-----END KEYFORGE LICENSE FILE-----\n$/);
        // A machine without internet, the whole loop: the SDK writes the request on the machine, the customer pastes
        // it here and takes the license file back, the SDK applies it and validates offline from then on.
        await license.getByRole('button', { name: 'Machine without internet' }).click();
        const offline = page.getByRole('dialog', { name: 'Machine without internet' });
        await offline.getByLabel(/^Activation request/).waitFor();
        expect(await seriousViolations(page), 'offline machine dialog').toEqual([]);
        const machine = await airGappedMachine();
        const { request, deviceId } = await machine.createActivationRequest({ licenseKey, deviceId: 'lab-pc-air', deviceName: 'Lab PC (air-gapped)' });
        await offline.getByLabel(/^Activation request/).fill(request);
        const [response] = await Promise.all([page.waitForEvent('download'), offline.getByRole('button', { name: 'Activate and download' }).click()]);
        await offline.getByText('The machine is activated.').waitFor();
        await machine.applyActivationResponse(readFileSync((await response.path())!, 'utf8'));
        expect((await machine.validateOffline({ licenseKey, deviceId, requireActivation: true })).source).toBe('offline');
        await offline.getByRole('button', { name: 'Close' }).click();
        await offline.waitFor({ state: 'hidden' });
      }

      // Free one device: it leaves the list and one fewer free is left.
      await license.getByRole('button', { name: `Free ${freed[index]}` }).click();
      const dialog = page.getByRole('dialog', { name: 'Free this device?' });
      await dialog.waitFor();
      expect(await seriousViolations(page), `free dialog at ${width}px`).toEqual([]);
      await dialog.getByRole('button', { name: 'Free device' }).click();
      await dialog.waitFor({ state: 'hidden' });
      await license.getByText(`You can free ${index === 0 ? '2 more devices' : '1 more device'} in the next 30 days`).waitFor();
      expect(await license.getByText(freed[index]).count()).toBe(0);

      // Sign out: back to the sign-in page, and the session is gone. axe checked the account menu before the click.
      await page.getByRole('button', { name: `Account: ${CUSTOMER}` }).click();
      await page.getByRole('menuitem', { name: 'Sign out', exact: true }).waitFor();
      await page.screenshot({ path: path.join(SCREENSHOTS, `portal-account-menu-${width}.png`) });
      await page.getByRole('menuitem', { name: 'Sign out', exact: true }).click();
      expect(e2e.overlays.checked, `account menu at ${width}px`).toContain(`menu “Account: ${CUSTOMER}”`);
      expect(e2e.overlays.violations, `menus and dialogs at ${width}px`).toEqual([]);
      await page.getByRole('heading', { name: 'Your Acme Corp licenses' }).waitFor();
      await page.reload();
      await page.getByRole('heading', { name: 'Your Acme Corp licenses' }).waitFor();
      await page.context().close();
    }
    // The vendor's activity log names the customer for each free.
    const { activityLog } = await e2e.gql('{ activityLog(first: 20, filter: { action: DEACTIVATE_ACTIVATION }) { nodes { user } } }', {});
    expect(activityLog.nodes.map((entry: { user: string }) => entry.user)).toEqual([`customer ${CUSTOMER}`, `customer ${CUSTOMER}`]);
  });

  it('lists the releases the license may download, on the channel chosen, and downloads a file: the bytes are the artifact', async () => {
    // Three published releases: 1.1.0 for every license, 2.0.0 requiring a feature this license lacks, 1.2.0-beta.1 on the beta channel.
    const installer = Buffer.alloc(70_001);
    for (let i = 0; i < installer.length; i++) installer[i] = (i * 31 + 7) % 251;
    const publish = async (version: string, requiredFeatures: string[], bytes: Buffer, channel = 'STABLE') => {
      const { createRelease } = await e2e.gql('mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { id } } }', {
        input: { productId, version, notes: `What is new in ${version}.`, requiredFeatures, channel },
      });
      const query = new URLSearchParams({ filename: `Acme Studio Setup ${version}.exe`, platform: 'win32', arch: 'x64' });
      const upload = await fetch(`${e2e.server.url}/api/releases/${createRelease.release.id}/artifacts?${query}`, {
        method: 'PUT',
        body: new Uint8Array(bytes),
        headers: { authorization: `Bearer ${e2e.token}`, 'content-type': 'application/octet-stream' },
      });
      expect(upload.status).toBe(201);
      await e2e.gql('mutation($id: ID!) { publishRelease(input: { id: $id }) { release { id } } }', { id: createRelease.release.id });
    };
    await publish('1.1.0', [], installer);
    await publish('2.0.0', ['enterprise'], Buffer.from('not for this license'));
    await publish('1.2.0-beta.1', [], Buffer.from('a beta build'), 'BETA');

    const page = await e2e.newPage(1280);
    await page.goto('/portal/acme');
    await page.getByLabel('Email address').fill(CUSTOMER);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.getByRole('heading', { name: 'Check your inbox' }).waitFor();
    await page.goto(await outboxLink(e2e.env, 'portal-sign-in', CUSTOMER));
    const downloads = page.getByRole('region', { name: 'Downloads' });
    await downloads.getByRole('heading', { name: 'Version 1.1.0' }).waitFor();
    await downloads.getByText('What is new in 1.1.0.').waitFor();
    expect(await downloads.getByRole('heading', { name: 'Version 2.0.0' }).count()).toBe(0);
    expect(await downloads.getByRole('heading', { name: 'Version 1.2.0-beta.1' }).count()).toBe(0);
    expect(await seriousViolations(page), 'downloads').toEqual([]);
    await downloads.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SCREENSHOTS, 'portal-downloads-1280.png'), fullPage: true });

    // The beta channel: its release above the stable one, marked Beta; the address keeps the choice over a reload.
    await downloads.getByLabel('Release channel').selectOption({ label: 'Beta' });
    await downloads.getByRole('heading', { name: 'Version 1.2.0-beta.1' }).waitFor();
    expect(await downloads.getByRole('heading', { level: 3 }).allTextContents()).toEqual(['Version 1.2.0-beta.1', 'Version 1.1.0']);
    await downloads.getByRole('article').getByText('Beta', { exact: true }).waitFor();
    expect(new URL(page.url()).searchParams.get('channel')).toBe('beta');
    expect(await seriousViolations(page), 'downloads, beta channel').toEqual([]);
    await page.reload();
    await downloads.getByRole('heading', { name: 'Version 1.2.0-beta.1' }).waitFor();
    expect(await downloads.getByLabel('Release channel').inputValue()).toBe('BETA');
    await downloads.getByLabel('Release channel').selectOption({ label: 'Stable' });
    await downloads.getByRole('heading', { name: 'Version 1.2.0-beta.1' }).waitFor({ state: 'detached' });
    expect(new URL(page.url()).search).toBe('');

    const button = downloads.getByRole('button', { name: 'Download win32 x64 (70 KB), Acme Studio Setup 1.1.0.exe', exact: true });
    const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
    expect(download.suggestedFilename()).toBe('Acme Studio Setup 1.1.0.exe');
    expect(readFileSync((await download.path())!).equals(installer)).toBe(true);
    await page.context().close();
  });

  it('a used link shows why, on the sign-in page', async () => {
    const page = await e2e.newPage(1280);
    await page.goto('/portal/acme/sign-in#token=kfp_not-a-real-token');
    await page.getByText('That link did not work').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.context().close();
  });

  it('an unknown handle and a portal switched off say that there is no portal at this address (404, 1280 and 375 px)', async () => {
    const setHandle = (portalHandle: string) =>
      e2e.gql('mutation($input: UpdateCompanySettingsInput!) { updateCompanySettings(input: $input) { company { portalHandle } } }', { input: { portalHandle } });
    for (const width of [1280, 375]) {
      const page = await e2e.newPage(width);
      const response = await page.goto('/portal/no-such-vendor');
      expect(response?.status()).toBe(404);
      await page.getByRole('heading', { name: 'There is no portal at this address' }).waitFor();
      await page.getByText('Check the link you followed').waitFor();
      expect(await page.getByText(/try again|cannot be reached/i).count()).toBe(0);
      expect(await page.title()).toBe('No portal at this address');
      expect(await seriousViolations(page), `no-portal page at ${width}px`).toEqual([]);
      await page.screenshot({ path: path.join(SCREENSHOTS, `portal-no-portal-${width}.png`), fullPage: true });
      await page.context().close();
    }
    // The vendor switches its portal off: its address answers the same page, and again once it is back on.
    await setHandle('');
    try {
      const page = await e2e.newPage(1280);
      expect((await page.goto('/portal/acme'))?.status()).toBe(404);
      await page.getByRole('heading', { name: 'There is no portal at this address' }).waitFor();
      await page.context().close();
    } finally {
      await setHandle('acme');
    }
  });
});

describeWith(chromiumNeed)('Content-Security-Policy of the console and the portal', () => {
  it('is sent with every page and asset, and refuses an injected inline script and images from elsewhere', async () => {
    const assetPath = /src="(\/assets\/[^"]+\.js)"/.exec(await (await fetch(`${e2e.server.url}/login`)).text())![1];
    for (const address of ['/', '/login', '/licenses/some-id', assetPath, '/portal/acme', '/portal/acme/sign-in', '/portal/no-such-vendor']) {
      const policy = (await fetch(`${e2e.server.url}${address}`)).headers.get('content-security-policy') ?? '';
      const directives = Object.fromEntries(policy.split('; ').map((directive) => [directive.split(' ')[0], directive.split(' ').slice(1).join(' ')]));
      expect(directives, address).toMatchObject({
        'default-src': "'none'",
        'script-src': "'self'",
        'img-src': "'self' data:",
        'connect-src': "'self'",
        'frame-ancestors': "'none'",
        'form-action': "'self'",
        'base-uri': "'none'",
        'object-src': "'none'",
      });
    }
    // The API is not a page: its answers carry no page policy.
    expect((await fetch(`${e2e.server.url}/healthz`)).headers.get('content-security-policy')).toBeNull();

    for (const address of ['/login', '/portal/acme']) {
      const context = await e2e.browser.newContext({ baseURL: e2e.server.url });
      const page = await context.newPage();
      const violations: string[] = [];
      await recordCspViolations(page, violations);
      await page.goto(address);
      await page.getByRole('heading').first().waitFor();
      expect(violations, `${address} as served`).toEqual([]);
      // What an HTML injection would add: an inline script and an image that carries data elsewhere.
      await page.evaluate(() => {
        const script = document.createElement('script');
        script.textContent = 'window.injected = true';
        document.body.append(script);
        const image = document.createElement('img');
        image.src = 'https://elsewhere.test/pixel.png?data=secret';
        document.body.append(image);
      });
      await expect.poll(() => violations.filter((violation) => violation.startsWith('CSP: securitypolicyviolation')).length).toBe(2);
      expect(await page.evaluate(() => 'injected' in window)).toBe(false);
      expect(violations.join('\n')).toMatch(/script-src-elem blocked inline/);
      expect(violations.join('\n')).toMatch(/img-src blocked https:\/\/elsewhere\.test\/pixel\.png/);
      await context.close();
    }
  });

  it('admits the vendor’s logo from its own origin on the portal, and nothing else', async () => {
    await e2e.gql('mutation($input: UpdateCompanySettingsInput!) { updateCompanySettings(input: $input) { company { portalLogoUrl } } }', {
      input: { portalLogoUrl: 'https://cdn.acme.test/brand/logo.svg' },
    });
    try {
      const policy = (await fetch(`${e2e.server.url}/portal/acme`)).headers.get('content-security-policy') ?? '';
      expect(policy).toContain("img-src 'self' data: https://cdn.acme.test");
      // The console's policy does not follow a company's settings.
      expect((await fetch(`${e2e.server.url}/login`)).headers.get('content-security-policy')).toMatch(/img-src 'self' data:$/);

      const page = await e2e.newPage(1280);
      // The logo's host, served here (the machine reaches no other).
      await page.route('https://cdn.acme.test/brand/logo.svg', (route) =>
        route.fulfill({ contentType: 'image/svg+xml', body: '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="32"><rect width="64" height="32" fill="#0b7285"/></svg>' }),
      );
      await page.goto('/portal/acme');
      await page.getByRole('heading', { name: 'Your Acme Corp licenses' }).waitFor();
      await expect.poll(() => page.locator('header img').evaluate((image: HTMLImageElement) => image.complete && image.naturalWidth)).toBe(64);
      await page.context().close();
    } finally {
      await e2e.gql('mutation($input: UpdateCompanySettingsInput!) { updateCompanySettings(input: $input) { company { portalLogoUrl } } }', { input: { portalLogoUrl: '' } });
    }
  });

  it('every page of the console loads with no violation (the portal’s pages are loaded above, under the same watch)', async () => {
    const page = await e2e.newPage(1280);
    const visited: string[] = [];
    const load = async (address: string) => {
      await page.goto(address);
      await page.getByRole('heading').or(page.getByText('Page not found')).first().waitFor();
      await page.waitForLoadState('networkidle');
      visited.push(new URL(page.url()).pathname);
    };
    for (const address of ['/login', '/forgot-password', '/reset-password', '/accept-invite', '/setup']) await load(address);
    await signInAsAdmin(page);
    // Every page the navigation links to, as the console lists them, and the pages reached from them.
    const links = await page.getByRole('navigation').getByRole('link').evaluateAll((anchors) => anchors.map((anchor) => new URL((anchor as HTMLAnchorElement).href).pathname));
    const { licenses } = await e2e.gql('{ licenses(first: 1) { nodes { id } } }', {});
    for (const address of [...new Set(links), `/licenses/${licenses.nodes[0].id}`, '/settings/profile', '/no-such-page']) await load(address);
    expect(visited).toEqual(expect.arrayContaining(['/', '/licenses', '/products', '/activity', '/emails', '/settings/company', '/settings/payments']));
    // An email as sent, in its sandboxed frame.
    await load('/emails');
    await page.getByRole('button', { name: 'Preview' }).first().click();
    await page.frameLocator('iframe[title="Email HTML"]').locator('body').waitFor();
    expect(e2e.errors.filter((error) => error.startsWith('CSP'))).toEqual([]);
    await page.context().close();
  });
});
