import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { startServerProcess, type ServerProcess } from './support/processes.js';

/**
 * The SDK's browser build: bundled from sdk/src/index.ts with esbuild for the browser platform (a `node:` import
 * would fail the build), held to the size budget the README states, then loaded in Debian Chromium and run
 * against the real server — same-origin with the JWKS fetched, and cross-origin (CORS) with pinned and fetched keys.
 */
const SDK = path.resolve(import.meta.dirname, '../sdk');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** docs/integrate/sdk.md: the minified browser bundle, gzipped, stays within this. */
const GZIP_BUDGET_BYTES = 20 * 1024;
const ISSUER = 'https://licenses.acme.test';

/** The part of esbuild's API used here (esbuild is a devDependency of sdk/, resolved from there). */
interface Esbuild {
  build(options: Record<string, unknown>): Promise<{ outputFiles: { text: string }[]; metafile: { inputs: Record<string, unknown> } }>;
}
const esbuild = createRequire(path.join(SDK, 'package.json'))('esbuild') as Esbuild;

let t: TestApp;
let server: ServerProcess;
let browser: Browser;
let bundle: string;
let key: string;
/** A static server of the application's own (another origin than the API): the page and the bundle. */
let app: Server;
let appOrigin: string;

const PAGE = `<!doctype html><title>SDK test</title><script type="module">import * as sdk from '/__sdk/keyforge-client.js'; window.KeyforgeSDK = sdk;</script>`;

