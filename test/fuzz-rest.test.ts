import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';
import { hostileValue } from './support/hostile.js';
import { canonicalLicenseKey, IMPORTED_KEY_MAX_LENGTH, IMPORTED_KEY_MIN_LENGTH } from '../server/src/crypto/license-key.js';

// Hostile bodies on every public route never give a 5xx, and every error has the documented shape.
// Over HTTP on the harness's loopback server (the production handler). FUZZ_REST_BODIES overrides the count per route
// (default 3,000). Each route is fuzzed from a template with its real fields that the route is first shown to accept
// (expectTemplateAccepted).
const RUNS = Number(process.env.FUZZ_REST_BODIES ?? 3_000);

let t: TestApp;
let key: string;
let floatingKey: string;
/** The request schema of each public route, from the OpenAPI document (generated from the schemas that validate). */
let openapi: { paths: Record<string, { post?: { requestBody?: { content: Record<string, { schema: { $ref?: string } }> } } }>; components: { schemas: Record<string, { properties?: Record<string, { deprecated?: boolean }> }> } };
beforeAll(async () => {
  t = await startTestApp();
  const { tenant, product, key: nodeKey } = await t.seedBasic({ maxActivations: 1_000_000 });
  key = nodeKey;
  floatingKey = (await t.seedLicense(tenant.id, product.id, { floatingSeats: 1_000_000 })).key;
  openapi = (await t.get('/api/v1/openapi.json')).json;
});
afterAll(async () => {
  await t?.close();
});

/**
 * A field whose value is made anew for each body (a nonce is spent once, a checked-in session is over, a
 * deactivated device is no longer active): `fresh('nonce')` in a template, `fresh` in the route says how.
 */
const fresh = (field: string) => `<fresh ${field}>`;

interface Route {
  path: string;
  /** A valid body with the route's real fields (server/src/rest/v1/*.ts, docs/integrate/rest-api.md "Public licensing API (`/api/v1`)"). */
  template: Record<string, unknown>;
  fresh?: Record<string, () => Promise<unknown>>;
  /** The answer the template gets: accepted, not a rejection. */
  accepted: (json: any) => boolean;
}

/** The body text with each fresh field still in it (a mutation may have replaced or dropped it) made anew. */
async function materialize(json: string, route: Route) {
  for (const [field, make] of Object.entries(route.fresh ?? {})) {
    const marker = JSON.stringify(fresh(field));
    if (json.includes(marker)) json = json.replace(marker, JSON.stringify(await make()));
  }
  return json;
}

/**
 * Before any fuzzing: the template names exactly the route's documented, non-deprecated fields (a misspelt one,
 * which the schema would silently strip, fails here) and is accepted as it is. So the fuzzing below starts from
 * a body that reaches the route's real work.
 */
async function expectTemplateAccepted(route: Route) {
  const ref = openapi.paths[route.path.replace(/^\/api\/v1/, '')]?.post?.requestBody?.content['application/json'].schema.$ref;
  const properties = openapi.components.schemas[ref!.replace('#/components/schemas/', '')].properties!;
  const documented = Object.entries(properties).filter(([, property]) => !property.deprecated).map(([field]) => field);
  expect(Object.keys(route.template).sort(), `${route.path}: the template's fields`).toEqual(documented.sort());
  const body = await materialize(JSON.stringify(route.template), route);
  const response = await t.post(route.path, body);
  expect(response.status, `${route.path} ${body} → ${response.text}`).toBe(200);
  expect(route.accepted(response.json), `${route.path} ${body} → ${response.text}`).toBe(true);
}

