import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../server/src/crypto/secrets.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';

let t: TestApp;
const clock = new TestClock();
let tenantId: string;
let productId: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  tenantId = (await t.seedTenant()).id;
  productId = (await t.seedProduct(tenantId)).id;
});
afterAll(() => t.close());

const seats = async (licenseId: string) => {
  const license = await t.prisma.license.findUniqueOrThrow({ where: { id: licenseId } });
  const active = await t.prisma.activation.count({ where: { licenseId, deactivatedAt: null } });
  return { counter: license.currentActivations, active };
};

describe('GET /api/v1/nonce', () => {
  it('returns a fresh single-use nonce, not cacheable', async () => {
    const a = await t.get('/api/v1/nonce');
    const b = await t.get('/api/v1/nonce');
    expect(a.status).toBe(200);
    expect(a.json).toEqual({ nonce: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/) });
    expect(a.json.nonce).not.toBe(b.json.nonce);
    expect(a.headers.get('cache-control')).toBe('no-store');
    // Only a digest is stored.
    expect(await t.prisma.nonce.count({ where: { digest: a.json.nonce } })).toBe(0);
  });
});

describe('POST /api/v1/activate: nonce rules (docs/integrate/rest-api.md "`POST /api/v1/activate`")', () => {
  it('missing nonce → 400 NonceRequired', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    const response = await t.post('/api/v1/activate', { licenseKey: key });
    expect(response.status).toBe(400);
    expect(response.json).toEqual({ error: { code: 'NonceRequired', message: expect.any(String), requestId: response.headers.get('x-request-id') } });
  });

  it('unknown nonce → 422 NonceInvalid and no seat taken', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId);
    const response = await t.post('/api/v1/activate', { licenseKey: key, nonce: 'made-up-nonce' });
    expect(response.status).toBe(422);
    expect(response.json.error).toMatchObject({ code: 'NonceInvalid', requestId: expect.any(String) });
    expect(await seats(license.id)).toEqual({ counter: 0, active: 0 });
  });

  it('reused nonce → 422', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    const nonce = await t.nonce();
    expect((await t.post('/api/v1/activate', { licenseKey: key, nonce, deviceId: 'd1' })).json.isValid).toBe(true);
    const reuse = await t.post('/api/v1/activate', { licenseKey: key, nonce, deviceId: 'd1' });
    expect(reuse.status).toBe(422);
    expect(reuse.json.error.code).toBe('NonceInvalid');
  });

  it('expired nonce (after 5 minutes) → 422; just before → accepted', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    const stale = await t.nonce();
    const fresh = await t.nonce();
    const start = clock.now().toISOString();
    try {
      clock.advance(5 * 60_000 - 1);
      expect((await t.post('/api/v1/activate', { licenseKey: key, nonce: fresh })).json.isValid).toBe(true);
      clock.advance(2);
      const response = await t.post('/api/v1/activate', { licenseKey: key, nonce: stale });
      expect(response.status).toBe(422);
      expect(response.json.error.code).toBe('NonceInvalid');
    } finally {
      clock.set(start);
    }
  });

  it('a nonce used by a rejected activation is spent too', async () => {
    const nonce = await t.nonce();
    expect((await t.post('/api/v1/activate', { licenseKey: 'ACME-AAAA-BBBB-CCCC-DDDD', nonce })).json).toMatchObject({ isValid: false, errorCode: 'LicenseNotFound' });
    const { key } = await t.seedLicense(tenantId, productId);
    expect((await t.post('/api/v1/activate', { licenseKey: key, nonce })).status).toBe(422);
  });
});

