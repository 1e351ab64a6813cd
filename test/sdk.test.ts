import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { SignJWT, exportJWK } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ApiError,
  KeyforgeClient,
  KeyforgeError,
  LicenseRejectedError,
  LocalStorageStore,
  MemoryStore,
  NetworkError,
  VerificationError,
  type KeyforgeClientOptions,
  type LicenseState,
  type TokenStore,
  type UsageFlush,
} from '../sdk/src/index.js';
import { FileStore, machineFingerprint, machineId } from '../sdk/src/node.js';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { deactivateActivation, revokeLicense, updateLicense } from '../server/src/services/licenses/management.js';
import { setMeterQuota } from '../server/src/services/metering/management.js';
import { rotateSigningKey } from '../server/src/services/signing/signing-keys.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { startServerProcess, type ServerProcess } from './support/processes.js';
import { clearOfUtcMidnight } from './support/time.js';
import { waitUntil } from './support/wait.js';

/**
 * The client SDK (sdk/, `@keyforge/client`) against the real server: a separate server process on its own
 * database, reached over real HTTP through a small fault-injecting proxy (drop an answer after the server
 * handled it, answer 429/503, hang, replay an old answer) that also records every request the SDK sends.
 */
const PRODUCT = 'Acme Studio';
/** The server's PUBLIC_URL: the `iss` of its tokens, whatever port the process listens on. */
const ISSUER = 'https://licenses.acme.test';
const DAY_MS = 86_400_000;
/** Per-license limit of the server process: low enough for the real 429 test, above what any other test sends one license. */
const LICENSE_LIMIT = 40;

let t: TestApp;
let server: ServerProcess;
let serverEnv: Record<string, string>;
let origin: string;
let proxy: FaultProxy;
let tenantId: string;
let productId: string;
/** Every license key handed out: none may show in an error message or the server's log. */
const keys: string[] = [];

const ctx = () => ({ db: t.deps.db, secrets: t.deps.secrets, now: new Date(), actor: systemActor(tenantId), meta: NO_META });

async function license(attributes: Record<string, unknown> = {}) {
  const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 3, offlineGraceDays: 7, ...attributes });
  keys.push(key);
  return { key, license };
}

// ---------------------------------------------------------------------------------------------------------------
// The proxy: forwards to the server unless the test's rule says otherwise.

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  at: number;
}
type Action =
  | 'forward'
  /** Forward, let the server handle it, then cut the connection: the client never sees the answer. */
  | 'drop-answer'
  /** Never answer. */
  | 'hang'
  /** Cut the connection without forwarding: the server is out of reach. */
  | 'cut'
  | { status: number; headers?: Record<string, string>; body?: unknown; raw?: string }
  /** Forward, then answer this JSON instead of the server's. */
  | { replace: (answer: { status: number; json: any }) => unknown };
type Rule = (request: Seen, index: number) => Action;

class FaultProxy {
  seen: Seen[] = [];
  rule: Rule = () => 'forward';
  private server!: Server;
  url = '';

  constructor(private readonly upstream: () => string) {}

