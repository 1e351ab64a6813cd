import { Ajv2020 } from 'ajv/dist/2020.js';
import { setArtifactTauriSignature } from '../server/src/services/releases/tauri-signature.js';
import { tauriSigner } from './support/updaters.js';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { setMeterQuota } from '../server/src/services/metering/management.js';
import { createRelease, publishRelease } from '../server/src/services/releases/releases.js';
import { createPaymentConnection } from '../server/src/services/payments/connections.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';

// Real responses of every public route, validated against the document the server serves (Ajv, JSON Schema
// 2020-12 as OpenAPI 3.1 uses). A response whose status, body or headers the document does not describe fails.

let t: TestApp;
let limited: TestApp;
const clock = new TestClock();
let doc: any;
let ajv: Ajv2020;
let tenantId: string;
let productId: string;
const exercised = new Set<string>();

beforeAll(async () => {
  t = await startTestApp({ clock });
  limited = await startTestApp({ env: { RATE_LIMIT_PUBLIC_PER_MINUTE: '1' } });
  const response = await t.get('/api/v1/openapi.json');
  expect(response.status).toBe(200);
  doc = response.json;
  // The document is the schema root, so its #/components/schemas/... references resolve; OpenAPI keywords
  // such as `example` are annotations.
  ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ ...doc, $id: 'openapi.json' });
  const tenant = await t.seedTenant();
  tenantId = tenant.id;
  productId = (await t.seedProduct(tenantId)).id;
});
afterAll(async () => {
  await t?.close();
  await limited?.close();
});

const pointer = (...parts: string[]) => parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

