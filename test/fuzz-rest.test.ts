import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';
import { hostileString, hostileValue } from './support/hostile.js';

// Issue 12 item 6: hostile bodies on every public route never give a 5xx, and every error has the documented shape.
// Over HTTP on the harness's loopback server (the production handler). FUZZ_REST_BODIES overrides the count per route (default 10,000).
const RUNS = Number(process.env.FUZZ_REST_BODIES ?? 10_000);

let t: TestApp;
let key: string;
let floatingKey: string;
beforeAll(async () => {
  t = await startTestApp();
  const { tenant, product, key: nodeKey } = await t.seedBasic({ maxActivations: 1_000_000 });
  key = nodeKey;
  floatingKey = (await t.seedLicense(tenant.id, product.id, { floatingSeats: 1_000_000 })).key;
});
afterAll(async () => {
  await t?.close();
});

/** Bodies that mostly look like the route's input, with some fields replaced by hostile values or extra keys. */
function bodies(valid: () => Record<string, unknown>): fc.Arbitrary<string> {
  const fields = Object.keys(valid());
  const mutated = fc
    .record({
      replace: fc.dictionary(fc.constantFrom(...fields), hostileValue, { maxKeys: fields.length }),
      drop: fc.subarray(fields, { maxLength: 1 }),
      extra: fc.dictionary(fc.constantFrom('__proto__', 'constructor', 'prototype', 'extra', 'toString'), hostileValue, { maxKeys: 2 }),
    })
    .map(({ replace, drop, extra }) => {
      const body: Record<string, unknown> = { ...valid() };
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

async function fuzz(path: string, valid: () => Record<string, unknown>) {
  await fc.assert(
    fc.asyncProperty(bodies(valid), async (body) => {
      // A fresh nonce per body, so activate gets past the nonce check and reaches the database.
      if (body.includes('__NONCE__')) body = body.replace('__NONCE__', await t.nonce());
      const response = await t.post(path, body);
      expect(response.status, `${path} ${body.slice(0, 300)} → ${response.text.slice(0, 300)}`).toBeLessThan(500);
      if (response.status >= 400) {
        expect(response.json?.error, response.text).toMatchObject({ code: expect.any(String), message: expect.any(String), requestId: expect.any(String) });
        expect(ERROR_CODES, response.text).toContain(response.json.error.code);
      }
    }),
    { numRuns: RUNS },
  );
}

const device = () => ({ deviceId: 'fuzz-device-0123456789abcdef', deviceName: 'Fuzz box', appVersion: '1.0.0' });

describe(`public API under hostile bodies (${RUNS} per route)`, { timeout: 900_000 }, () => {
  it('activate', () => fuzz('/api/v1/activate', () => ({ licenseKey: key, nonce: '__NONCE__', ...device() })));
  it('deactivate', () => fuzz('/api/v1/deactivate', () => ({ licenseKey: key, deviceId: 'fuzz-device-0123456789abcdef' })));
  it('validate', () => fuzz('/api/v1/validate', () => ({ licenseKey: key, challenge: 'fuzz-challenge', nonce: 'fuzz-challenge', ...device() })));
  it('validate, device-scoped (requireActivation)', async () => {
    // The device holds a seat, so the activation lookup (and its lastSeenAt write) runs for the unmutated fields.
    expect((await t.activate({ licenseKey: key, deviceId: device().deviceId })).json.isValid).toBe(true);
    await fuzz('/api/v1/validate', () => ({ licenseKey: key, requireActivation: true, ...device() }));
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
  it('float checkout', () => fuzz('/api/v1/float/checkout', () => ({ licenseKey: floatingKey, ...device(), idempotencyKey: 'idem-1' })));
  it('float heartbeat', () => fuzz('/api/v1/float/heartbeat', () => ({ sessionToken: 'not-a-token', deviceId: 'fuzz-device-0123456789abcdef' })));
  it('float checkin', () => fuzz('/api/v1/float/checkin', () => ({ sessionToken: 'not-a-token', deviceId: 'fuzz-device-0123456789abcdef' })));
  it('meter', () => fuzz('/api/v1/meter', () => ({ licenseKey: key, deviceId: 'fuzz-device-0123456789abcdef', event: 'api.calls', quantity: 1, idempotencyKey: 'idem-2' })));
});