  async start() {
    this.server = createServer((request, response) => void this.handle(request, response));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  /** Requests to `path` since the last reset. */
  to(pathname: string) {
    return this.seen.filter((request) => request.path === pathname);
  }

  reset(rule: Rule = () => 'forward') {
    this.seen = [];
    this.rule = rule;
  }

  close() {
    this.server.closeAllConnections();
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const seen: Seen = { method: request.method!, path: request.url!, headers: request.headers, body: text ? JSON.parse(text) : undefined, at: Date.now() };
    const index = this.seen.push(seen) - 1;
    const action = this.rule(seen, index);
    if (action === 'hang') return;
    if (action === 'cut') {
      request.socket.destroy();
      return;
    }
    if (typeof action === 'object' && 'status' in action) {
      response.writeHead(action.status, { 'content-type': 'application/json', ...action.headers });
      response.end(action.raw ?? (action.body === undefined ? '' : JSON.stringify(action.body)));
      return;
    }
    let upstream: Response;
    try {
      upstream = await fetch(this.upstream() + request.url, {
        method: request.method,
        headers: Object.fromEntries(['content-type', 'authorization'].filter((name) => request.headers[name]).map((name) => [name, String(request.headers[name])])),
        body: text || undefined,
      });
    } catch {
      request.socket.destroy(); // the server is down: so is the connection
      return;
    }
    let body = await upstream.text();
    if (action === 'drop-answer') {
      request.socket.destroy();
      return;
    }
    if (typeof action === 'object' && 'replace' in action) body = JSON.stringify(action.replace({ status: upstream.status, json: JSON.parse(body) }));
    const headers: Record<string, string> = {};
    for (const name of ['content-type', 'retry-after', 'idempotent-replayed', 'x-request-id']) {
      const value = upstream.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    response.writeHead(upstream.status, headers);
    response.end(body);
  }
}

/** A store whose contents the test can read and edit (as anyone with access to the file or localStorage can). */
class OpenStore implements TokenStore {
  values = new Map<string, string>();
  get = (key: string) => this.values.get(key) ?? null;
  set = (key: string, value: string) => void this.values.set(key, value);
  delete = (key: string) => void this.values.delete(key);
}

// ---------------------------------------------------------------------------------------------------------------

/** A client through the proxy, with short backoffs (the policy is the same, only faster). */
function client(options: Partial<KeyforgeClientOptions> = {}) {
  return new KeyforgeClient({
    baseUrl: proxy.url,
    issuer: ISSUER,
    product: PRODUCT,
    timeoutMs: 10_000,
    ...options,
    retry: { baseDelayMs: 20, maxDelayMs: 200, ...options.retry },
  });
}

/** The error a promise rejects with (fails when it resolves). */
async function failure<T extends Error = KeyforgeError>(promise: Promise<unknown>): Promise<T> {
  try {
    await promise;
  } catch (error) {
    for (const key of keys) expect(String((error as Error).message)).not.toContain(key);
    return error as T;
  }
  throw new Error('expected a rejection');
}

const activeSeats = (licenseId: string) => t.prisma.activation.count({ where: { licenseId, deactivatedAt: null } });

/** (Re)starts the server process; its port changes, the proxy in front of it (the URL clients use) does not. */
async function startServer() {
  const started = await startServerProcess(serverEnv);
  origin = started.url;
  return started;
}

beforeAll(async () => {
  // The server process runs on the wall clock and the meter tests count per UTC day and month: stay inside one day.
  await clearOfUtcMidnight(5 * 60_000);
  t = await startTestApp({ clock: TestClock.startingNow() });
  const { tenant, product, key } = await t.seedBasic({ maxActivations: 3 });
  keys.push(key);
  tenantId = tenant.id;
  productId = product.id;
  serverEnv = {
    PUBLIC_URL: ISSUER,
    DATABASE_URL: t.databaseUrl,
    SERVER_SECRET: t.config.serverSecret!,
    DATA_DIR: t.config.dataDir,
    JOBS_WORKER: 'false',
    LOG_LEVEL: 'info',
    SIGNING_KEY_REFRESH_SECONDS: '1',
    RATE_LIMIT_PUBLIC_PER_MINUTE: '100000',
    RATE_LIMIT_TENANT_PER_MINUTE: '100000',
    RATE_LIMIT_LICENSE_PER_MINUTE: String(LICENSE_LIMIT),
  };
  server = await startServer();
  proxy = new FaultProxy(() => server.url);
  await proxy.start();
}, 120_000 + 5 * 60_000);

// Each test starts with a proxy that forwards everything and has seen nothing.
beforeEach(() => proxy.reset());

afterAll(async () => {
  await proxy?.close();
  if (server) {
    const log = server.output();
    expect(log).toContain('/api/v1/validate');
    for (const key of keys) expect(log).not.toContain(key);
    await server.stop();
  }
  await t?.close();
});

describe('activate', () => {
  it('fetches a fresh nonce for every activation, and the same installation reuses its seat', async () => {
    const { key, license: row } = await license({ maxActivations: 2 });
    const sdk = client();
    proxy.reset();
    const first = await sdk.activate({ licenseKey: key, deviceName: "Ada's laptop", version: '1.0.0' });
    expect(first).toMatchObject({ isValid: true, productName: PRODUCT, remainingActivations: 1, nodeLocked: false });
    expect(first.deviceId).toMatch(/^[0-9a-f]{64}$/);
    expect(first.deviceId).toBe(await sdk.deviceId());
    const again = await sdk.activate({ licenseKey: key });
    expect(again.remainingActivations).toBe(1);
    expect(await activeSeats(row.id)).toBe(1);

    const nonces = proxy.to('/api/v1/nonce');
    const activations = proxy.to('/api/v1/activate');
    expect(nonces).toHaveLength(2);
    expect(activations.map((request) => request.body.nonce)).toHaveLength(2);
    expect(new Set(activations.map((request) => request.body.nonce)).size).toBe(2);
    expect(activations.every((request) => request.body.deviceId === first.deviceId)).toBe(true);
    // Only the body carries the key.
    expect(proxy.seen.every((request) => !request.path.includes('?'))).toBe(true);
  });

  it('a lost answer is retried with a new nonce and the same device: one seat, not two', async () => {
    const { key, license: row } = await license({ maxActivations: 3 });
    proxy.reset((request) => (request.path === '/api/v1/activate' && proxy.to('/api/v1/activate').length === 1 ? 'drop-answer' : 'forward'));
    const activation = await client().activate({ licenseKey: key, deviceId: 'render-node-4' });
    expect(activation).toMatchObject({ isValid: true, remainingActivations: 2, deviceId: 'render-node-4' });
    const attempts = proxy.to('/api/v1/activate');
    expect(attempts).toHaveLength(2);
    expect(attempts[0].body.nonce).not.toBe(attempts[1].body.nonce);
    expect(attempts[1].body.deviceId).toBe('render-node-4');
    expect(await activeSeats(row.id)).toBe(1);
    expect((await t.prisma.license.findUniqueOrThrow({ where: { id: row.id } })).currentActivations).toBe(1);
  });

  it('a rejection is thrown with its code and never retried', async () => {
    const { key } = await license({ maxActivations: 1 });
    await client().activate({ licenseKey: key, deviceId: 'first-machine' });
    proxy.reset();
    const error = await failure<LicenseRejectedError>(client().activate({ licenseKey: key, deviceId: 'second-machine' }));
    expect(error).toBeInstanceOf(LicenseRejectedError);
    expect(error.code).toBe('SeatsExhausted');
    expect(error.response).toMatchObject({ isValid: false, errorCode: 'SeatsExhausted' });
    expect(proxy.to('/api/v1/activate')).toHaveLength(1);

    const locked = await license({ nodeLocked: true });
    const sdk = client();
    // The SDK always sends a device (the installation id by default), so a node-locked license just works.
    expect(await sdk.activate({ licenseKey: locked.key })).toMatchObject({ isValid: true, nodeLocked: true });
    expect((await failure(client().activate({ licenseKey: 'ACME-AAAA-AAAA-AAAA-AAAA' }))).code).toBe('LicenseNotFound');
  });

  it("a key of another product is refused before a seat is taken (the client sends its product); several names go as a list", async () => {
    const { key, license: row } = await license({ maxActivations: 1 });
    proxy.reset();
    const error = await failure<LicenseRejectedError>(client({ product: 'Acme Render' }).activate({ licenseKey: key, deviceId: 'render-box' }));
    expect(error).toBeInstanceOf(LicenseRejectedError);
    expect(error.code).toBe('ProductMismatch');
    expect(proxy.to('/api/v1/activate').map((request) => request.body.product)).toEqual(['Acme Render']);
    expect(await activeSeats(row.id)).toBe(0);
    // The seat is still there for the right application; several product names are sent as a list.
    expect(await client({ product: ['Acme Render', PRODUCT] }).activate({ licenseKey: key, deviceId: 'studio-box' })).toMatchObject({ isValid: true, remainingActivations: 0 });
    expect(proxy.to('/api/v1/activate').at(-1)!.body.product).toEqual(['Acme Render', PRODUCT]);
    expect(await activeSeats(row.id)).toBe(1);
  });
});

describe('validate', () => {
  it('sends a fresh challenge per call and returns the verified entitlement', async () => {
    const { key, license: row } = await license({ features: ['export', 'render'], customFields: { plan: 'pro' } });
    const sdk = client();
    proxy.reset();
    const result = await sdk.validate({ licenseKey: key, version: '2.0.0' });
    expect(result.source).toBe('online');
    expect(result.license).toMatchObject({ isValid: true, productName: PRODUCT, customFields: { plan: 'pro' } });
    expect(result.entitlement).toMatchObject({ licenseId: row.id, product: PRODUCT, features: ['export', 'render'], offlineGraceDays: 7, device: null });
    expect(result.entitlement.expiresAt.getTime() - result.entitlement.issuedAt.getTime()).toBe(7 * DAY_MS);
    expect(result.offlineUntil).toEqual(result.entitlement.expiresAt);
    expect(Math.abs(result.clockSkewSeconds)).toBeLessThan(3);
    await sdk.validate({ licenseKey: key });
    const challenges = proxy.to('/api/v1/validate').map((request) => request.body.challenge);
    expect(challenges).toHaveLength(2);
    expect(challenges[0]).not.toBe(challenges[1]);
    expect(challenges[0]).toMatch(/^[A-Za-z0-9_-]{32}$/);
    // The JWKS was fetched once and then cached.
    expect(proxy.to('/.well-known/jwks.json')).toHaveLength(1);
  });

  it('refuses a replayed answer (its token echoes another challenge)', async () => {
    const { key } = await license();
    let captured: unknown;
    // The first answer is captured, and served again for the second request.
    proxy.reset((request) => (request.path === '/api/v1/validate' ? { replace: ({ json }: { json: unknown }) => (captured ??= json) } : 'forward'));
    await client().validate({ licenseKey: key });
    const error = await failure<VerificationError>(client().validate({ licenseKey: key }));
    expect(error).toBeInstanceOf(VerificationError);
    expect(error.code).toBe('ChallengeMismatch');
  });

  it('refuses another product, accepts a bundle containing ours, checks issuer and device', async () => {
    const { key } = await license();
    expect((await failure(client({ product: 'Other App' }).validate({ licenseKey: key }))).code).toBe('WrongProduct');
    expect((await client({ product: ['Other App', PRODUCT] }).validate({ licenseKey: key })).entitlement.product).toBe(PRODUCT);

    const suite = await t.seedProduct(tenantId, 'Acme Suite', [PRODUCT]);
    const bundle = await t.seedLicense(tenantId, suite.id, { maxActivations: 1, offlineGraceDays: 1 });
    keys.push(bundle.key);
    expect((await client().validate({ licenseKey: bundle.key })).entitlement).toMatchObject({ product: 'Acme Suite', bundleProducts: [PRODUCT] });

    expect((await failure(client({ issuer: 'https://licenses.example.com' }).validate({ licenseKey: key }))).code).toBe('WrongIssuer');

    const sdk = client();
    const bound = await sdk.validate({ licenseKey: key, deviceId: 'machine-a' });
    expect(bound.entitlement.device).toBe('machine-a');
    expect((await sdk.validateOffline({ licenseKey: key, deviceId: 'machine-a' })).source).toBe('offline');
    expect((await failure(sdk.validateOffline({ licenseKey: key, deviceId: 'machine-b' }))).code).toBe('WrongDevice');
  });

  it('requireActivation: a device-scoped validate, refused once the device is deactivated; offline, the token must attest it', async () => {
    const { key } = await license();
    const sdk = client();
    // Not activated yet: refused; the plain validate (the default) checks the license only.
    expect((await failure<LicenseRejectedError>(sdk.validate({ licenseKey: key, requireActivation: true }))).code).toBe('DeviceNotActivated');
    const plain = await sdk.validate({ licenseKey: key });
    expect(plain.entitlement.deviceActivated).toBe(false);
    expect((await failure(sdk.validateOffline({ licenseKey: key, requireActivation: true }))).code).toBe('WrongDevice');

    // The installation id is the device when none is given, as for activate.
    await sdk.activate({ licenseKey: key });
    const scoped = await sdk.validate({ licenseKey: key, requireActivation: true });
    expect(scoped.entitlement).toMatchObject({ device: await sdk.deviceId(), deviceActivated: true });
    expect((await sdk.validateOffline({ licenseKey: key, deviceId: await sdk.deviceId(), requireActivation: true })).entitlement.deviceActivated).toBe(true);

    await sdk.deactivate({ licenseKey: key });
    expect((await failure<LicenseRejectedError>(sdk.validate({ licenseKey: key, requireActivation: true }))).code).toBe('DeviceNotActivated');
  });

  it('a definite rejection deletes the stored token', async () => {
    const { key, license: row } = await license();
    const sdk = client();
    await sdk.validate({ licenseKey: key });
    expect((await sdk.validateOffline({ licenseKey: key })).source).toBe('offline');
    await revokeLicense(ctx(), row.id);
    proxy.reset();
    const error = await failure<LicenseRejectedError>(sdk.validate({ licenseKey: key, offlineFallback: true }));
    expect(error.code).toBe('LicenseRevoked');
    expect(proxy.to('/api/v1/validate')).toHaveLength(1);
    expect((await failure(sdk.validateOffline({ licenseKey: key }))).code).toBe('TokenMissing');
  });

  it('pinned keys: no JWKS request, and a key outside the pin is refused', async () => {
    const { key } = await license();
    const jwks = await (await fetch(`${origin}/.well-known/jwks.json`)).json();
    proxy.reset();
    expect((await client({ jwks }).validate({ licenseKey: key })).source).toBe('online');
    expect(proxy.to('/.well-known/jwks.json')).toHaveLength(0);

    const stranger = await exportJWK(generateKeyPairSync('ed25519').publicKey);
    const error = await failure(client({ jwks: { keys: [{ ...stranger, kid: 'stranger', alg: 'EdDSA' }] } }).validate({ licenseKey: key }));
    expect(error.code).toBe('KeyUnknown');
    expect(proxy.to('/.well-known/jwks.json')).toHaveLength(0);
  });
});

describe('validateOffline', () => {
  it('answers within the grace period and refuses after it, with the clock difference measured online', async () => {
    const { key } = await license({ offlineGraceDays: 7 });
    const store = new MemoryStore();
    let offset = 0;
    const sdk = client({ store, clock: () => Date.now() + offset });
    await sdk.validate({ licenseKey: key });
    const offline = client({ baseUrl: 'http://127.0.0.1:9', store, clock: () => Date.now() + offset }); // nothing listens there
    expect((await offline.validateOffline({ licenseKey: key })).source).toBe('offline');
    offset = 6 * DAY_MS;
    expect((await offline.validateOffline({ licenseKey: key })).entitlement.product).toBe(PRODUCT);
    offset = 7 * DAY_MS + 10 * 60_000;
    expect((await failure(offline.validateOffline({ licenseKey: key }))).code).toBe('TokenExpired');
    // Back to a time before one already seen: the clock was set back.
    offset = -DAY_MS;
    expect((await failure(offline.validateOffline({ licenseKey: key }))).code).toBe('ClockRollback');
  });

  it('a client whose clock is hours off validates online and offline (skew measured from the token)', async () => {
    const { key } = await license({ offlineGraceDays: 2 });
    for (const skew of [-5 * 3600_000, 3 * DAY_MS]) {
      const store = new MemoryStore();
      const sdk = client({ store, clock: () => Date.now() + skew });
      const online = await sdk.validate({ licenseKey: key });
      expect(Math.abs(online.clockSkewSeconds + skew / 1000)).toBeLessThan(5);
      expect((await sdk.validateOffline({ licenseKey: key })).source).toBe('offline');
    }
  });

  it('refuses a tampered cache: edited claims, a forged signature, a swapped key, garbage', async () => {
    const { key } = await license({ features: ['basic'] });
    const jwks = await (await fetch(`${origin}/.well-known/jwks.json`)).json();
    const store = new OpenStore();
    const sdk = client({ store, jwks });
    const { offlineToken } = await sdk.validate({ licenseKey: key });
    const recordKey = [...store.values.keys()].find((name) => name.startsWith('license:'))!;
    const record = JSON.parse(store.get(recordKey)!);
    expect(record).toMatchObject({ v: 1, token: offlineToken });
    const put = (token: string) => store.set(recordKey, JSON.stringify({ ...record, token }));

    // More features, a later expiry: same signature.
    const [header, payload, signature] = offlineToken.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    put([header, Buffer.from(JSON.stringify({ ...claims, features: ['basic', 'pro'], exp: claims.exp + 365 * 86_400 })).toString('base64url'), signature].join('.'));
    expect((await failure(sdk.validateOffline({ licenseKey: key }))).code).toBe('TokenInvalid');

    // Signed by the attacker's own key under the server's kid: the pinned key does not verify it.
    const attacker = generateKeyPairSync('ed25519');
    const { kid } = JSON.parse(Buffer.from(header, 'base64url').toString());
    const forged = await new SignJWT({ ...claims, features: ['basic', 'pro'] }).setProtectedHeader({ alg: 'EdDSA', kid, typ: 'JWT' }).sign(attacker.privateKey);
    put(forged);
    expect((await failure(sdk.validateOffline({ licenseKey: key }))).code).toBe('TokenInvalid');
    // …nor under a kid of its own.
    put(await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', kid: 'attacker' }).sign(attacker.privateKey));
    expect((await failure(sdk.validateOffline({ licenseKey: key }))).code).toBe('KeyUnknown');
    // Another algorithm (an HMAC "signed" with a public value): refused by the pinned algorithm.
    put(await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid }).sign(new TextEncoder().encode('public knowledge')));
    expect((await failure(sdk.validateOffline({ licenseKey: key }))).code).toBe('TokenInvalid');
    put('not.a.token');
    expect((await failure(sdk.validateOffline({ licenseKey: key }))).code).toBe('TokenInvalid');
    store.set(recordKey, '{"v":1,');
    expect((await failure(sdk.validateOffline({ licenseKey: key }))).code).toBe('TokenInvalid');
    // The genuine token still passes.
    put(offlineToken);
    expect((await sdk.validateOffline({ licenseKey: key })).entitlement.features).toEqual(['basic']);
  });

  it('no offline grace: the token verifies online but is not accepted offline', async () => {
    const { key } = await license({ offlineGraceDays: null });
    const sdk = client();
    await sdk.validate({ licenseKey: key });
    expect((await failure(sdk.validateOffline({ licenseKey: key }))).code).toBe('OfflineNotAllowed');
    expect((await failure(client().validateOffline({ licenseKey: key }))).code).toBe('TokenMissing');
  });

  it('offlineFallback answers from the store when the server cannot be reached, never otherwise', async () => {
    const { key } = await license();
    const store = new MemoryStore();
    await client({ store }).validate({ licenseKey: key });
    proxy.reset(() => ({ status: 503, headers: { 'retry-after': '0' }, body: { error: { code: 'ServiceUnavailable', message: 'down', requestId: 'r' } } }));
    const down = client({ store, retry: { attempts: 2 } });
    const fallback = await down.validate({ licenseKey: key, offlineFallback: true });
    expect(fallback.source).toBe('offline');
    expect(fallback.onlineError).toBeInstanceOf(ApiError);
    expect(proxy.to('/api/v1/validate')).toHaveLength(2);
    // Without the option, or without a stored token, the network failure is the answer.
    expect((await failure(down.validate({ licenseKey: key }))).code).toBe('ServiceUnavailable');
    const nothingStored = await failure(client({ retry: { attempts: 1 } }).validate({ licenseKey: key, offlineFallback: true }));
    expect(nothingStored.code).toBe('ServiceUnavailable');
    proxy.reset();
  });
});

describe('deactivate', () => {
  it('frees the seat and forgets the token; a retry after a lost answer still succeeds', async () => {
    const { key, license: row } = await license({ maxActivations: 1 });
    const sdk = client();
    await sdk.activate({ licenseKey: key });
    await sdk.validate({ licenseKey: key });
    expect(await sdk.deactivate({ licenseKey: key })).toEqual({ deactivated: true, remainingActivations: 1 });
    expect(await activeSeats(row.id)).toBe(0);
    expect((await failure(sdk.validateOffline({ licenseKey: key }))).code).toBe('TokenMissing');
    expect((await failure(sdk.deactivate({ licenseKey: key }))).code).toBe('ActivationNotFound');

    await sdk.activate({ licenseKey: key });
    proxy.reset((request) => (request.path === '/api/v1/deactivate' && proxy.to('/api/v1/deactivate').length === 1 ? 'drop-answer' : 'forward'));
    expect(await sdk.deactivate({ licenseKey: key })).toEqual({ deactivated: true, remainingActivations: null });
    expect(proxy.to('/api/v1/deactivate')).toHaveLength(2);
    expect(await activeSeats(row.id)).toBe(0);
    proxy.reset();
  });
});

describe('machine fingerprint', () => {
  it('is SHA-256 of the salt, a newline and the machine id; an empty salt is the default, as in every SDK', async () => {
    const id = await machineId();
    expect(await machineFingerprint({ salt: 'Acme Studio' })).toBe(createHash('sha256').update(`Acme Studio\n${id}`).digest('hex'));
    expect(await machineFingerprint({ salt: '' })).toBe(await machineFingerprint());
    expect(await machineFingerprint()).toBe(createHash('sha256').update(`keyforge\n${id}`).digest('hex'));
  });
});

describe('redirects', () => {
  it('are not followed: the license key in the body is never re-sent to the address a redirect names', async () => {
    const { key, license: row } = await license({ maxActivations: 1 });
    const sdk = client();
    await sdk.activate({ licenseKey: key });
    // fetch re-sends the body on 307: followed, this would reach the server directly and free the seat.
    proxy.reset((request) => (request.path === '/api/v1/deactivate' ? { status: 307, headers: { location: `${server.url}/api/v1/deactivate` } } : 'forward'));
    const error = await failure<ApiError>(sdk.deactivate({ licenseKey: key }));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.code).toBe('InvalidRequest');
    expect(await activeSeats(row.id)).toBe(1);
    proxy.reset();
  });
});

