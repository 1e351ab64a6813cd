import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrationSnippets } from '../console/src/modules/licenses/integration/snippets.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { needCommands, itWith } from './support/optional.js';
import { startServerProcess, type ServerProcess } from './support/processes.js';

// The shell snippets are run by bash with curl and jq, as a vendor would paste them.
const shellTools = needCommands('bash', 'curl', 'jq');

/**
 * The console's "Integrate" snippets are run as a vendor would paste them — the SDK module, bash + curl + jq, and
 * the TypeScript module with jose — against a real HTTP server: they must work, not just look right.
 */
let t: TestApp;
let server: ServerProcess;
let origin: string;
let key: string;
const snippetsFor = (floatingSeats: number | null) => integrationSnippets(origin, { keyHint: 'ACME-…-WZ3P', productName: 'Acme Studio', nodeLocked: false, floatingSeats });

beforeAll(async () => {
  // Seeded in-process; served by a real server process on the same database and secret.
  t = await startTestApp({ clock: TestClock.startingNow() });
  ({ key } = await t.seedBasic({ maxActivations: 2, floatingSeats: 2, expiresAt: null }));
  server = await startServerProcess({ DATABASE_URL: t.databaseUrl, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, JOBS_WORKER: 'false', LOG_LEVEL: 'warn' });
  origin = server.url;
});
afterAll(async () => {
  await server?.stop();
  await t?.close();
});

// The snippets pretty-print each answer with jq; `jq -c` makes it one answer per line here.
const bash = (code: string, env: Record<string, string> = {}) =>
  execFileSync('bash', ['-euo', 'pipefail', '-c', `{\n${code}\n} | jq -c .`], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 })
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));

