import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeRetiredLicenseKeys, reissueLicenseKey } from '../server/src/services/licenses/reissue.js';
import { NO_META } from '../server/src/services/auth/actor.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { adminContext, seedTwoTenants, type SeededTenant } from './support/tenants.js';

// Reissuing a license key (docs/integrate/management-api.md "Licenses" › reissueLicenseKey): a new key for the same license; the old one stops
// at once or after the chosen overlap; activations, usage and history stay; audited; emitted as license.key_reissued.

let t: TestApp;
const clock = new TestClock();
let A: SeededTenant;
let B: SeededTenant;

beforeAll(async () => {
  t = await startTestApp({ clock });
  ({ A, B } = await seedTwoTenants(t));
  const endpoint = await t.gql(
    'mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } } }',
    { input: { url: 'https://hooks.example.com/keyforge', eventTypes: ['LICENSE_KEY_REISSUED'] } },
    { token: A.admin.token },
  );
  expect(endpoint.errors).toBeUndefined();
});
afterAll(() => t.close());

const REISSUE = `mutation($input: ReissueLicenseKeyInput!) {
  reissueLicenseKey(input: $input) { key previousKeyValidUntil license { id keyHint status currentActivations activations(first: 10) { nodes { deviceId active } } } }
}`;
// An admin API key by default: the tests move the clock past an access token's lifetime.
const reissue = (input: Record<string, unknown>, auth: { token?: string; apiKey?: string } = { apiKey: A.adminKey.key }) => t.gql(REISSUE, { input }, auth);
const validate = (licenseKey: string, extra: Record<string, unknown> = {}) => t.post('/api/v1/validate', { licenseKey, ...extra });
const UNKNOWN = { isValid: false, message: 'License key not found.', errorCode: 'LicenseNotFound' };

async function freshLicense(tenant = A) {
  const created = await t.gql(
    'mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key license { id keyHint } } }',
    { input: { productId: tenant.product!.id, maxActivations: 3 } },
    { apiKey: tenant.adminKey.key },
  );
  expect(created.errors).toBeUndefined();
  return created.data.createLicense as { key: string; license: { id: string; keyHint: string } };
}

