import { execFile, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { machineFingerprint } from '../sdk/src/node.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { itWith, type Need } from './support/optional.js';
import { freePort, startServerProcess, type ServerProcess } from './support/processes.js';

/**
 * The SDK on the runtimes it promises besides Node and browsers: Bun and Deno, both from their npm packages
 * (pinned devDependencies whose platform packages carry the binaries; neither package's install script runs:
 * package.json › pnpm.ignoredBuiltDependencies). One application script, the same file for every runtime and
 * Node as the control, imports the SDK's ESM build (what `npm pack` ships) as an installed package —
 * `@keyforge/client` and `@keyforge/client/node` through the package's `exports` — and uses it against the real
 * server process: activate, validate (JWKS fetched, token verified), validateOffline from a file and from
 * memory, a tampered file, metering replayed by its idempotency key, a floating checkout and checkin, and the
 * typed errors (a rejection, a timeout, an abort). Deno runs with only the permissions the README names.
 */
const SDK = path.resolve(import.meta.dirname, '../sdk');
const ISSUER = 'https://licenses.acme.test';
const PRODUCT = 'Acme Studio';

/**
 * A runtime's binary from the platform package its npm package installed (the launcher lists them all as
 * optionalDependencies; pnpm installs the one for this machine).
 */
function platformBinary(launcher: string, executable: (platform: NodeJS.Platform) => string): Need & { path: string } {
  const what = `${launcher} (npm devDependency)`;
  let manifest: string;
  try {
    manifest = createRequire(import.meta.url).resolve(`${launcher}/package.json`);
  } catch {
    return { what, path: '', missing: `the ${launcher} package is not installed (pnpm install)` };
  }
  const fromLauncher = createRequire(manifest);
  const { optionalDependencies = {} } = JSON.parse(readFileSync(manifest, 'utf8')) as { optionalDependencies?: Record<string, string> };
  for (const name of Object.keys(optionalDependencies)) {
    let dir: string;
    try {
      dir = path.dirname(fromLauncher.resolve(`${name}/package.json`));
    } catch {
      continue; // another platform's package: not installed here
    }
    const binary = path.join(dir, executable(process.platform));
    if (existsSync(binary)) return { what, path: binary };
  }
  return { what, path: '', missing: `no platform package of ${launcher} for ${process.platform}-${process.arch} is installed` };
}

interface Runtime {
  name: 'node' | 'bun' | 'deno';
  need: Need & { path: string };
  /** The command line that runs `script` (in the application's folder). */
  args(script: string, allow: { hosts: string[]; storeDir: string }): string[];
  env: Record<string, string>;
}

const RUNTIMES: Runtime[] = [
  { name: 'node', need: { what: 'Node.js', path: process.execPath }, args: (script) => [script], env: {} },
  {
    name: 'bun',
    need: platformBinary('bun', (platform) => (platform === 'win32' ? 'bin/bun.exe' : 'bin/bun')),
    // --no-install: never fetch a missing import from the registry at run time (Bun's auto-install).
    args: (script) => ['--no-install', script],
    env: { DO_NOT_TRACK: '1' },
  },
  {
    name: 'deno',
    need: platformBinary('deno', (platform) => (platform === 'win32' ? 'deno.exe' : 'deno')),
    // The permissions docs/integrate/sdk.md › "Runtimes" names: the server, the FileStore's folder, the machine id.
    args: (script, allow) => [
      'run',
      '--no-prompt',
      '--no-remote',
      `--allow-net=${allow.hosts.join(',')}`,
      `--allow-read=${allow.storeDir},/etc/machine-id,/var/lib/dbus/machine-id`,
      `--allow-write=${allow.storeDir}`,
      script,
    ],
    env: { DENO_NO_UPDATE_CHECK: '1' },
  },
];

/** The application: one file that runs unchanged on every runtime; its argument is the JSON of `Setting`. */
const APPLICATION = String.raw`
import process from 'node:process';
import { readFile, writeFile } from 'node:fs/promises';
import { KeyforgeClient, KeyforgeError, LicenseRejectedError, MemoryStore } from '@keyforge/client';
import { FileStore, machineFingerprint } from '@keyforge/client/node';

const { runtime, api, unreachable, hanging, issuer, product, licenseKey, storeFile } = JSON.parse(process.argv[2]);
const deviceId = runtime + '-device';
const options = { issuer, product, retry: { attempts: 1 } };
const failure = (promise) => promise.then(() => 'resolved', (error) => [error.name, error.code, error instanceof KeyforgeError].join(':'));
const base64url = (text) => btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const unbase64url = (text) => atob(text.replace(/-/g, '+').replace(/_/g, '/'));

// Online, the token kept in a file, the keys fetched from the JWKS (nothing pinned).
const app = new KeyforgeClient({ baseUrl: api, ...options, store: new FileStore(storeFile) });
const activation = await app.activate({ licenseKey, deviceId, deviceName: runtime });
const online = await app.validate({ licenseKey, deviceId });
const stored = JSON.parse(await readFile(storeFile, 'utf8'));

// The next launch, the server out of reach: from the file.
const relaunched = new KeyforgeClient({ baseUrl: unreachable, ...options, store: new FileStore(storeFile) });
const fromFile = await relaunched.validateOffline({ licenseKey, deviceId });
const fallback = await relaunched.validate({ licenseKey, deviceId, offlineFallback: true });

// From memory.
const inMemory = new KeyforgeClient({ baseUrl: api, ...options, store: new MemoryStore() });
await inMemory.validate({ licenseKey });
const fromMemory = await inMemory.validateOffline({ licenseKey });

// Someone edits the file to add a feature: the signature no longer matches.
const recordName = Object.keys(stored).find((name) => name.startsWith('license:'));
const record = JSON.parse(stored[recordName]);
const [header, payload, signature] = record.token.split('.');
const claims = JSON.parse(unbase64url(payload));
const edited = [header, base64url(JSON.stringify({ ...claims, features: [...claims.features, 'everything'] })), signature].join('.');
await writeFile(storeFile, JSON.stringify({ ...stored, [recordName]: JSON.stringify({ ...record, token: edited }) }));
const tampered = await failure(relaunched.validateOffline({ licenseKey, deviceId }));

// Metering: the same idempotency key twice counts once.
const usage = { licenseKey, event: 'api.calls', quantity: 2, idempotencyKey: runtime + '-usage-1' };
const metered = [await app.meter(usage), await app.meter(usage)];

// Floating seats: one checked in, one disposed (what 'await using' calls), and one left open, whose heartbeat
// timer must not keep the process alive.
const seat = await app.checkout({ licenseKey, deviceName: runtime });
const checkin = await seat.checkin();
const disposable = await app.checkout({ licenseKey, deviceName: runtime + ' (disposed)' });
await disposable[Symbol.asyncDispose]();
const leftOpen = await app.checkout({ licenseKey, deviceName: runtime + ' (left open)' });

// Typed errors.
const rejected = await app.validate({ licenseKey: 'ACME-AAAA-AAAA-AAAA-AAAA' }).catch((error) => error);
const seatsExhausted = await failure(app.activate({ licenseKey, deviceId: runtime + '-second-device' }));
const timeout = await failure(new KeyforgeClient({ baseUrl: hanging, ...options, timeoutMs: 200 }).validate({ licenseKey }));
const controller = new AbortController();
const abortable = new KeyforgeClient({ baseUrl: hanging, ...options }).validate({ licenseKey, signal: controller.signal }).catch((error) => error.name);
controller.abort();

console.log(JSON.stringify({
  activation: { isValid: activation.isValid, deviceId: activation.deviceId },
  online: { source: online.source, product: online.entitlement.product, device: online.entitlement.device, features: online.entitlement.features, keyId: online.entitlement.keyId },
  stored: { names: Object.keys(stored).map((name) => name.replace(/^license:[0-9a-f]{32}$/, 'license:<digest>')).sort(), holdsKey: JSON.stringify(stored).includes(licenseKey) },
  fromFile: { source: fromFile.source, features: fromFile.entitlement.features },
  fallback: { source: fallback.source, onlineError: [fallback.onlineError?.name, fallback.onlineError?.code].join(':') },
  fromMemory: fromMemory.source,
  tampered,
  metered: metered.map((answer) => ({ total: answer.total, replayed: answer.replayed })),
  floating: { state: seat.state, aborted: seat.signal.aborted, endReason: checkin.endReason, disposed: disposable.state, leftOpen: leftOpen.state },
  rejected: { name: rejected.name, code: rejected.code, rejection: rejected instanceof LicenseRejectedError, keyforge: rejected instanceof KeyforgeError, error: rejected instanceof Error },
  seatsExhausted,
  timeout,
  aborted: await abortable,
  fingerprint: await machineFingerprint({ salt: product }).catch((error) => error.code),
}));
`;

let t: TestApp;
let server: ServerProcess;
let tenantId: string;
let productId: string;
/** A server that accepts connections and never answers (timeouts, aborts). */
let hanging: Server;
let hangingUrl: string;
/** Nothing listens there. */
let unreachableUrl: string;
/** The application's folder: app.mjs and node_modules with the built package (and jose, its dependency). */
let appDir: string;

beforeAll(async () => {
  t = await startTestApp({ clock: TestClock.startingNow() });
  const tenant = await t.seedTenant();
  tenantId = tenant.id;
  productId = (await t.seedProduct(tenantId, PRODUCT)).id;
  server = await startServerProcess({ PUBLIC_URL: ISSUER, DATABASE_URL: t.databaseUrl, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, JOBS_WORKER: 'false', LOG_LEVEL: 'warn' });
  hanging = createServer(() => undefined);
  await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
  hangingUrl = `http://127.0.0.1:${(hanging.address() as { port: number }).port}`;
  unreachableUrl = `http://127.0.0.1:${await freePort()}`;

  // Installed as `npm install ./keyforge-client-0.1.0.tgz` would: the package's manifest and its tsc build.
  appDir = mkdtempSync(path.join(tmpdir(), 'kf-sdk-runtimes-'));
  const packageDir = path.join(appDir, 'node_modules/@keyforge/client');
  mkdirSync(packageDir, { recursive: true });
  cpSync(path.join(SDK, 'package.json'), path.join(packageDir, 'package.json'));
  execFileSync(path.join(SDK, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json', '--outDir', path.join(packageDir, 'dist')], { cwd: SDK, encoding: 'utf8', timeout: 150_000 });
  symlinkSync(realpathSync(path.join(SDK, 'node_modules/jose')), path.join(appDir, 'node_modules/jose'), 'dir');
  writeFileSync(path.join(appDir, 'package.json'), JSON.stringify({ name: 'runtime-app', private: true, type: 'module', dependencies: { '@keyforge/client': '0.1.0' } }));
  writeFileSync(path.join(appDir, 'app.mjs'), APPLICATION);
}, 240_000);

afterAll(async () => {
  hanging?.closeAllConnections();
  hanging?.close();
  await server?.stop();
  await t?.close();
  if (appDir) rmSync(appDir, { recursive: true, force: true });
});

/** Runs the application on `runtime`: what it printed (its last line) and its stderr; rejects with its output when it fails. */
function runApplication(runtime: Runtime, setting: Record<string, string>): Promise<{ outcome: any; stderr: string }> {
  const storeDir = path.dirname(setting.storeFile);
  const hosts = [server.url, hangingUrl, unreachableUrl].map((url) => new URL(url).host);
  return new Promise((resolve, reject) => {
    execFile(
      runtime.need.path,
      runtime.args(path.join(appDir, 'app.mjs'), { hosts, storeDir }).concat(JSON.stringify(setting)),
      // The process must end by itself: a timer or socket that kept it alive would show as this timeout.
      { cwd: appDir, encoding: 'utf8', timeout: 90_000, env: { ...process.env, NO_COLOR: '1', DENO_DIR: path.join(appDir, '.deno'), ...runtime.env } },
      (error, stdout, stderr) => {
        if (error?.killed) return reject(new Error(`${runtime.name} did not exit by itself (a timer or connection kept it alive):\n${stdout}\n${stderr}`));
        if (error) return reject(new Error(`${runtime.name} failed (exit ${error.code}):\n${stdout}\n${stderr}`));
        resolve({ outcome: JSON.parse(stdout.trim().split('\n').at(-1)!), stderr });
      },
    );
  });
}

describe('the SDK on Node, Bun and Deno (the same application, against the real server)', () => {
  for (const runtime of RUNTIMES) {
    itWith(runtime.need)(`${runtime.name}: activate, validate, offline from a file and from memory, meter, floating seat, typed errors`, async () => {
      const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 1, offlineGraceDays: 7, floatingSeats: 3, features: ['export'] });
      const storeFile = path.join(appDir, `store-${runtime.name}`, 'license.json');
      const { outcome, stderr } = await runApplication(runtime, { runtime: runtime.name, api: server.url, unreachable: unreachableUrl, hanging: hangingUrl, issuer: ISSUER, product: PRODUCT, licenseKey: key, storeFile });

      const jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
      expect(jwks.keys.map((jwk) => jwk.kid)).toContain(outcome.online.keyId);
      expect(outcome).toEqual({
        activation: { isValid: true, deviceId: `${runtime.name}-device` },
        online: { source: 'online', product: PRODUCT, device: `${runtime.name}-device`, features: ['export'], keyId: outcome.online.keyId },
        stored: { names: [`jwks:${ISSUER}`, 'license:<digest>'], holdsKey: false },
        fromFile: { source: 'offline', features: ['export'] },
        fallback: { source: 'offline', onlineError: 'NetworkError:NetworkError' },
        fromMemory: 'offline',
        tampered: 'VerificationError:TokenInvalid:true',
        metered: [
          { total: 2, replayed: false },
          { total: 2, replayed: true },
        ],
        floating: { state: 'closed', aborted: true, endReason: 'checkin', disposed: 'closed', leftOpen: 'active' },
        rejected: { name: 'LicenseRejectedError', code: 'LicenseNotFound', rejection: true, keyforge: true, error: true },
        seatsExhausted: 'LicenseRejectedError:SeatsExhausted:true',
        timeout: 'NetworkError:Timeout:true',
        aborted: 'AbortError',
        fingerprint: await machineFingerprint({ salt: PRODUCT }).catch((error: { code: string }) => error.code),
      });

      expect(stderr).toBe(''); // no warning: no deprecated or experimental API, no permission Deno was not given

      // The server's side of it.
      const activations = await t.prisma.activation.findMany({ where: { licenseId: license.id }, select: { deviceId: true, deviceName: true, deactivatedAt: true } });
      expect(activations).toEqual([{ deviceId: `${runtime.name}-device`, deviceName: runtime.name, deactivatedAt: null }]);
      const sessions = await t.prisma.floatingSession.findMany({ where: { licenseId: license.id }, orderBy: { createdAt: 'asc' }, select: { deviceName: true, endReason: true } });
      expect(sessions).toEqual([
        { deviceName: runtime.name, endReason: 'checkin' },
        { deviceName: `${runtime.name} (disposed)`, endReason: 'checkin' },
        { deviceName: `${runtime.name} (left open)`, endReason: null },
      ]);
      expect(await t.prisma.usageEvent.count({ where: { licenseId: license.id } })).toBe(1);
    });
  }
});
