import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalJWKSet, jwtVerify, decodeProtectedHeader } from 'jose';
import { LAST_SEEN_INTERVAL_MS } from '../server/src/services/licenses/activations.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';

let t: TestApp;
const clock = new TestClock();
let tenantId: string;
let productId: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  const tenant = await t.seedTenant();
  tenantId = tenant.id;
  productId = (await t.seedProduct(tenantId)).id;
});
afterAll(() => t.close());

const validate = (body: unknown) => t.post('/api/v1/validate', body);

describe('POST /api/v1/validate', () => {
  it('returns every field of a valid license and changes no counter', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId, {
      maxActivations: 3,
      expiresAt: new Date(clock.now().getTime() + 40 * DAY),
      features: ['export', 'sync'],
      customFields: { plan: 'pro', seats: 'team' },
      minVersion: '1.0.0',
      maxVersion: '2.9.9',
      offlineGraceDays: 7,
      gracePeriodDays: 3,
      maintenanceExpiresAt: new Date('2026-12-31T00:00:00.000Z'),
    });
    await t.activate({ licenseKey: key, deviceId: 'device-1' });
    const before = await t.prisma.license.findUniqueOrThrow({ where: { id: license.id } });

    const response = await validate({ licenseKey: key, version: '2.1.0' });
    expect(response.status).toBe(200);
    const body = response.json;
    expect(body).toEqual({
      isValid: true,
      errorCode: null,
      productName: 'Acme Studio',
      remainingActivations: 2,
      expiresAt: new Date(clock.now().getTime() + 40 * DAY).toISOString(),
      customFields: { plan: 'pro', seats: 'team' },
      features: ['export', 'sync'],
      isTrial: false,
      nodeLocked: false,
      offlineGraceDays: 7,
      vendorWarning: null,
      minVersion: '1.0.0',
      maxVersion: '2.9.9',
      bundleProducts: null,
      isInGracePeriod: false,
      maintenanceExpiresAt: '2026-12-31T00:00:00.000Z',
      offlineCacheToken: expect.any(String),
    });
    expect(body).not.toHaveProperty('message');
    expect(body).not.toHaveProperty('trialDaysRemaining');

    for (let i = 0; i < 5; i++) await validate({ licenseKey: key });
    const after = await t.prisma.license.findUniqueOrThrow({ where: { id: license.id } });
    expect(after.currentActivations).toBe(before.currentActivations);
    expect(after.updatedAt).toEqual(before.updatedAt);
    expect(await t.prisma.activation.count({ where: { licenseId: license.id } })).toBe(1);
  });

  it('answers an unknown key of any format with HTTP 200, isValid false, message and LicenseNotFound', async () => {
    for (const licenseKey of ['ACME-AAAA-BBBB-CCCC-DDDD', 'not-a-key', 'ACME-0000-1111-OOOO-IIII']) {
      const response = await validate({ licenseKey });
      expect(response.status).toBe(200);
      expect(response.json).toEqual({ isValid: false, message: 'License key not found.', errorCode: 'LicenseNotFound' });
    }
  });

  it('answers what is no key of any format with 400 InvalidRequest on the licenseKey field', async () => {
    for (const licenseKey of ['not a key', 'short', 'ctrl\u0001char-1234', 'ünïcode-1234', 'k'.repeat(400)]) {
      const response = await validate({ licenseKey });
      expect(response.status, licenseKey).toBe(400);
      expect(response.json.error).toMatchObject({ code: 'InvalidRequest', fields: { licenseKey: expect.stringMatching(/is not a license key|Too big/) } });
    }
  });

  it('ignores case and white space in the key', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    const response = await validate({ licenseKey: `  ${key.toLowerCase().replace(/-/g, ' - ')}\n` });
    expect(response.json.isValid).toBe(true);
  });

  it('refuses a revoked license', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId);
    await t.prisma.license.update({ where: { id: license.id }, data: { status: 'revoked', revokedAt: clock.now() } });
    const response = await validate({ licenseKey: key });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ isValid: false, errorCode: 'LicenseRevoked', message: expect.stringContaining('revoked'), offlineCacheToken: null });
  });

  it('refuses an expired license and reports the grace period', async () => {
    const expiresAt = new Date(clock.now().getTime() + 2 * DAY);
    const { key } = await t.seedLicense(tenantId, productId, { expiresAt, gracePeriodDays: 5 });
    const { key: noGraceKey } = await t.seedLicense(tenantId, productId, { expiresAt });
    const local = new TestClock(clock.now().getTime());
    const at = async (offsetDays: number, licenseKey = key) => {
      clock.set(new Date(expiresAt.getTime() + offsetDays * DAY).toISOString());
      return (await validate({ licenseKey })).json;
    };
    try {
      expect(await at(-1)).toMatchObject({ isValid: true, isInGracePeriod: false });
      expect(await at(0)).toMatchObject({ isValid: false, errorCode: 'LicenseExpired', isInGracePeriod: true, offlineCacheToken: null });
      expect(await at(4.9)).toMatchObject({ isValid: false, errorCode: 'LicenseExpired', isInGracePeriod: true });
      expect(await at(5.1)).toMatchObject({ isValid: false, errorCode: 'LicenseExpired', isInGracePeriod: false });
      expect(await at(1, noGraceKey)).toMatchObject({ isValid: false, errorCode: 'LicenseExpired', isInGracePeriod: null });
      expect((await at(1)).message).toMatch(/expired/);
    } finally {
      clock.set(local.now().toISOString());
    }
  });

  it('treats a license without expiresAt as perpetual', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    const start = clock.now().toISOString();
    clock.advance(3650 * DAY);
    try {
      expect((await validate({ licenseKey: key })).json).toMatchObject({ isValid: true, expiresAt: null, isInGracePeriod: null });
    } finally {
      clock.set(start);
    }
  });

  it('reports trial days remaining only for trials', async () => {
    const { key } = await t.seedLicense(tenantId, productId, { isTrial: true, expiresAt: new Date(clock.now().getTime() + 13.5 * DAY) });
    const body = (await validate({ licenseKey: key })).json;
    expect(body).toMatchObject({ isValid: true, isTrial: true, trialDaysRemaining: 14 });
  });

  it('checks the version against minVersion and maxVersion, and skips the check when omitted', async () => {
    const { key } = await t.seedLicense(tenantId, productId, { minVersion: '2.0.0', maxVersion: '3.5.0' });
    const check = async (version?: string) => (await validate({ licenseKey: key, ...(version ? { version } : {}) })).json;
    expect(await check('1.9.9')).toMatchObject({ isValid: false, errorCode: 'VersionNotSupported', message: expect.stringContaining('minimum') });
    expect(await check('3.5.1')).toMatchObject({ isValid: false, errorCode: 'VersionNotSupported', message: expect.stringContaining('maximum') });
    expect(await check('2.0.0')).toMatchObject({ isValid: true });
    expect(await check('3.5')).toMatchObject({ isValid: true });
    expect(await check('v3.0.0')).toMatchObject({ isValid: true });
    expect(await check()).toMatchObject({ isValid: true });
    const bad = await validate({ licenseKey: key, version: 'banana' });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: 'InvalidRequest', message: expect.stringContaining('version') });
  });

  it('lists the member products of a bundle license', async () => {
    await t.seedProduct(tenantId, 'Acme Paint');
    await t.seedProduct(tenantId, 'Acme Cut');
    const bundle = await t.seedProduct(tenantId, 'Acme Suite', ['Acme Paint', 'Acme Cut']);
    const { key } = await t.seedLicense(tenantId, bundle.id);
    expect((await validate({ licenseKey: key })).json).toMatchObject({ isValid: true, productName: 'Acme Suite', bundleProducts: ['Acme Cut', 'Acme Paint'] });
  });

  it('warns when the vendor subscription ends within 14 days or has ended', async () => {
    const now = clock.now().getTime();
    const cases: [Date | null, RegExp | null][] = [
      [null, null],
      [new Date(now + 30 * DAY), null],
      [new Date(now + 10 * DAY), /ends on/],
      [new Date(now - DAY), /ended on/],
    ];
    for (const [index, [subscriptionEndsAt, expected]] of cases.entries()) {
      const tenant = await t.seedTenant({ name: `Vendor ${index}`, keyPrefix: `VEND${index}`, subscriptionEndsAt });
      const product = await t.seedProduct(tenant.id);
      const { key } = await t.seedLicense(tenant.id, product.id);
      const body = (await validate({ licenseKey: key })).json;
      expect(body.isValid).toBe(true);
      if (expected) expect(body.vendorWarning).toMatch(expected);
      else expect(body.vendorWarning).toBeNull();
    }
  });
});