describe('floating sessions', () => {
  const session = (id: string) => t.prisma.floatingSession.findUniqueOrThrow({ where: { id } });

  it('checkout heartbeats by itself, and checks in on dispose', async () => {
    const { key, license: row } = await license({ floatingSeats: 2 });
    const errors: Error[] = [];
    let id: string;
    proxy.reset();
    {
      await using seat = await client().checkout({ licenseKey: key, deviceName: 'Render node 4', heartbeatIntervalSeconds: 0.5, onHeartbeatError: (error) => errors.push(error) });
      id = seat.sessionId;
      expect(seat).toMatchObject({ state: 'active', productName: PRODUCT, floatingSeats: 2, remainingFloatingSeats: 1, leaseSeconds: 300, heartbeatIntervalSeconds: 0.5 });
      const first = (await session(id)).lastHeartbeatAt.getTime();
      await waitUntil(async () => (await session(id)).lastHeartbeatAt.getTime() > first, { what: 'a heartbeat' });
      // The token travels as a Bearer header, never in the URL.
      const heartbeats = proxy.to('/api/v1/float/heartbeat');
      expect(heartbeats.length).toBeGreaterThanOrEqual(1);
      expect(heartbeats.every((request) => /^Bearer kfs_/.test(String(request.headers.authorization)))).toBe(true);
    }
    const ended = await session(id);
    expect(ended.endReason).toBe('checkin');
    expect(errors).toEqual([]);
    expect(await t.prisma.floatingSession.count({ where: { licenseId: row.id, endedAt: null } })).toBe(0);
  });

  it('a retry after a lost checkout answer replaces its own session: one seat', async () => {
    const { key, license: row } = await license({ floatingSeats: 2 });
    proxy.reset((request) => (request.path === '/api/v1/float/checkout' && proxy.to('/api/v1/float/checkout').length === 1 ? 'drop-answer' : 'forward'));
    const seat = await client().checkout({ licenseKey: key });
    expect(proxy.to('/api/v1/float/checkout')).toHaveLength(2);
    expect(await t.prisma.floatingSession.count({ where: { licenseId: row.id, endedAt: null } })).toBe(1);
    expect(await seat.checkin()).toMatchObject({ checkedIn: true, endReason: 'checkin' });
    expect(await seat.checkin()).toMatchObject({ checkedIn: true }); // idempotent
    expect(seat.state).toBe('closed');
    expect(seat.signal.aborted).toBe(true);
    proxy.reset();
  });

  it('a full pool is a rejection; a revoked license makes the session lost', async () => {
    const { key, license: row } = await license({ floatingSeats: 1 });
    const lost: Error[] = [];
    const seat = await client().checkout({ licenseKey: key, heartbeatIntervalSeconds: 0.5, onLost: (error) => lost.push(error) });
    expect((await failure(client().checkout({ licenseKey: key }))).code).toBe('FloatingSeatsExhausted');
    await revokeLicense(ctx(), row.id);
    await waitUntil(() => seat.state === 'lost', { what: 'the session to be lost' });
    expect(lost).toHaveLength(1);
    expect(lost[0]).toBeInstanceOf(LicenseRejectedError);
    expect((lost[0] as LicenseRejectedError).code).toBe('LicenseRevoked');
    expect(seat.signal.aborted).toBe(true);
    expect((await failure(seat.heartbeat())).code).toBe('LicenseRevoked');
  });

  it('survives the server being killed mid-session, and heartbeats again when it is back', async () => {
    const { key } = await license({ floatingSeats: 1 });
    const store = new MemoryStore();
    await client({ store }).validate({ licenseKey: key });
    const heartbeatErrors: Error[] = [];
    const seat = await client().checkout({ licenseKey: key, heartbeatIntervalSeconds: 0.5, onHeartbeatError: (error) => heartbeatErrors.push(error) });
    await server.stop('SIGKILL');
    try {
      await waitUntil(() => heartbeatErrors.length >= 2, { what: 'failed heartbeats' });
      expect(heartbeatErrors.every((error) => error instanceof NetworkError)).toBe(true);
      expect(seat.state).toBe('active');
      // Meanwhile the application keeps running on its stored token.
      const offline = await client({ store, retry: { attempts: 2 } }).validate({ licenseKey: key, offlineFallback: true });
      expect(offline.source).toBe('offline');
      expect(offline.onlineError).toBeInstanceOf(NetworkError);
    } finally {
      server = await startServer();
    }
    const before = (await t.prisma.floatingSession.findUniqueOrThrow({ where: { id: seat.sessionId } })).lastHeartbeatAt.getTime();
    await waitUntil(async () => (await session(seat.sessionId)).lastHeartbeatAt.getTime() > before, { what: 'a heartbeat after the restart' });
    expect(seat.state).toBe('active');
    await seat.checkin();
    expect((await session(seat.sessionId)).endReason).toBe('checkin');
  });
});