describe('POST /api/v1/activate', () => {
  it('activates and returns every documented field', async () => {
    const expiresAt = new Date(clock.now().getTime() + 90 * DAY);
    const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 3, expiresAt, features: ['a'], offlineGraceDays: 14 });
    const response = await t.activate({ licenseKey: key, deviceId: 'dev-1', deviceName: 'Ada’s laptop', version: '1.2.3', userEmail: 'ada@example.com' }, { 'x-forwarded-for': '203.0.113.9' });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      isValid: true,
      productName: 'Acme Studio',
      remainingActivations: 2,
      expiresAt: expiresAt.toISOString(),
      features: ['a'],
      isTrial: false,
      nodeLocked: false,
      offlineGraceDays: 14,
      vendorWarning: null,
    });
    const activation = await t.prisma.activation.findFirstOrThrow({ where: { licenseId: license.id } });
    expect(activation).toMatchObject({ deviceId: 'dev-1', deviceName: 'Ada’s laptop', version: '1.2.3', userEmail: 'ada@example.com', ip: '203.0.113.9', deactivatedAt: null });
    expect(await seats(license.id)).toEqual({ counter: 1, active: 1 });
  });

  it('count-based activations without deviceId each take a seat until SeatsExhausted', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 2 });
    expect((await t.activate({ licenseKey: key })).json).toMatchObject({ isValid: true, remainingActivations: 1 });
    expect((await t.activate({ licenseKey: key })).json).toMatchObject({ isValid: true, remainingActivations: 0 });
    const full = await t.activate({ licenseKey: key });
    expect(full.status).toBe(200);
    expect(full.json).toEqual({ isValid: false, message: expect.stringContaining('2 activations'), errorCode: 'SeatsExhausted' });
    expect(await seats(license.id)).toEqual({ counter: 2, active: 2 });
  });

  it('100 concurrent activations of a 5-seat key: exactly 5 succeed', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 5 });
    const nonces = await Promise.all(Array.from({ length: 100 }, () => t.nonce()));
    const results = await Promise.all(nonces.map((nonce, i) => t.post('/api/v1/activate', { licenseKey: key, nonce, deviceId: `device-${i}` })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    const ok = results.filter((r) => r.json.isValid);
    const exhausted = results.filter((r) => r.json.errorCode === 'SeatsExhausted');
    expect(ok).toHaveLength(5);
    expect(exhausted).toHaveLength(95);
    expect(Math.min(...ok.map((r) => r.json.remainingActivations))).toBe(0);
    expect(await seats(license.id)).toEqual({ counter: 5, active: 5 });
    expect((await t.post('/api/v1/validate', { licenseKey: key })).json.remainingActivations).toBe(0);
  });

  it('node-locked: deviceId required; the same deviceId reuses its seat, even concurrently', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 2, nodeLocked: true });
    const missing = await t.activate({ licenseKey: key });
    expect(missing.json).toEqual({ isValid: false, message: expect.any(String), errorCode: 'DeviceIdRequired' });

    const nonces = await Promise.all(Array.from({ length: 20 }, () => t.nonce()));
    const results = await Promise.all(nonces.map((nonce) => t.post('/api/v1/activate', { licenseKey: key, nonce, deviceId: 'same-machine' })));
    expect(results.every((r) => r.json.isValid === true && r.json.nodeLocked === true)).toBe(true);
    expect(await seats(license.id)).toEqual({ counter: 1, active: 1 });

    expect((await t.activate({ licenseKey: key, deviceId: 'second' })).json.remainingActivations).toBe(0);
    expect((await t.activate({ licenseKey: key, deviceId: 'same-machine' })).json).toMatchObject({ isValid: true, remainingActivations: 0 });
    expect((await t.activate({ licenseKey: key, deviceId: 'third' })).json.errorCode).toBe('SeatsExhausted');
  });

  it('refuses unknown, revoked and expired licenses with HTTP 200 rejections', async () => {
    const { key: revoked, license } = await t.seedLicense(tenantId, productId);
    await t.prisma.license.update({ where: { id: license.id }, data: { status: 'revoked' } });
    const { key: expired } = await t.seedLicense(tenantId, productId, { expiresAt: new Date(clock.now().getTime() - DAY) });
    expect((await t.activate({ licenseKey: 'ACME-ZZZZ-ZZZZ-ZZZZ-ZZZZ' })).json).toEqual({ isValid: false, message: expect.any(String), errorCode: 'LicenseNotFound' });
    expect((await t.activate({ licenseKey: revoked })).json).toEqual({ isValid: false, message: expect.any(String), errorCode: 'LicenseRevoked' });
    expect((await t.activate({ licenseKey: expired })).json).toEqual({ isValid: false, message: expect.any(String), errorCode: 'LicenseExpired' });
  });

  it('product: a key of another product is refused with ProductMismatch before any seat is taken; its product or a bundle containing it activates', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 1 });
    const nonce = await t.nonce();
    const mismatch = await t.post('/api/v1/activate', { licenseKey: key, nonce, deviceId: 'other-app-pc', product: 'Acme Render' });
    expect(mismatch.status).toBe(200);
    expect(mismatch.json).toEqual({ isValid: false, message: expect.stringContaining('"Acme Render"'), errorCode: 'ProductMismatch' });
    expect(await seats(license.id)).toEqual({ counter: 0, active: 0 });
    expect(await t.prisma.activation.count({ where: { licenseId: license.id } })).toBe(0);
    // The nonce is spent, as by every rejection.
    expect((await t.post('/api/v1/activate', { licenseKey: key, nonce, deviceId: 'other-app-pc' })).status).toBe(422);
    // Several names: one of them is the license's product. Names match exactly.
    expect((await t.activate({ licenseKey: key, deviceId: 'pc-1', product: ['acme studio', 'Acme Render'] })).json.errorCode).toBe('ProductMismatch');
    expect((await t.activate({ licenseKey: key, deviceId: 'pc-1', product: ['Acme Render', 'Acme Studio'] })).json).toMatchObject({ isValid: true, remainingActivations: 0 });
    expect(await seats(license.id)).toEqual({ counter: 1, active: 1 });
    // Another product's key is refused as such even when every seat is taken or the license is revoked.
    expect((await t.activate({ licenseKey: key, deviceId: 'pc-2', product: 'Acme Render' })).json.errorCode).toBe('ProductMismatch');

    // A bundle license activates for any of its member products.
    const render = await t.seedProduct(tenantId, 'Acme Render');
    const suite = await t.seedProduct(tenantId, 'Acme Suite 2', ['Acme Render']);
    const bundle = await t.seedLicense(tenantId, suite.id);
    expect((await t.activate({ licenseKey: bundle.key, deviceId: 'pc-3', product: 'Acme Render' })).json).toMatchObject({ isValid: true, productName: 'Acme Suite 2' });
    expect((await t.activate({ licenseKey: bundle.key, deviceId: 'pc-4', product: 'Acme Suite 2' })).json.isValid).toBe(true);
    const member = await t.seedLicense(tenantId, render.id);
    expect((await t.activate({ licenseKey: member.key, deviceId: 'pc-5', product: 'Acme Suite 2' })).json.errorCode).toBe('ProductMismatch');
    expect(await seats(member.license.id)).toEqual({ counter: 0, active: 0 });

    // Malformed: an empty name or list, too many names, not a string → 400 before anything is spent.
    for (const product of ['', [], Array.from({ length: 17 }, (_, i) => `P${i}`), 42, ['Acme Studio', 7]]) {
      const refused = await t.post('/api/v1/activate', { licenseKey: key, nonce: await t.nonce(), deviceId: 'pc-1', product });
      expect(refused.status, JSON.stringify(product)).toBe(400);
      expect(refused.json.error).toMatchObject({ code: 'InvalidRequest', fields: { product: expect.any(String) } });
    }
  });

  it('checks the version bounds', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId, { minVersion: '3.0.0' });
    expect((await t.activate({ licenseKey: key, version: '2.9.0' })).json).toMatchObject({ isValid: false, errorCode: 'VersionNotSupported' });
    expect((await t.activate({ licenseKey: key, version: '3.1.0' })).json).toMatchObject({ isValid: true });
    expect(await seats(license.id)).toEqual({ counter: 1, active: 1 });
  });

  it('reports trialDaysRemaining for a trial', async () => {
    const { key } = await t.seedLicense(tenantId, productId, { isTrial: true, expiresAt: new Date(clock.now().getTime() + 7 * DAY) });
    expect((await t.activate({ licenseKey: key })).json).toMatchObject({ isValid: true, isTrial: true, trialDaysRemaining: 7 });
  });

  it('userEmail becomes the customer email only when the license has none', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId);
    await t.activate({ licenseKey: key, userEmail: 'first@example.com' });
    await t.activate({ licenseKey: key, userEmail: 'second@example.com' });
    expect((await t.prisma.license.findUniqueOrThrow({ where: { id: license.id } })).customerEmail).toBe('first@example.com');

    const { key: owned, license: ownedLicense } = await t.seedLicense(tenantId, productId, { customerEmail: 'buyer@example.com' });
    await t.activate({ licenseKey: owned, userEmail: 'user@example.com' });
    expect((await t.prisma.license.findUniqueOrThrow({ where: { id: ownedLicense.id } })).customerEmail).toBe('buyer@example.com');
    const invalid = await t.activate({ licenseKey: owned, userEmail: 'not-an-email' });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error.fields).toHaveProperty('userEmail');
  });
});