describe('offlineCacheToken', () => {
  async function jwks() {
    const response = await t.get('/.well-known/jwks.json');
    expect(response.status).toBe(200);
    return createLocalJWKSet(response.json);
  }

  it('verifies with the published JWKS and carries the entitlement, device and client challenge', async () => {
    const expiresAt = new Date(clock.now().getTime() + 100 * DAY);
    const { key, license } = await t.seedLicense(tenantId, productId, { expiresAt, offlineGraceDays: 10, features: ['pro'], nodeLocked: true });
    const body = (await validate({ licenseKey: key, deviceId: 'hw-123', challenge: 'client-challenge-42' })).json;
    const token: string = body.offlineCacheToken;
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'EdDSA', kid: expect.any(String) });
    const { payload } = await jwtVerify(token, await jwks(), { algorithms: ['EdDSA'], issuer: 'http://licensing.test', currentDate: clock.now() });
    expect(payload).toMatchObject({
      sub: license.id,
      product: 'Acme Studio',
      features: ['pro'],
      licenseExpiresAt: expiresAt.toISOString(),
      isTrial: false,
      nodeLocked: true,
      device: 'hw-123',
      nonce: 'client-challenge-42',
      iat: Math.floor(clock.now().getTime() / 1000),
      exp: Math.floor((clock.now().getTime() + 10 * DAY) / 1000),
    });
    expect(token).not.toContain(key);
    expect(JSON.stringify(payload)).not.toContain(key.split('-')[1]);
  });

  it('still accepts the deprecated body name nonce for the challenge; both with different values are refused', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    const verify = async (token: string) => (await jwtVerify(token, await jwks(), { algorithms: ['EdDSA'], currentDate: clock.now() })).payload;
    expect(await verify((await validate({ licenseKey: key, nonce: 'old-name-7' })).json.offlineCacheToken)).toMatchObject({ nonce: 'old-name-7' });
    expect(await verify((await validate({ licenseKey: key, challenge: 'same', nonce: 'same' })).json.offlineCacheToken)).toMatchObject({ nonce: 'same' });
    const both = await validate({ licenseKey: key, challenge: 'one', nonce: 'two' });
    expect(both.status).toBe(400);
    expect(both.json.error).toMatchObject({ code: 'InvalidRequest', message: expect.stringContaining('challenge') });
  });

  it('never outlives the license', async () => {
    const expiresAt = new Date(clock.now().getTime() + 2 * DAY);
    const { key } = await t.seedLicense(tenantId, productId, { expiresAt, offlineGraceDays: 30 });
    const token = (await validate({ licenseKey: key })).json.offlineCacheToken;
    const { payload } = await jwtVerify(token, await jwks(), { algorithms: ['EdDSA'], currentDate: clock.now() });
    expect(payload.exp).toBe(Math.floor(expiresAt.getTime() / 1000));
  });

  it('fails verification when any byte of it is changed', async () => {
    const { key } = await t.seedLicense(tenantId, productId, { offlineGraceDays: 3 });
    const token: string = (await validate({ licenseKey: key })).json.offlineCacheToken;
    const keySet = await jwks();
    await expect(jwtVerify(token, keySet, { algorithms: ['EdDSA'], currentDate: clock.now() })).resolves.toMatchObject({ protectedHeader: { alg: 'EdDSA' }, payload: { exp: expect.any(Number) } });
    const segments = token.split('.');
    let tampered = 0;
    for (const [index, segment] of segments.entries()) {
      const bytes = Buffer.from(segment, 'base64url');
      for (let i = 0; i < bytes.length; i++) {
        const copy = Buffer.from(bytes);
        copy[i] ^= 0x01;
        const forged = segments.map((s, j) => (j === index ? copy.toString('base64url') : s)).join('.');
        await expect(jwtVerify(forged, keySet, { algorithms: ['EdDSA'], currentDate: clock.now() })).rejects.toThrow();
        tampered++;
      }
    }
    expect(tampered).toBeGreaterThan(100);
  });

  it('is refused when verified with another algorithm pinned', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    const token = (await validate({ licenseKey: key })).json.offlineCacheToken;
    await expect(jwtVerify(token, await jwks(), { algorithms: ['RS256'], currentDate: clock.now() })).rejects.toThrow();
  });

  it('publishes only public Ed25519 keys', async () => {
    const response = await t.get('/.well-known/jwks.json');
    expect(response.json.keys.length).toBeGreaterThanOrEqual(1);
    for (const jwk of response.json.keys) {
      expect(jwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig', kid: expect.any(String), x: expect.any(String) });
      expect(jwk).not.toHaveProperty('d');
    }
  });
});