describe('meter', () => {
  it('records usage; a retry after a lost answer counts once', async () => {
    const { key } = await license();
    const sdk = client();
    const first = await sdk.meter({ licenseKey: key, event: 'api.calls', quantity: 5 });
    expect(first).toMatchObject({ isValid: true, event: 'api.calls', quantity: 5, total: 5, replayed: false, period: 'month' });
    proxy.reset((request) => (request.path === '/api/v1/meter' && proxy.to('/api/v1/meter').length === 1 ? 'drop-answer' : 'forward'));
    const retried = await sdk.meter({ licenseKey: key, event: 'api.calls', quantity: 2 });
    const attempts = proxy.to('/api/v1/meter');
    expect(attempts).toHaveLength(2);
    expect(attempts[0].body.idempotencyKey).toBe(attempts[1].body.idempotencyKey);
    expect(retried).toMatchObject({ total: 7, replayed: true, idempotencyKey: attempts[0].body.idempotencyKey });
    // Your own key deduplicates across calls.
    proxy.reset();
    expect((await sdk.meter({ licenseKey: key, event: 'api.calls', idempotencyKey: 'usage-1' })).total).toBe(8);
    expect(await sdk.meter({ licenseKey: key, event: 'api.calls', idempotencyKey: 'usage-1' })).toMatchObject({ total: 8, replayed: true });
  });

  it('over the quota is a rejection with the totals; an invalid event is an ApiError; neither is retried', async () => {
    const { key, license: row } = await license();
    await setMeterQuota(ctx(), row.id, { event: 'export', period: 'day', limit: 3 });
    const sdk = client();
    await sdk.meter({ licenseKey: key, event: 'export', quantity: 3 });
    proxy.reset();
    const over = await failure<LicenseRejectedError>(sdk.meter({ licenseKey: key, event: 'export' }));
    expect(over.code).toBe('QuotaExceeded');
    expect(over.response).toMatchObject({ total: 3, limit: 3, remaining: 0, period: 'day' });
    const invalid = await failure<ApiError>(sdk.meter({ licenseKey: key, event: 'Not An Event' }));
    expect(invalid).toBeInstanceOf(ApiError);
    expect(invalid).toMatchObject({ code: 'InvalidRequest', status: 400 });
    expect(invalid.fields).toHaveProperty('event');
    expect(invalid.requestId).toBeTruthy();
    expect(proxy.to('/api/v1/meter')).toHaveLength(2);
  });
});