beforeAll(async () => {
  t = await startTestApp({ clock: TestClock.startingNow() });
  ({ key } = await t.seedBasic({ maxActivations: 2, offlineGraceDays: 7, floatingSeats: 1, features: ['export'] }));
  server = await startServerProcess({ PUBLIC_URL: ISSUER, DATABASE_URL: t.databaseUrl, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, JOBS_WORKER: 'false', LOG_LEVEL: 'warn' });
  app = createServer((request, response) => {
    const js = request.url!.endsWith('.js');
    response.writeHead(200, { 'content-type': js ? 'text/javascript' : 'text/html' });
    response.end(js ? bundle : PAGE);
  });
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  appOrigin = `http://127.0.0.1:${(app.address() as { port: number }).port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  app?.closeAllConnections();
  app?.close();
  await server?.stop();
  await t?.close();
});

/**
 * A page that loads the bundle as an application would (an ES module import of /__sdk/keyforge-client.js).
 * `same-origin`: the page is on the API's origin (served by intercepting /__sdk/*: nothing is added to the
 * server); `cross-origin`: on the test's own static server.
 */
async function page(where: 'same-origin' | 'cross-origin'): Promise<{ page: Page; errors: string[] }> {
  const page = await (await browser.newContext()).newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  const pageOrigin = where === 'same-origin' ? server.url : appOrigin;
  if (where === 'same-origin') {
    await page.route(`${pageOrigin}/__sdk/**`, (route) =>
      route.fulfill({ status: 200, contentType: route.request().url().endsWith('.js') ? 'text/javascript' : 'text/html', body: route.request().url().endsWith('.js') ? bundle : PAGE }),
    );
  }
  await page.goto(`${pageOrigin}/__sdk/index.html`);
  await page.waitForFunction(() => 'KeyforgeSDK' in window);
  return { page, errors };
}

describe('the browser build', () => {
  it(`bundles without Node modules and stays within ${GZIP_BUDGET_BYTES / 1024} KiB gzipped`, async () => {
    const result = await esbuild.build({
      entryPoints: [path.join(SDK, 'src/index.ts')],
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    bundle = result.outputFiles[0].text;
    const gzipped = gzipSync(bundle, { level: 9 }).length;
    console.log(`browser bundle: ${bundle.length} bytes minified, ${gzipped} bytes gzipped (budget ${GZIP_BUDGET_BYTES})`);
    expect(gzipped).toBeLessThanOrEqual(GZIP_BUDGET_BYTES);
    expect(Object.keys(result.metafile.inputs).filter((file) => /sdk\/src\/node\.ts$/.test(file))).toEqual([]);
    expect(bundle).not.toMatch(/["']node:/);
    // The Node entry cannot be bundled for a browser at all: the separation is enforced, not a convention.
    await expect(esbuild.build({ entryPoints: [path.join(SDK, 'src/node.ts')], bundle: true, platform: 'browser', write: false, logLevel: 'silent' })).rejects.toThrow(/node:/);
  });

  it('validates in Chromium against the real server, keeps the token in localStorage and refuses a tampered one', async () => {
    expect(bundle).toBeTruthy();
    const { page: tab, errors } = await page('same-origin');
    const outcome = await tab.evaluate(
      async ({ key, issuer }) => {
        const { KeyforgeClient, LocalStorageStore } = (window as any).KeyforgeSDK;
        const sdk = new KeyforgeClient({ baseUrl: location.origin, issuer, product: 'Acme Studio', store: new LocalStorageStore() });
        const activation = await sdk.activate({ licenseKey: key, deviceName: 'Chromium' });
        const online = await sdk.validate({ licenseKey: key });
        const offline = await sdk.validateOffline({ licenseKey: key });
        const stored = JSON.stringify({ ...localStorage });

        const recordName = Object.keys(localStorage).find((name) => name.startsWith('keyforge:license:'))!;
        const record = JSON.parse(localStorage.getItem(recordName)!);
        const [header, payload, signature] = record.token.split('.');
        const claims = JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/')));
        const edited = btoa(JSON.stringify({ ...claims, features: ['export', 'everything'] })).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
        localStorage.setItem(recordName, JSON.stringify({ ...record, token: [header, edited, signature].join('.') }));
        const tampered = await sdk.validateOffline({ licenseKey: key }).then(() => 'accepted', (error: { name: string; code: string }) => `${error.name}:${error.code}`);

        const seat = await sdk.checkout({ licenseKey: key });
        const checkin = await seat.checkin();
        const metered = await sdk.meter({ licenseKey: key, event: 'api.calls', quantity: 2 });
        const unknown = await sdk.validate({ licenseKey: 'ACME-AAAA-AAAA-AAAA-AAAA' }).then(() => 'accepted', (error: { name: string; code: string }) => `${error.name}:${error.code}`);
        return {
          activated: activation.isValid,
          online: { source: online.source, product: online.entitlement.product, features: online.entitlement.features },
          offline: offline.source,
          storedRecord: Boolean(recordName),
          storedHasKey: stored.includes(key),
          tampered,
          checkin: checkin.endReason,
          total: metered.total,
          unknown,
        };
      },
      { key, issuer: ISSUER },
    );
    expect(outcome).toEqual({
      activated: true,
      online: { source: 'online', product: 'Acme Studio', features: ['export'] },
      offline: 'offline',
      storedRecord: true,
      storedHasKey: false,
      tampered: 'VerificationError:TokenInvalid',
      checkin: 'checkin',
      total: 2,
      unknown: 'LicenseRejectedError:LicenseNotFound',
    });
    expect(errors).toEqual([]);
  });

  it('works from another origin (CORS), with keys pinned at build time or fetched', async () => {
    const jwks = await (await fetch(`${server.url}/.well-known/jwks.json`)).json();
    const { page: tab, errors } = await page('cross-origin');
    const outcome = await tab.evaluate(
      async ({ key, issuer, api, jwks }) => {
        const { KeyforgeClient } = (window as any).KeyforgeSDK;
        const sdk = new KeyforgeClient({ baseUrl: api, issuer, product: 'Acme Studio', jwks });
        const result = await sdk.validate({ licenseKey: key, deviceId: 'browser-device' });
        // Without pinned keys the client fetches the JWKS across origins, and reads the replay header.
        const fetching = new KeyforgeClient({ baseUrl: api, issuer, product: 'Acme Studio' });
        const fetched = await fetching.validate({ licenseKey: key, deviceId: 'browser-device' });
        const first = await fetching.meter({ licenseKey: key, event: 'api.calls', quantity: 1, idempotencyKey: 'cross-origin-1' });
        const repeat = await fetching.meter({ licenseKey: key, event: 'api.calls', quantity: 1, idempotencyKey: 'cross-origin-1' });
        return { origin: location.origin, source: result.source, device: result.entitlement.device, fetched: fetched.source, replayed: [first.replayed, repeat.replayed] };
      },
      { key, issuer: ISSUER, api: server.url, jwks },
    );
    expect(outcome.origin).not.toBe(server.url);
    expect(outcome).toMatchObject({ source: 'online', device: 'browser-device', fetched: 'online', replayed: [false, true] });
    expect(errors).toEqual([]);
  });
});