// Validate's device-scoped opt-in (docs/integrate/rest-api.md "POST /api/v1/validate", `requireActivation`): entitlement only by default;
// with the opt-in, a device without an active activation answers DeviceNotActivated, and lastSeenAt is kept current
// with at most one write per device per LAST_SEEN_INTERVAL_MS.
const claimsOf = async (token: string) => {
  const jwks = (await t.get('/.well-known/jwks.json')).json;
  return (await jwtVerify(token, createLocalJWKSet(jwks), { algorithms: ['EdDSA'], currentDate: clock.now() })).payload;
};
const lastSeen = async (licenseId: string, deviceId: string) =>
  (await t.prisma.activation.findFirstOrThrow({ where: { licenseId, deviceId } })).lastSeenAt.toISOString();

describe('POST /api/v1/validate with requireActivation', () => {
  it('is valid for an activated device, and its token attests the device', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    expect((await t.activate({ licenseKey: key, deviceId: 'device-active' })).json.isValid).toBe(true);

    const response = await validate({ licenseKey: key, deviceId: 'device-active', requireActivation: true });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ isValid: true, errorCode: null, productName: 'Acme Studio' });
    const claims = await claimsOf(response.json.offlineCacheToken);
    expect(claims).toMatchObject({ device: 'device-active', deviceActivated: true });
  });

  it('answers DeviceNotActivated for a deactivated device and for one never activated; plain validate still answers valid', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    await t.activate({ licenseKey: key, deviceId: 'device-gone' });
    expect((await t.post('/api/v1/deactivate', { licenseKey: key, deviceId: 'device-gone' })).json.deactivated).toBe(true);

    for (const deviceId of ['device-gone', 'device-never-seen']) {
      const response = await validate({ licenseKey: key, deviceId, requireActivation: true });
      expect(response.status).toBe(200);
      expect(response.json).toMatchObject({ isValid: false, errorCode: 'DeviceNotActivated', offlineCacheToken: null, productName: 'Acme Studio' });
      expect(response.json.message).toMatch(/no activation/);

      // The default stays entitlement only (the device is bound into the token, not checked).
      const plain = await validate({ licenseKey: key, deviceId });
      expect(plain.json).toMatchObject({ isValid: true, errorCode: null });
      const claims = await claimsOf(plain.json.offlineCacheToken);
      expect(claims.device).toBe(deviceId);
      expect(claims).not.toHaveProperty('deviceActivated');
    }
  });

  it('does not count an activation of the same device on another license', async () => {
    const { key: other } = await t.seedLicense(tenantId, productId);
    const { key } = await t.seedLicense(tenantId, productId);
    await t.activate({ licenseKey: other, deviceId: 'device-elsewhere' });
    expect((await validate({ licenseKey: key, deviceId: 'device-elsewhere', requireActivation: true })).json.errorCode).toBe('DeviceNotActivated');
  });

  it('answers the license rejection first (revoked, suspended) and LicenseNotFound for an unknown key', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId);
    await t.prisma.license.update({ where: { id: license.id }, data: { status: 'revoked', revokedAt: clock.now() } });
    expect((await validate({ licenseKey: key, deviceId: 'device-x', requireActivation: true })).json.errorCode).toBe('LicenseRevoked');
    expect((await validate({ licenseKey: 'ACME-AAAA-BBBB-CCCC-DDDD', deviceId: 'device-x', requireActivation: true })).json).toEqual({
      isValid: false,
      message: 'License key not found.',
      errorCode: 'LicenseNotFound',
    });
  });

  it('refuses requireActivation without a deviceId (400 naming the field) and a non-boolean flag', async () => {
    const { key } = await t.seedLicense(tenantId, productId);
    const missing = await validate({ licenseKey: key, requireActivation: true });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ code: 'InvalidRequest', fields: { deviceId: expect.any(String) } });
    const notBoolean = await validate({ licenseKey: key, deviceId: 'd', requireActivation: 'yes' });
    expect(notBoolean.status).toBe(400);
    expect(notBoolean.json.error.fields).toHaveProperty('requireActivation');
    // false is the default: no device check.
    expect((await validate({ licenseKey: key, deviceId: 'nobody', requireActivation: false })).json.isValid).toBe(true);
  });

  it('moves lastSeenAt at most once per interval, and only for device-scoped validates', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId);
    await t.activate({ licenseKey: key, deviceId: 'device-seen' });
    const activatedAt = await lastSeen(license.id, 'device-seen');
    const scoped = () => validate({ licenseKey: key, deviceId: 'device-seen', requireActivation: true });

    // Within the interval: no write, however many validates.
    clock.advance(LAST_SEEN_INTERVAL_MS - 1000);
    for (let i = 0; i < 5; i++) expect((await scoped()).json.isValid).toBe(true);
    expect(await lastSeen(license.id, 'device-seen')).toBe(activatedAt);

    // Past it: one write, to the request's time; the next validates within the new interval write nothing.
    clock.advance(2000);
    const firstAfter = clock.now().toISOString();
    const concurrent = await Promise.all(Array.from({ length: 5 }, scoped));
    expect(concurrent.every((r) => r.json.isValid)).toBe(true);
    expect(await lastSeen(license.id, 'device-seen')).toBe(firstAfter);
    clock.advance(60_000);
    await scoped();
    expect(await lastSeen(license.id, 'device-seen')).toBe(firstAfter);

    // Plain validate never writes.
    clock.advance(LAST_SEEN_INTERVAL_MS * 3);
    await validate({ licenseKey: key, deviceId: 'device-seen' });
    expect(await lastSeen(license.id, 'device-seen')).toBe(firstAfter);
    await scoped();
    expect(await lastSeen(license.id, 'device-seen')).toBe(clock.now().toISOString());
  });
});