describe('reissueLicenseKey', () => {
  it('gives the same license a new key; the old one stops at once; seats, usage and history stay', async () => {
    const { key: oldKey, license } = await freshLicense();
    expect((await t.activate({ licenseKey: oldKey, deviceId: 'laptop' })).json.isValid).toBe(true);
    expect((await t.post('/api/v1/meter', { licenseKey: oldKey, event: 'exports', quantity: 3 })).json.isValid).toBe(true);

    const response = await reissue({ id: license.id }, { token: A.admin.token });
    expect(response.errors).toBeUndefined();
    const { key: newKey, previousKeyValidUntil, license: after } = response.data.reissueLicenseKey;
    expect(newKey).toMatch(/^ACME(-[A-Z0-9]{4}){4}$/);
    expect(newKey).not.toBe(oldKey);
    expect(previousKeyValidUntil).toBeNull();
    expect(after).toMatchObject({ id: license.id, keyHint: `ACME-…-${newKey.slice(-4)}`, status: 'ACTIVE', currentActivations: 1, activations: { nodes: [{ deviceId: 'laptop', active: true }] } });

    // The old key answers exactly like an unknown key, on every public route.
    expect((await validate(oldKey)).json).toEqual(UNKNOWN);
    expect((await t.activate({ licenseKey: oldKey, deviceId: 'desktop' })).json).toEqual(UNKNOWN);
    expect((await t.post('/api/v1/meter', { licenseKey: oldKey, event: 'exports', quantity: 1 })).json).toMatchObject(UNKNOWN);

    // The new key is the same license: its seat is still taken (the device-scoped check passes), usage continues.
    expect((await validate(newKey)).json).toMatchObject({ isValid: true, remainingActivations: 2 });
    expect((await validate(newKey, { deviceId: 'laptop', requireActivation: true })).json.isValid).toBe(true);
    expect((await t.post('/api/v1/meter', { licenseKey: newKey, event: 'exports', quantity: 2 })).json).toMatchObject({ isValid: true, total: 5 });

    // Stored as a digest only: the new key is nowhere in the database's license row, the activity entry or the logs.
    const row = await t.prisma.license.findUniqueOrThrow({ where: { id: license.id } });
    expect(JSON.stringify(row)).not.toContain(newKey);
    expect(t.logs.join('')).not.toContain(newKey);
    const entry = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { tenantId: A.tenantId, action: 'ReissueLicenseKey', entityId: license.id } });
    expect(entry).toMatchObject({ actor: A.admin.email, entity: `${license.keyHint} (Acme Studio)` });
    expect(entry.details).toEqual({ before: { keyHint: license.keyHint }, after: { keyHint: after.keyHint, previousKeyValidUntil: null } });
    expect(JSON.stringify(entry)).not.toContain(newKey);

    const [event] = await t.prisma.webhookEvent.findMany({ where: { tenantId: A.tenantId, type: 'license.key_reissued', body: { contains: license.id } } });
    const body = JSON.parse(event.body);
    expect(body).toMatchObject({ type: 'license.key_reissued', data: { licenseId: license.id, keyHint: after.keyHint, changes: entry.details } });
    expect(event.body).not.toContain(newKey);
    expect(event.body).not.toContain(oldKey);
  });

  it('with an overlap, both keys work until it ends; then the old one is unknown', async () => {
    const { key: oldKey, license } = await freshLicense();
    await t.activate({ licenseKey: oldKey, deviceId: 'render-node' });
    const response = await reissue({ id: license.id, overlapHours: 24 });
    expect(response.errors).toBeUndefined();
    const { key: newKey, previousKeyValidUntil } = response.data.reissueLicenseKey;
    expect(previousKeyValidUntil).toBe(new Date(clock.now().getTime() + 24 * 3600_000).toISOString());

    for (const key of [oldKey, newKey]) {
      expect((await validate(key)).json).toMatchObject({ isValid: true, remainingActivations: 2 });
      expect((await validate(key, { deviceId: 'render-node', requireActivation: true })).json.isValid).toBe(true);
    }
    // The old key activates the same license during the overlap (a seat of this license).
    expect((await t.activate({ licenseKey: oldKey, deviceId: 'second-node' })).json).toMatchObject({ isValid: true, remainingActivations: 1 });
    expect((await t.post('/api/v1/deactivate', { licenseKey: oldKey, deviceId: 'second-node' })).json.deactivated).toBe(true);

    clock.advance(24 * 3600_000 - 1000);
    expect((await validate(oldKey)).json.isValid).toBe(true);
    clock.advance(1000);
    expect((await validate(oldKey)).json).toEqual(UNKNOWN);
    expect((await t.activate({ licenseKey: oldKey, deviceId: 'third-node' })).json).toEqual(UNKNOWN);
    expect((await validate(newKey)).json.isValid).toBe(true);
    // Housekeeping deletes the lapsed former key (the lookup ignored it already), and only that: a key still in its
    // overlap stays.
    const { key: running, license: other } = await freshLicense();
    await reissue({ id: other.id, overlapHours: 1 });
    expect(await purgeRetiredLicenseKeys({ db: t.deps.db, now: clock.now() })).toBeGreaterThanOrEqual(1);
    expect(await t.prisma.retiredLicenseKey.count({ where: { licenseId: license.id } })).toBe(0);
    expect(await t.prisma.retiredLicenseKey.count({ where: { licenseId: other.id } })).toBe(1);
    expect((await validate(running)).json.isValid).toBe(true);
  });

  it('a second reissue ends the first one\'s overlap at once', async () => {
    const { key: first, license } = await freshLicense();
    const second = (await reissue({ id: license.id, overlapHours: 168 })).data.reissueLicenseKey.key;
    expect((await validate(first)).json.isValid).toBe(true);
    const third = (await reissue({ id: license.id, overlapHours: 1 })).data.reissueLicenseKey.key;
    expect((await validate(first)).json).toEqual(UNKNOWN);
    expect((await validate(second)).json.isValid).toBe(true);
    expect((await validate(third)).json.isValid).toBe(true);
    expect(await t.prisma.retiredLicenseKey.count({ where: { licenseId: license.id } })).toBe(1);
  });

  it('refuses a revoked license, a bad overlap, a read-only caller and another company\'s license', async () => {
    const { key, license } = await freshLicense();
    const tooLong = await reissue({ id: license.id, overlapHours: 169 });
    expect(tooLong.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { overlapHours: expect.any(String) } });
    expect((await reissue({ id: license.id, overlapHours: -1 })).errors?.[0].extensions?.code).toBe('InvalidRequest');
    expect((await reissue({ id: license.id }, { apiKey: A.readOnlyKey.key })).errors?.[0].extensions?.code).toBe('Forbidden');
    expect((await reissue({ id: license.id }, { apiKey: B.adminKey.key })).errors?.[0].extensions?.code).toBe('NotFound');
    // The service authorizes on its own too.
    const otherAdmin = adminContext(t, B).actor; // in a session that re-authenticated
    await expect(reissueLicenseKey({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: otherAdmin, meta: NO_META }, { id: license.id })).rejects.toMatchObject({ code: 'NotFound' });
    expect((await validate(key)).json.isValid).toBe(true); // nothing changed

    expect((await t.gql('mutation($id: ID!) { revokeLicense(input: { id: $id }) { license { status } } }', { id: license.id }, { apiKey: A.adminKey.key })).errors).toBeUndefined();
    expect((await reissue({ id: license.id })).errors?.[0].extensions?.code).toBe('Conflict');
    expect(await t.prisma.auditLogEntry.count({ where: { action: 'ReissueLicenseKey', entityId: license.id } })).toBe(0);
  });
});