describe('watch', () => {
  it('reports what changes while the application runs: new features, a freed device, a revocation; nothing else; stops on abort', async () => {
    const { key, license: row } = await license({ features: ['export'] });
    const sdk = client();
    await sdk.activate({ licenseKey: key, deviceId: 'watched-pc' });
    const changes: [LicenseState, LicenseState | null][] = [];
    const controller = new AbortController();
    const watcher = sdk.watch({ licenseKey: key, deviceId: 'watched-pc', intervalSeconds: 1, signal: controller.signal, onChange: (state, previous) => changes.push([state, previous]) });
    const next = async (count: number, what: string) => {
      await waitUntil(() => changes.length >= count, { what });
      return changes[count - 1][0];
    };
    expect(await next(1, 'the first finding')).toMatchObject({ status: 'valid', source: 'online', features: ['export'], code: null, entitlement: { licenseId: row.id, device: 'watched-pc', deviceActivated: true } });
    expect(changes[0][1]).toBeNull();
    expect(proxy.to('/api/v1/validate')[0].body).toMatchObject({ deviceId: 'watched-pc', requireActivation: true });

    await updateLicense(ctx(), row.id, { features: ['export', 'render'] });
    expect(await next(2, 'the new features')).toMatchObject({ status: 'valid', source: 'online', features: ['export', 'render'] });
    expect(changes[1][1]).toBe(changes[0][0]);

    const activation = await t.prisma.activation.findFirstOrThrow({ where: { licenseId: row.id, deviceId: 'watched-pc', deactivatedAt: null } });
    await deactivateActivation(ctx(), activation.id);
    expect(await next(3, 'the freed device')).toMatchObject({ status: 'device-freed', code: 'DeviceNotActivated', source: null, entitlement: null, features: [] });
    await sdk.activate({ licenseKey: key, deviceId: 'watched-pc' });
    expect(await next(4, 'the device back')).toMatchObject({ status: 'valid', source: 'online' });

    await revokeLicense(ctx(), row.id);
    const revoked = await next(5, 'the revocation');
    expect(revoked).toMatchObject({ status: 'revoked', code: 'LicenseRevoked', source: null });
    expect(revoked.error).toBeInstanceOf(LicenseRejectedError);
    expect(watcher.state).toBe(revoked);

    // Checks go on; the same finding is not reported again.
    const checks = proxy.to('/api/v1/validate').length;
    await waitUntil(() => proxy.to('/api/v1/validate').length >= checks + 2, { what: 'two more checks' });
    expect(changes).toHaveLength(5);

    controller.abort();
    expect(watcher.active).toBe(false);
    await expect(watcher.check()).rejects.toThrow('stopped');
    const stoppedAt = proxy.to('/api/v1/validate').length;
    await new Promise((resolve) => setTimeout(resolve, 2500)); // over two intervals and their jitter
    // At most a request already sent when it stopped (it may arrive late); still checking, it would send two or more.
    expect(proxy.to('/api/v1/validate').length).toBeLessThanOrEqual(stoppedAt + 1);
  });

  it('falls back to the stored token while the server is out of reach, and reports the server again when it is back', async () => {
    const { key } = await license({ features: ['export'], offlineGraceDays: 7 });
    const sdk = client();
    const changes: LicenseState[] = [];
    const errors: unknown[] = [];
    const watcher = sdk.watch({ licenseKey: key, intervalSeconds: 1, onChange: (state) => changes.push(state), onError: (error) => errors.push(error) });
    try {
      await waitUntil(() => changes.length === 1, { what: 'the first finding' });
      expect(changes[0]).toMatchObject({ status: 'valid', source: 'online' });
      expect(proxy.to('/api/v1/validate')[0].body.requireActivation).toBeUndefined(); // no deviceId: the license only

      proxy.reset((request) => (request.path === '/api/v1/validate' ? 'cut' : 'forward'));
      await waitUntil(() => changes.length === 2, { what: 'the offline finding' });
      expect(changes[1]).toMatchObject({ status: 'valid', source: 'offline', features: ['export'], code: 'NetworkError' });
      expect(changes[1].error).toBeInstanceOf(NetworkError);
      // Retried (one attempt per check: the schedule is the retry), still answered by the stored token.
      await waitUntil(() => proxy.to('/api/v1/validate').length >= 3, { what: 'retries' });
      expect(changes).toHaveLength(2);
      expect(errors.length).toBeGreaterThanOrEqual(2);
      expect(errors.every((error) => error instanceof NetworkError)).toBe(true);

      proxy.reset();
      await waitUntil(() => changes.length === 3, { what: 'the server back' });
      expect(changes[2]).toMatchObject({ status: 'valid', source: 'online', code: null });
    } finally {
      watcher.stop();
    }

    // Nothing stored and no server: unreachable.
    proxy.reset((request) => (request.path === '/api/v1/validate' ? 'cut' : 'forward'));
    const fresh: LicenseState[] = [];
    const blind = client().watch({ licenseKey: key, intervalSeconds: 60, onChange: (state) => fresh.push(state) });
    try {
      await waitUntil(() => fresh.length === 1, { what: 'the first finding' });
      expect(fresh[0]).toMatchObject({ status: 'unreachable', source: null, code: 'NetworkError' });
    } finally {
      blind.stop();
    }
  });

  it('an interval longer than a timer holds (24.8 days) waits, rather than firing at once in a loop', async () => {
    const { key } = await license();
    const changes: LicenseState[] = [];
    const watcher = client().watch({ licenseKey: key, intervalSeconds: 1e9, onChange: (state) => changes.push(state) });
    try {
      await waitUntil(() => changes.length === 1, { what: 'the first finding' });
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(proxy.to('/api/v1/validate')).toHaveLength(1);
    } finally {
      watcher.stop();
    }
  });
});