/** Sends the request and checks the answer against the document: documented status, body schema, documented headers. */
async function call(app: TestApp, method: 'get' | 'post', route: string, body?: unknown, headers?: Record<string, string>, path = route) {
  const response = await app.request(method.toUpperCase(), `/api/v1${path}`, body, headers);
  expect(Object.keys(doc.paths[route] ?? {}), `${method} ${route} is documented`).toContain(method);
  const operation = doc.paths[route][method];
  expect(Object.keys(operation.responses), `${method} ${route} answered ${response.status}, which the document does not list: ${response.text}`).toContain(String(response.status));
  const documented = operation.responses[String(response.status)];
  const validate = ajv.getSchema(`openapi.json#/${pointer('paths', route, method, 'responses', String(response.status), 'content', 'application/json', 'schema')}`)!;
  expect(validate, `a JSON schema for ${method} ${route} ${response.status}`).toBeTypeOf('function');
  expect(validate(response.json), `${method} ${route} ${response.status} body ${response.text}: ${ajv.errorsText(validate.errors)}`).toBe(true);
  for (const name of ['retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'idempotent-replayed']) {
    if (response.headers.has(name)) {
      expect(Object.keys(documented.headers ?? {}).map((h) => h.toLowerCase()), `${method} ${route} ${response.status} sends ${name}, undocumented`).toContain(name);
      const header = Object.keys(documented.headers).find((h) => h.toLowerCase() === name);
      const value = response.headers.get(name)!;
      const schema = documented.headers[header!].schema;
      expect(ajv.validate(schema, schema.type === 'integer' ? Number(value) : value), `${name}: ${value}`).toBe(true);
    }
  }
  exercised.add(`${method} ${route} ${response.status}`);
  return response;
}

describe('the served OpenAPI document matches real responses', () => {
  it('GET /nonce', async () => {
    expect((await call(t, 'get', '/nonce')).status).toBe(200);
  });

  it('POST /activate: success, rejection, 400, 422', async () => {
    const { key } = await t.seedLicense(tenantId, productId, { maxActivations: 1 });
    const nonce = async () => (await t.get('/api/v1/nonce')).json.nonce;
    expect((await call(t, 'post', '/activate', { licenseKey: key, deviceId: 'dev-1', version: '1.0.0', nonce: await nonce() })).json.isValid).toBe(true);
    expect((await call(t, 'post', '/activate', { licenseKey: key, deviceId: 'dev-2', nonce: await nonce() })).json.isValid).toBe(false);
    expect((await call(t, 'post', '/activate', { licenseKey: 'ACME-0000-0000-0000-0000', deviceId: 'x', nonce: await nonce() })).json.errorCode).toBe('LicenseNotFound');
    expect((await call(t, 'post', '/activate', { licenseKey: key, deviceId: 'dev-3' })).status).toBe(400);
    expect((await call(t, 'post', '/activate', { licenseKey: key, deviceId: 'dev-3', nonce: 'never-issued' })).status).toBe(422);
    expect((await call(t, 'post', '/activate', '{not json')).status).toBe(400);
  });

  it('POST /validate: valid (errorCode null), rejected, 400', async () => {
    const { key } = await t.seedLicense(tenantId, productId, { features: ['export'], customFields: { plan: 'pro' } });
    const valid = await call(t, 'post', '/validate', { licenseKey: key, version: '1.0.0', challenge: 'n1' });
    expect((await call(t, 'post', '/validate', { licenseKey: key, nonce: 'deprecated-name' })).json.isValid).toBe(true);
    expect(valid.json).toMatchObject({ isValid: true, errorCode: null });
    expect((await call(t, 'post', '/validate', { licenseKey: 'ACME-0000-0000-0000-0000' })).json.errorCode).toBe('LicenseNotFound');
    expect((await call(t, 'post', '/validate', { licenseKey: 42 })).status).toBe(400);
  });

  it('POST /validate and /activate of a suspended license: errorCode Suspended, documented', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId);
    await t.prisma.license.update({ where: { id: license.id }, data: { status: 'suspended', suspendedAt: clock.now() } });
    expect((await call(t, 'post', '/validate', { licenseKey: key })).json).toMatchObject({ isValid: false, errorCode: 'Suspended' });
    expect((await call(t, 'post', '/activate', { licenseKey: key, deviceId: 'pc', nonce: await t.nonce() })).json).toMatchObject({ isValid: false, errorCode: 'Suspended' });
    expect(doc.components.schemas.RejectionCode.enum).toContain('Suspended');
    expect(doc.paths['/validate'].post.description).toMatch(/Suspended/);
    expect(doc.paths['/activate'].post.description).toMatch(/Suspended/);
  });

  it('POST /deactivate: released, not found, 400', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    await t.activate({ licenseKey: key, deviceId: 'pc' });
    expect((await call(t, 'post', '/deactivate', { licenseKey: key, deviceId: 'pc' })).json.deactivated).toBe(true);
    expect((await call(t, 'post', '/deactivate', { licenseKey: key, deviceId: 'pc' })).json.deactivated).toBe(false);
    expect((await call(t, 'post', '/deactivate', {})).status).toBe(400);
  });

  it('POST /license-file: a file (plain, encrypted, for a device), rejections, 400', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    await t.activate({ licenseKey: key, deviceId: 'pc' });
    expect((await call(t, 'post', '/license-file', { licenseKey: key })).json).toMatchObject({ isValid: true, encrypted: false, deviceId: null });
    expect((await call(t, 'post', '/license-file', { licenseKey: key, deviceId: 'pc', encrypt: true })).json).toMatchObject({ isValid: true, encrypted: true, deviceId: 'pc' });
    expect((await call(t, 'post', '/license-file', { licenseKey: key, deviceId: 'other' })).json.errorCode).toBe('DeviceNotActivated');
    expect((await call(t, 'post', '/license-file', { licenseKey: 'ACME-0000-0000-0000-0000' })).json.errorCode).toBe('LicenseNotFound');
    expect((await call(t, 'post', '/license-file', { encrypt: 'yes' })).status).toBe(400);
  });

  it('floating: checkout, heartbeat, checkin (body and Bearer), rejections, 400', async () => {
    const { key } = await t.seedLicense(tenantId, productId, { floatingSeats: 1 });
    const out = await call(t, 'post', '/float/checkout', { licenseKey: key, deviceId: 'seat-1' });
    expect(out.json.isValid).toBe(true);
    expect((await call(t, 'post', '/float/checkout', { licenseKey: key, deviceId: 'seat-2' })).json.isValid).toBe(false);
    expect((await call(t, 'post', '/float/checkout', { deviceId: 'x' })).status).toBe(400);
    const token = out.json.sessionToken as string;
    expect((await call(t, 'post', '/float/heartbeat', { sessionToken: token })).json.isValid).toBe(true);
    expect((await call(t, 'post', '/float/heartbeat', undefined, { authorization: `Bearer ${token}` })).json.isValid).toBe(true);
    expect((await call(t, 'post', '/float/heartbeat', { sessionToken: 'kfs_unknown' })).json.isValid).toBe(false);
    expect((await call(t, 'post', '/float/heartbeat', {})).status).toBe(400);
    expect((await call(t, 'post', '/float/checkin', { sessionToken: token })).json.checkedIn).toBe(true);
    expect((await call(t, 'post', '/float/checkin', { sessionToken: token })).status).toBe(200);
    expect((await call(t, 'post', '/float/checkin', {})).status).toBe(400);
  });

  it('POST /meter: recorded, replayed (Idempotent-Replayed), quota exceeded, rejection, 400', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId);
    await setMeterQuota({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(tenantId), meta: NO_META }, license.id, { event: 'ai.tokens', period: 'day', limit: 10 });
    expect((await call(t, 'post', '/meter', { licenseKey: key, event: 'api.calls', quantity: 1, idempotencyKey: 'k1' })).json.isValid).toBe(true);
    const replay = await call(t, 'post', '/meter', { licenseKey: key, event: 'api.calls', quantity: 1, idempotencyKey: 'k1' });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await call(t, 'post', '/meter', { licenseKey: key, event: 'ai.tokens', quantity: 11 })).json.errorCode).toBe('QuotaExceeded');
    expect((await call(t, 'post', '/meter', { licenseKey: 'ACME-0000-0000-0000-0000', event: 'api.calls', quantity: 1 })).json.errorCode).toBe('LicenseNotFound');
    expect((await call(t, 'post', '/meter', { licenseKey: key, event: '', quantity: -1 })).status).toBe(400);
  });

  it('POST /payments/{connectionId}/webhook: received, 400, 401, 404, 409', async () => {
    const ctx = { db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(tenantId), meta: NO_META };
    const secret = 'whsec_openapi_0123456789';
    const connection = await createPaymentConnection(ctx, { provider: 'stripe', signingSecret: secret });
    const route = '/payments/{connectionId}/webhook';
    const send = (event: unknown, connectionId = connection.id) => {
      const payload = typeof event === 'string' ? event : JSON.stringify(event);
      const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: Math.floor(clock.now().getTime() / 1000) });
      return call(t, 'post', route, payload, { 'stripe-signature': signature }, `/payments/${connectionId}/webhook`);
    };
    const event = (type: string, object: object) => ({ id: `evt_${type}`, object: 'event', created: Math.floor(clock.now().getTime() / 1000), type, data: { object } });
    expect((await send(event('customer.created', { id: 'cus_1', object: 'customer' }))).json).toEqual({ received: true, outcome: 'ignored' });
    const purchase = event('invoice.paid', { id: 'in_1', object: 'invoice', billing_reason: 'subscription_create', customer_email: 'a@example.com', subscription: 'sub_1', lines: { data: [{ price: { id: 'price_none' }, quantity: 1, period: { end: 1900000000 } }] } });
    expect((await send(purchase)).status).toBe(409);
    expect((await send('not json')).status).toBe(400);
    expect((await send(event('customer.created', {}), '00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await call(t, 'post', route, JSON.stringify(purchase), {}, `/payments/${connection.id}/webhook`)).status).toBe(401);
  });

  it('GET /releases, /releases/upgrade, /artifacts/{artifactId}/download and /file: answers, rejections, 400, 403, 404', async () => {
    const ctx = { db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(tenantId), meta: NO_META };
    const release = await createRelease(ctx, { productId, version: '1.0.0', requiredFeatures: ['pro'] });
    const staff = await t.seedUser(tenantId, { email: 'releases@openapi.test', password: 'correct horse battery' });
    const { token } = await t.login(staff.email, 'correct horse battery');
    const upload = await fetch(`${t.baseUrl}/api/releases/${release.id}/artifacts?filename=app.exe&platform=win32&arch=x64`, { method: 'PUT', body: new TextEncoder().encode('MZ-openapi'), headers: { authorization: `Bearer ${token}` } });
    expect(upload.status).toBe(201);
    const artifactId = ((await upload.json()) as { id: string }).id;
    await publishRelease(ctx, release.id);
    const { key } = await t.seedLicense(tenantId, productId, { features: ['pro'] });
    const { key: plain } = await t.seedLicense(tenantId, productId);
    const auth = (licenseKey: string) => ({ authorization: `License ${licenseKey}` });
    expect((await call(t, 'get', '/releases', undefined, auth(key), `/releases?product=${productId}`)).json.releases).toHaveLength(1);
    expect((await call(t, 'get', '/releases', undefined, auth('ACME-0000-0000-0000-0000'), `/releases?product=${productId}`)).json.errorCode).toBe('LicenseNotFound');
    expect((await call(t, 'get', '/releases', undefined, {}, `/releases?product=${productId}`)).status).toBe(400);
    expect((await call(t, 'get', '/releases/upgrade', undefined, auth(key), `/releases/upgrade?product=${productId}&version=0.9.0`)).json.available).toBe(true);
    expect((await call(t, 'get', '/releases/upgrade', undefined, auth(plain), `/releases/upgrade?product=${productId}&version=0.9.0`)).json.reason).toBe('FeatureMissing');
    expect((await call(t, 'get', '/releases/upgrade', undefined, auth(key), `/releases/upgrade?product=${productId}&version=x`)).status).toBe(400);
    const route = '/artifacts/{artifactId}/download';
    const link = await call(t, 'get', route, undefined, auth(key), `/artifacts/${artifactId}/download?product=${productId}`);
    expect((await call(t, 'get', route, undefined, auth(plain), `/artifacts/${artifactId}/download?product=${productId}`)).status).toBe(403);
    expect((await call(t, 'get', route, undefined, auth(key), `/artifacts/00000000-0000-4000-8000-000000000000/download?product=${productId}`)).status).toBe(404);
    // The file route answers bytes (octet-stream) or the JSON errors.
    const file = await t.get(new URL(link.json.url).pathname + new URL(link.json.url).search);
    expect(file.status).toBe(200);
    expect(Object.keys(doc.paths['/artifacts/{artifactId}/file'].get.responses['200'].content)).toEqual([file.headers.get('content-type')]);
    exercised.add('get /artifacts/{artifactId}/file 200');
    expect((await call(t, 'get', '/artifacts/{artifactId}/file', undefined, {}, `/artifacts/${artifactId}/file?token=forged`)).status).toBe(403);
    // The update feeds: electron-builder's YAML, Tauri's JSON (or 204), the redirect to the file.
    const feed = await t.get(`/api/v1/feeds/electron/${productId}/latest.yml`, auth(key));
    expect(feed.status).toBe(200);
    expect(Object.keys(doc.paths['/feeds/electron/{product}/{file}'].get.responses['200'].content)).toEqual([feed.headers.get('content-type')!.split(';')[0]]);
    exercised.add('get /feeds/electron/{product}/{file} 200');
    expect((await call(t, 'get', '/feeds/electron/{product}/{file}', undefined, auth(key), `/feeds/electron/${productId}/latest-mac.yml`)).status).toBe(404);
    const tauriRoute = '/feeds/tauri/{product}/{target}/{arch}/{currentVersion}';
    expect((await t.get(`/api/v1/feeds/tauri/${productId}/windows/x86_64/0.9.0`, auth(key))).status).toBe(204);
    exercised.add(`get ${tauriRoute} 204`);
    await setArtifactTauriSignature(ctx, artifactId, tauriSigner().signFile(new TextEncoder().encode('MZ-openapi')));
    expect((await call(t, 'get', tauriRoute, undefined, auth(key), `/feeds/tauri/${productId}/windows/x86_64/0.9.0`)).json.version).toBe('1.0.0');
    expect((await call(t, 'get', tauriRoute, undefined, auth(key), `/feeds/tauri/${productId}/beos/x86_64/0.9.0`)).status).toBe(400);
    const redirect = await fetch(`${t.baseUrl}/api/v1/feeds/download/${productId}/${artifactId}/app.exe`, { headers: auth(key), redirect: 'manual' });
    expect(redirect.status).toBe(302);
    exercised.add('get /feeds/download/{product}/{artifactId}/{filename} 302');
    exercised.add('get /feeds/download/{product}/{artifactId}/{filename} 200');
    expect((await call(t, 'get', '/feeds/download/{product}/{artifactId}/{filename}', undefined, auth(plain), `/feeds/download/${productId}/${artifactId}/app.exe`)).status).toBe(403);
  });

  it('429 carries the documented Retry-After and RateLimit-* headers', async () => {
    let response = await call(limited, 'post', '/validate', { licenseKey: 'ACME-0000-0000-0000-0000' });
    for (let i = 0; i < 5 && response.status !== 429; i++) response = await call(limited, 'post', '/validate', { licenseKey: 'ACME-0000-0000-0000-0000' });
    expect(response.status).toBe(429);
    for (const name of ['retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) expect(response.headers.has(name), name).toBe(true);
  });

  it('documents every operation with an operationId, and security: [] where no credential is needed', () => {
    for (const [route, operations] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        expect(operation.operationId, `${method} ${route}`).toMatch(/^\w+$/);
        // Only the floating session routes take a credential outside the body (an optional Bearer session token), and
        // the release routes (GET requests: the license key in `Authorization: License <key>`).
        if (route === '/float/heartbeat' || route === '/float/checkin') expect(operation.security, route).toEqual([{ SessionToken: [] }, {}]);
        else if (['/releases', '/releases/upgrade', '/artifacts/{artifactId}/download', '/feeds/electron/{product}/{file}', '/feeds/tauri/{product}/{target}/{arch}/{currentVersion}', '/feeds/download/{product}/{artifactId}/{filename}'].includes(route)) expect(operation.security, route).toEqual([{ LicenseKey: [] }]);
        else expect(operation.security, `${method} ${route}`).toEqual([]);
        expect([...exercised].some((e) => e.startsWith(`${method} ${route} 200`)), `${method} ${route} 200 exercised`).toBe(true);
      }
    }
  });
});