describe('activation_register (the seat statement)', () => {
  // The service decides entitlement on the license it read, then this one statement applies the seat under the row
  // lock only if status and expiry are still as read; otherwise nothing is spent and the service reads again.
  it('refuses a license revoked since the service read it: nothing spent or written; the next attempt is refused', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId);
    const nonce = await t.nonce();
    await t.prisma.license.update({ where: { id: license.id }, data: { status: 'revoked', revokedAt: clock.now() } });
    const [row] = await t.deps.db.sql.query<{ outcome: string }>('SELECT * FROM activation_register($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)', [
      license.id, 'active', null, sha256(nonce), clock.now(), randomUUID(), 'pc-1', null, null, null, null, randomUUID(), '{}',
    ]);
    expect(row.outcome).toBe('changed');
    expect(await seats(license.id)).toEqual({ counter: 0, active: 0 });
    expect(await t.prisma.nonce.findUniqueOrThrow({ where: { digest: sha256(nonce) } })).toMatchObject({ consumedAt: null });
    const response = await t.post('/api/v1/activate', { licenseKey: key, nonce, deviceId: 'pc-1' });
    expect(response.json).toMatchObject({ isValid: false, errorCode: 'LicenseRevoked' });
    expect((await t.post('/api/v1/activate', { licenseKey: key, nonce, deviceId: 'pc-1' })).status).toBe(422); // spent by the rejection
  });
});