/** Bodies that mostly look like the route's input, with some fields replaced by hostile values or extra keys. */
function bodies(template: Record<string, unknown>): fc.Arbitrary<string> {
  const fields = Object.keys(template);
  const mutated = fc
    .record({
      replace: fc.dictionary(fc.constantFrom(...fields), hostileValue, { maxKeys: fields.length }),
      drop: fc.subarray(fields, { maxLength: 1 }),
      extra: fc.dictionary(fc.constantFrom('__proto__', 'constructor', 'prototype', 'extra', 'toString'), hostileValue, { maxKeys: 2 }),
    })
    .map(({ replace, drop, extra }) => {
      const body: Record<string, unknown> = { ...template };
      for (const [field, value] of Object.entries(replace)) body[field] = value;
      for (const field of drop) delete body[field];
      let json = JSON.stringify(body);
      // Own "__proto__" keys survive only in the raw text.
      for (const [name, value] of Object.entries(extra)) json = json.replace(/^\{/, `{${JSON.stringify(name)}:${JSON.stringify(value) ?? 'null'},`);
      return json;
    });
  const deep = fc.nat(5000).map((n) => '['.repeat(n) + ']'.repeat(n));
  return fc.oneof(
    { arbitrary: mutated, weight: 8 },
    { arbitrary: hostileValue.map((value) => JSON.stringify(value) ?? 'null'), weight: 1 },
    { arbitrary: fc.oneof(fc.string(), deep), weight: 1 },
  );
}

const ERROR_CODES = ['InvalidRequest', 'NonceRequired', 'NonceInvalid', 'RateLimited', 'NotFound', 'Unauthorized', 'Conflict', 'PayloadTooLarge'];

async function fuzz(route: Route) {
  await expectTemplateAccepted(route);
  await fc.assert(
    fc.asyncProperty(bodies(route.template), async (generated) => {
      const body = await materialize(generated, route);
      const response = await t.postLean(route.path, body);
      expect(response.status, `${route.path} ${body.slice(0, 300)} → ${response.text.slice(0, 300)}`).toBeLessThan(500);
      if (response.status >= 400) {
        expect(response.json?.error, response.text).toMatchObject({ code: expect.any(String), message: expect.any(String), requestId: expect.any(String) });
        expect(ERROR_CODES, response.text).toContain(response.json.error.code);
      }
    }),
    { numRuns: RUNS },
  );
}

const DEVICE = 'fuzz-device-0123456789abcdef';
let serial = 0;
const activatedDevice = async () => {
  const deviceId = `fuzz-deactivate-${++serial}`;
  expect((await t.activate({ licenseKey: key, deviceId })).json.isValid).toBe(true);
  return deviceId;
};
const checkedOutSession = async (deviceId?: string) => {
  const response = await t.post('/api/v1/float/checkout', { licenseKey: floatingKey, ...(deviceId && { deviceId }) });
  expect(response.json.isValid, response.text).toBe(true);
  return response.json.sessionToken as string;
};

describe(`public API under hostile bodies (${RUNS} per route, each from a template it accepts)`, { timeout: 900_000 }, () => {
  it('activate', () =>
    fuzz({
      path: '/api/v1/activate',
      // product: the license's own (seedBasic's), so the unmutated body passes the product check and takes the seat.
      template: { licenseKey: key, nonce: fresh('nonce'), deviceId: DEVICE, deviceName: 'Fuzz box', version: '1.0.0', userEmail: 'user@customer.test', product: 'Acme Studio' },
      fresh: { nonce: () => t.nonce() },
      accepted: (json) => json.isValid === true,
    }));
  it('deactivate', () =>
    fuzz({ path: '/api/v1/deactivate', template: { licenseKey: key, deviceId: fresh('deviceId') }, fresh: { deviceId: activatedDevice }, accepted: (json) => json.deactivated === true }));
  it('validate', () =>
    fuzz({ path: '/api/v1/validate', template: { licenseKey: key, version: '1.0.0', deviceId: DEVICE, requireActivation: false, challenge: 'fuzz-challenge' }, accepted: (json) => json.isValid === true }));
  it('validate, device-scoped (requireActivation)', async () => {
    // The device holds a seat, so the activation lookup (and its lastSeenAt write) runs for the unmutated fields.
    expect((await t.activate({ licenseKey: key, deviceId: DEVICE })).json.isValid).toBe(true);
    await fuzz({
      path: '/api/v1/validate',
      template: { licenseKey: key, version: '1.0.0', deviceId: DEVICE, requireActivation: true, challenge: 'fuzz-challenge' },
      accepted: (json) => json.isValid === true,
    });
  });
  it('nonce (query and body ignored)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme' }), async (query) => {
        const response = await t.request('GET', `/api/v1/nonce?x=${encodeURIComponent(query)}%00`);
        expect(response.status).toBeLessThan(500);
      }),
      { numRuns: RUNS },
    );
  });
  it('float checkout', () =>
    fuzz({
      path: '/api/v1/float/checkout',
      template: { licenseKey: floatingKey, deviceId: DEVICE, deviceName: 'Fuzz box', version: '1.0.0', product: 'Acme Studio' },
      accepted: (json) => json.isValid === true,
    }));
  it('float heartbeat', async () => {
    // A session of its own device, so the checkout fuzzing (on DEVICE) never replaces it; the test clock stands still, so its lease never lapses.
    const sessionToken = await checkedOutSession('fuzz-heartbeat-device');
    await fuzz({ path: '/api/v1/float/heartbeat', template: { sessionToken }, accepted: (json) => json.isValid === true });
  });
  it('float checkin', () =>
    fuzz({ path: '/api/v1/float/checkin', template: { sessionToken: fresh('sessionToken') }, fresh: { sessionToken: () => checkedOutSession() }, accepted: (json) => json.checkedIn === true }));
  it('license file', async () => {
    expect((await t.activate({ licenseKey: key, deviceId: DEVICE })).json.isValid).toBe(true);
    await fuzz({ path: '/api/v1/license-file', template: { licenseKey: key, deviceId: DEVICE, encrypt: true }, accepted: (json) => json.isValid === true && typeof json.licenseFile === 'string' });
  });
  it('meter', () =>
    fuzz({
      path: '/api/v1/meter',
      template: { licenseKey: key, event: 'api.calls', quantity: 1, timestamp: t.clock.now().toISOString(), idempotencyKey: fresh('idempotencyKey') },
      fresh: { idempotencyKey: async () => `fuzz-usage-${++serial}` },
      accepted: (json) => json.isValid === true,
    }));
});

