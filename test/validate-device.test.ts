import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { LAST_SEEN_INTERVAL_MS } from '../server/src/services/licenses/activations.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';

// Validate's device-scoped opt-in (README "POST /api/v1/validate", `requireActivation`): entitlement only by default;
// with the opt-in, a device without an active activation answers DeviceNotActivated, and lastSeenAt is kept current
// with at most one write per device per LAST_SEEN_INTERVAL_MS.

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