describe('integration snippets', () => {
  it('the SDK comes first: activate, then isLicensed (signed token, product, device; the token kept in the file store)', async () => {
    // The console shows the snippets on its own origin, the server's PUBLIC_URL (the `iss` of its tokens), which
    // the OpenAPI document names; here http://localhost:<port>.
    const publicUrl = ((await (await fetch(`${origin}/api/v1/openapi.json`)).json()) as { servers: { url: string }[] }).servers[0].url.replace(/\/api\/v1$/, '');
    const snippets = integrationSnippets(publicUrl, { keyHint: 'ACME-…-WZ3P', productName: 'Acme Studio', nodeLocked: false, floatingSeats: null });
    expect(snippets[0].id).toBe('sdk');
    const { code } = snippets[0];
    expect(code).toContain(`baseUrl: "${publicUrl}"`);
    expect(code).toContain('const PRODUCT = "Acme Studio"');
    // The package is not on a public registry: the snippet says how to pack and install it.
    expect(code).not.toContain('npm install @keyforge/client');
    expect(code).toContain('pnpm --filter @keyforge/client build && cd sdk && npm pack');
    expect(code).toContain('npm install /path/to/keyforge-client-*.tgz');
    // `@keyforge/client` as the vendor installs it: here, the workspace package's sources.
    const sdk = path.resolve('sdk/src');
    const runnable = code.replace("from '@keyforge/client/node'", `from '${sdk}/node.ts'`).replace("from '@keyforge/client'", `from '${sdk}/index.ts'`);
    expect(runnable).not.toContain('@keyforge/client\'');
    const dir = path.resolve('test-output', `snippet-sdk-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'license.ts');
    writeFileSync(file, runnable);
    // The snippet keeps its token under the home directory: a temporary one here.
    const home = process.env.HOME;
    process.env.HOME = mkdtempSync(path.join(tmpdir(), 'kf-snippet-home-'));
    try {
      const { key: sdkKey } = await t.seedLicense((await t.prisma.tenant.findFirstOrThrow()).id, (await t.prisma.product.findFirstOrThrow({ where: { name: 'Acme Studio' } })).id, { maxActivations: 1, offlineGraceDays: 3 });
      const client = (await import(file)) as { activate(key: string): Promise<{ isValid: boolean; deviceId: string }>; isLicensed(key: string, version: string): Promise<boolean> };
      const activated = await client.activate(sdkKey);
      expect(activated).toMatchObject({ isValid: true, remainingActivations: 0 });
      expect(activated.deviceId).toMatch(/^[0-9a-f]{64}$/);
      expect(await client.activate(sdkKey)).toMatchObject({ isValid: true, remainingActivations: 0 }); // same machine, same seat
      expect(await client.isLicensed(sdkKey, '1.0.0')).toBe(true);
      expect(await client.isLicensed('ACME-AAAA-AAAA-AAAA-AAAA', '1.0.0')).toBe(false);
      const stored = path.join(process.env.HOME, '.acme-studio', 'license.json');
      expect(existsSync(stored)).toBe(true);
      expect(readFileSync(stored, 'utf8')).not.toContain(sdkKey);
    } finally {
      rmSync(process.env.HOME, { recursive: true, force: true });
      process.env.HOME = home;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  itWith(shellTools)('curl: activates and validates with the real key', () => {
    const { code } = snippetsFor(null).find((snippet) => snippet.id === 'curl')!;
    expect(code).toContain(`${origin}/api/v1/nonce`);
    expect(code).toContain("export LICENSE_KEY='ACME-XXXX-XXXX-XXXX-WZ3P'");
    const [activated, validated] = bash(code.replace(/^export LICENSE_KEY=.*$/m, `export LICENSE_KEY='${key}'`));
    expect(activated).toMatchObject({ isValid: true, productName: 'Acme Studio', remainingActivations: 1 });
    expect(validated).toMatchObject({ isValid: true, productName: 'Acme Studio', remainingActivations: 1 });
    expect(code).toContain('"requireActivation\\": true');
    // The device-scoped validate (requireActivation) refuses the device once it is deactivated.
    execFileSync('curl', ['-s', `${origin}/api/v1/deactivate`, '-H', 'content-type: application/json', '-d', JSON.stringify({ licenseKey: key, deviceId: 'my-laptop' })]);
    const validateOnly = code.slice(code.indexOf('# Check it on every launch'));
    expect(bash(validateOnly, { LICENSE_KEY: key })).toEqual([expect.objectContaining({ isValid: false, errorCode: 'DeviceNotActivated' })]);
  });

  itWith(shellTools)('floating: checkout, heartbeat and checkin', () => {
    const floating = snippetsFor(2).find((snippet) => snippet.id === 'floating')!;
    expect(snippetsFor(null).some((snippet) => snippet.id === 'floating')).toBe(false);
    const [heartbeat, checkin] = bash(floating.code, { LICENSE_KEY: key });
    expect(heartbeat).toMatchObject({ isValid: true, leaseSeconds: 300 });
    expect(checkin).toMatchObject({ checkedIn: true, endReason: 'checkin' });
  });

  it('TypeScript: activate, then isLicensed verifies the offline token and the product', async () => {
    const { code } = snippetsFor(null).find((snippet) => snippet.id === 'typescript')!;
    expect(code).toContain('jwtVerify'); // the raw-HTTP variant, for those who do not take the SDK
    // Inside the repository, so `jose` resolves as it would in the vendor's project.
    const dir = path.resolve('test-output', `snippet-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'license.ts');
    writeFileSync(file, code);
    try {
      const client = (await import(file)) as { activate(key: string, device: string): Promise<{ isValid: boolean }>; isLicensed(key: string, device: string, version: string): Promise<boolean> };
      expect(await client.activate(key, 'snippet-device')).toMatchObject({ isValid: true });
      expect(await client.isLicensed(key, 'snippet-device', '1.0.0')).toBe(true);
      expect(await client.isLicensed('ACME-AAAA-AAAA-AAAA-AAAA', 'snippet-device', '1.0.0')).toBe(false);
      // Device-scoped (requireActivation): a device without an activation is refused, and so is one deactivated.
      expect(await client.isLicensed(key, 'never-activated', '1.0.0')).toBe(false);
      expect((await fetch(`${origin}/api/v1/deactivate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ licenseKey: key, deviceId: 'snippet-device' }) })).status).toBe(200);
      expect(await client.isLicensed(key, 'snippet-device', '1.0.0')).toBe(false);
      // A key of another product is refused by the product check, even though it is valid.
      const other = await t.seedProduct((await t.prisma.tenant.findFirstOrThrow()).id, 'Other App');
      const { key: otherKey } = await t.seedLicense(other.tenantId, other.id, { maxActivations: 1 });
      await client.activate(otherKey, 'snippet-device');
      expect(await client.isLicensed(otherKey, 'snippet-device', '1.0.0')).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