describe('usage recorded offline', () => {
  it('queued in the store while the server is out of reach, then sent once, in order, with the original timestamps; sending the queue again counts nothing', async () => {
    const { key, license: row } = await license();
    const store = new OpenStore();
    // The usage happened 4, 3 and 2 minutes ago (inside the 5 minutes clear of midnight the suite waits for).
    let now = Date.now() - 4 * 60_000;
    const sdk = client({ store, clock: () => now, retry: { attempts: 2 } });
    proxy.reset((request) => (request.path === '/api/v1/meter' ? 'cut' : 'forward'));
    const queued = [];
    for (const quantity of [3, 1, 2]) {
      queued.push(await sdk.meter({ licenseKey: key, event: 'api.calls', quantity, queueOffline: true }));
      now += 60_000;
    }
    expect(queued.map((result) => [result.queued, (result as { reason?: unknown }).reason instanceof NetworkError])).toEqual([[true, true], [true, true], [true, true]]);
    const pending = await sdk.pendingUsage({ licenseKey: key });
    expect(pending.map((record) => record.quantity)).toEqual([3, 1, 2]);
    const timestamps = pending.map((record) => record.timestamp);
    expect(timestamps.map((time) => Date.parse(time))).toEqual([now - 3 * 60_000, now - 2 * 60_000, now - 60_000]);
    expect(new Set(pending.map((record) => record.idempotencyKey)).size).toBe(3);
    expect([...store.values.keys()].filter((name) => name.startsWith('usage:'))).toHaveLength(1);
    expect(JSON.stringify([...store.values])).not.toContain(key);
    expect(await t.prisma.usageEvent.count({ where: { licenseId: row.id } })).toBe(0);
    const saved = new Map(store.values);

    // Back online: the next meter call sends what waits first, then itself.
    proxy.reset();
    const fourth = await sdk.meter({ licenseKey: key, event: 'api.calls', quantity: 4, queueOffline: true });
    expect(fourth).toMatchObject({ queued: false, replayed: false, total: 10 });
    const sent = proxy.to('/api/v1/meter').map((request) => request.body);
    expect(sent.map((body) => body.quantity)).toEqual([3, 1, 2, 4]);
    expect(sent.slice(0, 3).map((body) => [body.idempotencyKey, body.timestamp])).toEqual(pending.map((record) => [record.idempotencyKey, record.timestamp]));
    const recorded = await t.prisma.usageEvent.findMany({ where: { licenseId: row.id }, orderBy: { createdAt: 'asc' }, select: { quantity: true, occurredAt: true, idempotencyKey: true } });
    expect(recorded.map((event) => event.quantity)).toEqual([3, 1, 2, 4]);
    expect(recorded.slice(0, 3).map((event) => event.occurredAt.toISOString())).toEqual(timestamps);
    expect(await sdk.pendingUsage({ licenseKey: key })).toEqual([]);

    // The same queue sent again (a crash after sending, before the store was written): counted once.
    for (let round = 0; round < 2; round++) {
      store.values = new Map(saved);
      const again: UsageFlush = await sdk.flushUsage({ licenseKey: key });
      expect(again.sent.map((result) => [result.quantity, result.replayed])).toEqual([[3, true], [1, true], [2, true]]);
      expect(again).toMatchObject({ dropped: [], remaining: 0, stoppedBy: null });
    }
    expect(await t.prisma.usageEvent.count({ where: { licenseId: row.id } })).toBe(4);
    expect((await sdk.meter({ licenseKey: key, event: 'api.calls', quantity: 1 })).total).toBe(11);
  });

  it('a watcher sends the queue when the server is back; a record refused for good is dropped and reported, the rest stay in order', async () => {
    const { key, license: row } = await license();
    await setMeterQuota(ctx(), row.id, { event: 'export', period: 'month', limit: 2 });
    const sdk = client({ retry: { attempts: 1 } });
    proxy.reset((request) => (request.path === '/api/v1/meter' ? 'cut' : 'forward'));
    await sdk.meter({ licenseKey: key, event: 'export', quantity: 2, queueOffline: true });
    await sdk.meter({ licenseKey: key, event: 'export', quantity: 1, queueOffline: true }); // over the quota
    await sdk.meter({ licenseKey: key, event: 'api.calls', quantity: 5, queueOffline: true });
    expect(await sdk.pendingUsage({ licenseKey: key })).toHaveLength(3);

    proxy.reset();
    const flushed: UsageFlush[] = [];
    const watcher = sdk.watch({ licenseKey: key, intervalSeconds: 60, onChange: () => undefined, onUsageFlushed: (report) => flushed.push(report) });
    try {
      await waitUntil(() => flushed.length === 1, { what: 'the queue sent' });
    } finally {
      watcher.stop();
    }
    expect(flushed[0].sent.map((result) => [result.event, result.quantity, result.total])).toEqual([['export', 2, 2], ['api.calls', 5, 5]]);
    expect(flushed[0].dropped).toHaveLength(1);
    expect(flushed[0].dropped[0].record).toMatchObject({ event: 'export', quantity: 1 });
    expect(flushed[0].dropped[0].error).toMatchObject({ code: 'QuotaExceeded' });
    expect(flushed[0].remaining).toBe(0);
    expect(await t.prisma.usageEvent.count({ where: { licenseId: row.id } })).toBe(2);
  });
});