describe('POST /api/v1/deactivate', () => {
  it('frees the device seat so another device can activate', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 1, nodeLocked: true });
    expect((await t.activate({ licenseKey: key, deviceId: 'old-pc' })).json.isValid).toBe(true);
    expect((await t.activate({ licenseKey: key, deviceId: 'new-pc' })).json.errorCode).toBe('SeatsExhausted');

    const released = await t.post('/api/v1/deactivate', { licenseKey: key, deviceId: 'old-pc' });
    expect(released.status).toBe(200);
    expect(released.json).toEqual({ deactivated: true, remainingActivations: 1 });
    expect(await seats(license.id)).toEqual({ counter: 0, active: 0 });
    expect(await t.prisma.activation.count({ where: { licenseId: license.id } })).toBe(1); // history kept

    expect((await t.activate({ licenseKey: key, deviceId: 'new-pc' })).json.isValid).toBe(true);
    const again = await t.post('/api/v1/deactivate', { licenseKey: key, deviceId: 'old-pc' });
    expect(again.json).toEqual({ deactivated: false, message: expect.any(String), errorCode: 'ActivationNotFound' });
  });

  it('unknown key → LicenseNotFound; missing deviceId → 400', async () => {
    expect((await t.post('/api/v1/deactivate', { licenseKey: 'ACME-ZZZZ-ZZZZ-ZZZZ-ZZZZ', deviceId: 'x' })).json).toMatchObject({ deactivated: false, errorCode: 'LicenseNotFound' });
    const missing = await t.post('/api/v1/deactivate', { licenseKey: 'ACME-ZZZZ-ZZZZ-ZZZZ-ZZZZ' });
    expect(missing.status).toBe(400);
    expect(missing.json.error.fields).toHaveProperty('deviceId');
  });

  it('concurrent deactivations of one device release one seat', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 3 });
    await t.activate({ licenseKey: key, deviceId: 'a' });
    await t.activate({ licenseKey: key, deviceId: 'b' });
    const results = await Promise.all(Array.from({ length: 10 }, () => t.post('/api/v1/deactivate', { licenseKey: key, deviceId: 'a' })));
    expect(results.filter((r) => r.json.deactivated === true)).toHaveLength(1);
    expect(await seats(license.id)).toEqual({ counter: 1, active: 1 });
  });
});