describe('imported license keys (a product with allowImportedKeys)', { timeout: 900_000 }, () => {
  const KEY_RUNS = Number(process.env.FUZZ_IMPORTED_KEYS ?? 80);
  const printable = fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code));
  const space = fc.constantFrom(' ', '\t', '\n', '\r\n', '');
  /** Every allowed shape: 8–256 printable ASCII characters (a Keyforge-shaped one included), white space around it or not. */
  const importedKey = fc.tuple(space, fc.string({ unit: printable, minLength: IMPORTED_KEY_MIN_LENGTH, maxLength: IMPORTED_KEY_MAX_LENGTH }), space);
  /** What is no key: too short or long, white space or a control character inside, non-ASCII; or anything at all that is none. */
  const notAKey = fc.oneof(
    fc.string({ unit: printable, maxLength: IMPORTED_KEY_MIN_LENGTH - 1 }),
    fc.string({ unit: printable, minLength: IMPORTED_KEY_MAX_LENGTH + 1, maxLength: 2 * IMPORTED_KEY_MAX_LENGTH }),
    fc
      .tuple(fc.string({ unit: printable, minLength: 4, maxLength: 100 }), fc.constantFrom(' ', '\t', '\u0000', '\u0007', '\u007f', 'é', '\u00a0', '\u2028', '🔑', '\uFFFD'), fc.string({ unit: printable, minLength: 4, maxLength: 100 }))
      .map(([a, bad, b]) => a + bad + b),
    fc.string({ unit: 'binary', maxLength: 400 }),
  ).filter((text) => canonicalLicenseKey(text) === null);
  let productId = '';
  let tenantId = '';
  const created = new Set<string>();
  beforeAll(async () => {
    const license = await t.prisma.license.findFirstOrThrow({ select: { tenantId: true } });
    tenantId = license.tenantId;
    productId = (await t.seedProduct(tenantId, 'Imported Keys')).id;
    await t.prisma.product.update({ where: { id: productId }, data: { allowImportedKeys: true } });
  });

  it(`round-trip through create → activate → validate (${KEY_RUNS} keys)`, async () => {
    await fc.assert(
      fc.asyncProperty(importedKey, async ([before, text, after]) => {
        const canonical = canonicalLicenseKey(text)!;
        if (!created.has(canonical)) {
          const { key } = await t.seedLicense(tenantId, productId, { maxActivations: 1000 }, { key: `${before}${text}${after}` });
          expect(key).toBe(canonical);
          created.add(canonical);
        }
        const sent = `${before}${text}${after}`;
        const activated = await t.activate({ licenseKey: sent, deviceId: 'fuzz-imported' });
        expect(activated.json?.isValid, `${JSON.stringify(sent)} → ${activated.text}`).toBe(true);
        const validated = await t.postLean('/api/v1/validate', JSON.stringify({ licenseKey: sent, deviceId: 'fuzz-imported', requireActivation: true }));
        expect(validated.json?.isValid, `${JSON.stringify(sent)} → ${validated.text}`).toBe(true);
      }),
      { numRuns: KEY_RUNS },
    );
  });

  it(`what is no key gets 400 InvalidRequest on every route that takes one, never a 5xx (${KEY_RUNS} inputs)`, async () => {
    await fc.assert(
      fc.asyncProperty(notAKey, fc.constantFrom('/api/v1/validate', '/api/v1/activate', '/api/v1/deactivate', '/api/v1/float/checkout', '/api/v1/meter', '/api/v1/license-file'), async (licenseKey, path) => {
        const body = { licenseKey, deviceId: 'fuzz-imported', event: 'api.calls', quantity: 1, nonce: 'n'.repeat(43) };
        const response = await t.postLean(path, JSON.stringify(body));
        expect(response.status, `${path} ${JSON.stringify(licenseKey)} → ${response.text.slice(0, 300)}`).toBe(400);
        expect(response.json.error).toMatchObject({ code: 'InvalidRequest', fields: { licenseKey: expect.any(String) } });
      }),
      { numRuns: KEY_RUNS },
    );
  });
});