describe('resilience', () => {
  const rateLimited = (retryAfter: string) => ({ status: 429, headers: { 'retry-after': retryAfter }, body: { error: { code: 'RateLimited', message: 'Too many requests', requestId: 'proxy' } } });

  it('waits Retry-After through a 429 storm, then succeeds', async () => {
    const { key } = await license();
    proxy.reset((request) => (request.path === '/api/v1/validate' && proxy.to('/api/v1/validate').length <= 2 ? rateLimited('1') : 'forward'));
    expect((await client().validate({ licenseKey: key })).source).toBe('online');
    const attempts = proxy.to('/api/v1/validate');
    expect(attempts).toHaveLength(3);
    // Never sooner than the server asked.
    expect(attempts[1].at - attempts[0].at).toBeGreaterThanOrEqual(1000);
    expect(attempts[2].at - attempts[1].at).toBeGreaterThanOrEqual(1000);
  });

  it('many clients through a storm: each retries once and all get through', async () => {
    const { key } = await license();
    // Every call's first attempt is refused (a call keeps its challenge across its retries).
    const attempts = new Map<string, number>();
    proxy.reset((request) => {
      if (request.path !== '/api/v1/validate') return 'forward';
      const n = (attempts.get(request.body.challenge) ?? 0) + 1;
      attempts.set(request.body.challenge, n);
      return n === 1 ? rateLimited('1') : 'forward';
    });
    const results = await Promise.all(Array.from({ length: 20 }, () => client().validate({ licenseKey: key })));
    expect(results.every((result) => result.source === 'online')).toBe(true);
    expect([...attempts.values()]).toEqual(Array(20).fill(2));
    proxy.reset();
  });

  it('gives up after the attempts, and at once when Retry-After is longer than allowed', async () => {
    const { key } = await license();
    proxy.reset(() => rateLimited('0'));
    const exhausted = await failure<ApiError>(client({ retry: { attempts: 3 } }).validate({ licenseKey: key }));
    expect(exhausted).toMatchObject({ code: 'RateLimited', status: 429, retryAfterSeconds: 0 });
    expect(proxy.to('/api/v1/validate')).toHaveLength(3);

    proxy.reset(() => rateLimited('120'));
    const tooLong = await failure<ApiError>(client().validate({ licenseKey: key }));
    expect(tooLong.retryAfterSeconds).toBe(120);
    expect(proxy.to('/api/v1/validate')).toHaveLength(1);
    proxy.reset();
  });

  it("the server's own per-license limit: 429 with Retry-After, not hammered", async () => {
    const { key } = await license();
    proxy.reset();
    const sdk = client({ retry: { maxRetryAfterSeconds: 5 } });
    const outcomes = await Promise.all(Array.from({ length: LICENSE_LIMIT + 5 }, () => sdk.validate({ licenseKey: key }).then(() => 'ok', (error: unknown) => error)));
    const refused = outcomes.filter((outcome): outcome is ApiError => outcome instanceof ApiError);
    expect(refused.length).toBeGreaterThanOrEqual(5);
    expect(refused.every((error) => error.code === 'RateLimited' && error.retryAfterSeconds! > 5)).toBe(true);
    expect(outcomes.filter((outcome) => outcome === 'ok')).toHaveLength(LICENSE_LIMIT);
    // One request per call: a Retry-After beyond the allowed wait is not retried.
    expect(proxy.to('/api/v1/validate')).toHaveLength(LICENSE_LIMIT + 5);
  });

  it('503 and network errors are retried with backoff; a definite answer never is', async () => {
    const { key } = await license();
    proxy.reset((request) => (proxy.to(request.path).length === 1 ? { status: 503, headers: { 'retry-after': '1' }, body: { error: { code: 'ServiceUnavailable', message: 'db away', requestId: 'x' } } } : 'forward'));
    expect((await client().validate({ licenseKey: key })).source).toBe('online');
    expect(proxy.to('/api/v1/validate')).toHaveLength(2);

    const closed = client({ baseUrl: 'http://127.0.0.1:9', retry: { attempts: 3 } });
    const unreachable = await failure<NetworkError>(closed.validate({ licenseKey: key }));
    expect(unreachable).toBeInstanceOf(NetworkError);
    expect(unreachable.code).toBe('NetworkError');

    proxy.reset();
    expect((await failure(client().validate({ licenseKey: 'ACME-AAAA-AAAA-AAAA-AAAA' }))).code).toBe('LicenseNotFound');
    expect(proxy.to('/api/v1/validate')).toHaveLength(1);
  });

  it('times out a hanging server per attempt, and an AbortSignal cancels at once', async () => {
    const { key } = await license();
    proxy.reset(() => 'hang');
    const timedOut = await failure<NetworkError>(client({ timeoutMs: 300, retry: { attempts: 2 } }).validate({ licenseKey: key }));
    expect(timedOut.code).toBe('Timeout');
    expect(proxy.to('/api/v1/validate')).toHaveLength(2);

    // Cancelled while waiting out a long Retry-After: no further request.
    proxy.reset(() => rateLimited('20'));
    const controller = new AbortController();
    const started = Date.now();
    const call = client().validate({ licenseKey: key, signal: controller.signal });
    await waitUntil(() => proxy.seen.length === 1, { what: 'the first attempt' });
    controller.abort();
    const aborted = await failure<Error>(call);
    expect(aborted.name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(proxy.seen).toHaveLength(1);
    proxy.reset();
  });
});

describe('hostile answers', () => {
  it('whatever a server or proxy answers, every call resolves or rejects with a KeyforgeError (never a crash, never a busy loop)', async () => {
    const { key } = await license({ floatingSeats: 1 });
    const json = fc.oneof(
      fc.jsonValue(),
      fc.record({ isValid: fc.constant(true), offlineCacheToken: fc.oneof(fc.string(), fc.constant('a.b.c')), sessionToken: fc.string(), sessionId: fc.string(), heartbeatIntervalSeconds: fc.oneof(fc.double(), fc.constant(-1)), leaseSeconds: fc.double(), nonce: fc.string() }, { requiredKeys: [] }),
      fc.record({ isValid: fc.constant(false), errorCode: fc.jsonValue(), message: fc.jsonValue(), deactivated: fc.boolean() }, { requiredKeys: [] }),
      fc.record({ error: fc.record({ code: fc.jsonValue(), message: fc.jsonValue(), fields: fc.jsonValue() }, { requiredKeys: [] }) }),
    );
    const answer = fc.record({
      status: fc.constantFrom(200, 201, 400, 401, 404, 422, 429, 500, 502, 503, 504),
      retryAfter: fc.option(fc.oneof(fc.nat(100).map(String), fc.string(), fc.constant('Wed, 21 Oct 2015 07:28:00 GMT')), { nil: undefined }),
      body: fc.oneof(json.map((value) => JSON.stringify(value)), fc.string()),
    });
    const sdk = client({ retry: { attempts: 2, maxRetryAfterSeconds: 0 }, timeoutMs: 2000 });
    let calls = 0;
    await fc.assert(
      fc.asyncProperty(answer, fc.constantFrom('activate', 'validate', 'deactivate', 'checkout', 'meter'), async ({ status, retryAfter, body }, call) => {
        const headers: Record<string, string> = retryAfter === undefined ? {} : { 'retry-after': retryAfter };
        proxy.reset(() => ({ raw: body, status, headers }));
        calls += 1;
        const run = {
          activate: () => sdk.activate({ licenseKey: key }),
          validate: () => sdk.validate({ licenseKey: key, offlineFallback: true }),
          deactivate: () => sdk.deactivate({ licenseKey: key }),
          checkout: async () => (await sdk.checkout({ licenseKey: key })).dispose(),
          meter: () => sdk.meter({ licenseKey: key, event: 'api.calls' }),
        }[call];
        const outcome = await run().then(() => null, (error: unknown) => error);
        if (outcome !== null) expect(outcome).toBeInstanceOf(KeyforgeError);
        // Bounded: at most the attempts (activate: a nonce and an activation per attempt; checkout: and a checkin).
        expect(proxy.seen.length).toBeLessThanOrEqual(4);
      }),
      { numRuns: 300 },
    );
    expect(calls).toBe(300);
    proxy.reset();
  });
});

describe('key rotation', () => {
  it('a token signed by a new key refetches the JWKS; tokens of the old key keep verifying offline', async () => {
    const { key } = await license();
    const old = await license();
    const store = new MemoryStore();
    const pinnedBefore = await (await fetch(`${origin}/.well-known/jwks.json`)).json();
    const sdk = client({ store });
    const before = await sdk.validate({ licenseKey: old.key });
    proxy.reset();
    const { kid } = await rotateSigningKey({ db: t.deps.db, secrets: t.deps.secrets, now: new Date() }, { immediately: true });
    // The server process picks the new key up within SIGNING_KEY_REFRESH_SECONDS (1 s here).
    const after = await waitUntil(async () => {
      const result = await sdk.validate({ licenseKey: key });
      return result.entitlement.keyId === kid ? result : null;
    }, { what: 'a token signed by the new key' });
    expect(after.entitlement.keyId).not.toBe(before.entitlement.keyId);
    expect(proxy.to('/.well-known/jwks.json').length).toBeGreaterThanOrEqual(1);
    // The old key stays published: the token stored before the rotation still verifies.
    expect((await sdk.validateOffline({ licenseKey: old.key })).entitlement.keyId).toBe(before.entitlement.keyId);
    // An application that pinned only the old key refuses the new one until it ships the new JWKS.
    expect((await failure(client({ jwks: pinnedBefore }).validate({ licenseKey: key }))).code).toBe('KeyUnknown');
  });
});

describe('stores and the device fingerprint', () => {
  it('FileStore: a 0600 JSON file, written atomically, concurrent writes all land, garbage reads as empty', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kf-sdk-'));
    try {
      const file = path.join(dir, 'nested', 'license.json');
      const store = new FileStore(file);
      expect(await store.get('missing')).toBeNull();
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.set(`k${i}`, `v${i}`)));
      expect(await new FileStore(file).get('k19')).toBe('v19');
      expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')))).toHaveLength(20);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      await store.delete('k0');
      expect(await store.get('k0')).toBeNull();
      expect(await store.get('__proto__')).toBeNull();

      // A whole client on it: the token survives a restart (a new client on the same file) and the key is not in it.
      const { key } = await license();
      await client({ store: new FileStore(file) }).validate({ licenseKey: key });
      const restarted = client({ baseUrl: 'http://127.0.0.1:9', store: new FileStore(file) });
      expect((await restarted.validateOffline({ licenseKey: key })).source).toBe('offline');
      expect(readFileSync(file, 'utf8')).not.toContain(key);
      writeFileSync(file, 'not json');
      expect(await store.get('k1')).toBeNull();
      expect((await failure(restarted.validateOffline({ licenseKey: key }))).code).toBe('TokenMissing');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('LocalStorageStore keeps values under its prefix (the browser test uses the real localStorage)', () => {
    const values = new Map<string, string>();
    const storage = { getItem: (k: string) => values.get(k) ?? null, setItem: (k: string, v: string) => void values.set(k, v), removeItem: (k: string) => void values.delete(k) };
    const store = new LocalStorageStore({ storage, prefix: 'app:' });
    store.set('a', '1');
    expect([...values.keys()]).toEqual(['app:a']);
    expect(store.get('a')).toBe('1');
    store.delete('a');
    expect(store.get('a')).toBeNull();
    expect(() => new LocalStorageStore()).toThrow(/no localStorage/);
  });

  it('machineFingerprint is the SHA-256 of the salt and the machine id: stable, salted, not the id itself', async () => {
    const id = await machineId();
    expect(id).toBe(readFileSync('/etc/machine-id', 'utf8').trim());
    const fingerprint = await machineFingerprint({ salt: 'Acme Studio' });
    expect(fingerprint).toBe(createHash('sha256').update(`Acme Studio\n${id}`).digest('hex'));
    expect(await machineFingerprint({ salt: 'Acme Studio' })).toBe(fingerprint);
    expect(await machineFingerprint({ salt: 'Other Vendor' })).not.toBe(fingerprint);
    expect(fingerprint).not.toContain(id);
  });

  it('the installation id is created once per store', async () => {
    const store: TokenStore = new MemoryStore();
    const id = await client({ store }).deviceId();
    expect(await client({ store }).deviceId()).toBe(id);
    expect(await client().deviceId()).not.toBe(id);
  });
});
