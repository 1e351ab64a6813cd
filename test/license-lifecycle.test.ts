import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueExpiryNotifications } from '../server/src/services/notifications/expiry.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { seedTwoTenants, type SeededTenant } from './support/tenants.js';

// License lifecycle through the public API: GraphQL for the vendor, /api/v1 for the
// customer's application. Suspend/reinstate (seats kept), renew (expiry notices fire again), transfer; audited
// with diffs; roles, tenants, and revocation staying final.

const START = '2026-06-01T08:00:00.000Z';
const clock = new TestClock(Date.parse(START));
let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;
let productId: string;
const IP = '203.0.113.7';

type Auth = { token?: string; apiKey?: string; ip?: string };
const asAdmin = (): Auth => ({ token: A.admin.token, ip: IP });

const ok = (query: string, variables: Record<string, unknown> = {}, auth: Auth = asAdmin()) => t.gqlData(query, variables, auth);
async function refused(query: string, variables: Record<string, unknown>, auth: Auth = asAdmin()) {
  const response = await t.gql(query, variables, auth);
  expect(response.errors, JSON.stringify(response.data)).toBeDefined();
  return response.errors![0];
}

const LICENSE = 'id status suspendedAt expiresAt customerEmail currentActivations remainingActivations revokedAt';
const SUSPEND = `mutation($input: SuspendLicenseInput!) { suspendLicense(input: $input) { license { ${LICENSE} } } }`;
const REINSTATE = `mutation($input: ReinstateLicenseInput!) { reinstateLicense(input: $input) { license { ${LICENSE} } } }`;
const RENEW = `mutation($input: RenewLicenseInput!) { renewLicense(input: $input) { license { ${LICENSE} } } }`;
const TRANSFER = `mutation($input: TransferLicenseInput!) { transferLicense(input: $input) { license { ${LICENSE} } } }`;
const REVOKE = `mutation($input: RevokeLicenseInput!) { revokeLicense(input: $input) { license { ${LICENSE} } } }`;

async function createLicense(input: Record<string, unknown>) {
  const data = await ok(`mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key license { ${LICENSE} } } }`, { input: { productId, maxActivations: 3, ...input } });
  return data.createLicense as { key: string; license: Record<string, any> };
}

/** Runs `run` and returns the activity entries of tenant A it wrote. */
async function audited<T>(run: () => Promise<T>) {
  const before = await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId } });
  const result = await run();
  const entries = await t.prisma.auditLogEntry.findMany({ where: { tenantId: A.tenantId, seq: { gt: before } }, orderBy: { seq: 'asc' } });
  return { result, entries };
}

const validate = async (licenseKey: string) => (await t.post('/api/v1/validate', { licenseKey })).json;
const activations = (licenseId: string) => t.prisma.activation.findMany({ where: { licenseId }, orderBy: { id: 'asc' } });

beforeAll(async () => {
  t = await startTestApp({ clock });
  ({ A, B } = await seedTwoTenants(t));
  productId = A.product!.id;
});
afterAll(async () => {
  await t?.close();
});

describe('suspend and reinstate', () => {
  it('a suspended license answers Suspended everywhere, keeps its seats, and reinstating restores everything', async () => {
    const { key, license } = await createLicense({ floatingSeats: 2, customerEmail: 'buyer@customer.test' });
    expect((await t.activate({ licenseKey: key, deviceId: 'device-1' })).json.isValid).toBe(true);
    const checkout = (await t.post('/api/v1/float/checkout', { licenseKey: key, deviceId: 'float-1' })).json;
    expect(checkout.isValid).toBe(true);
    const seatsBefore = await activations(license.id);
    expect(seatsBefore).toHaveLength(1);

    const { result, entries } = await audited(() => ok(SUSPEND, { input: { id: license.id } }));
    expect(result.suspendLicense.license).toMatchObject({ status: 'SUSPENDED', suspendedAt: clock.now().toISOString(), currentActivations: 1 });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ action: 'SuspendLicense', entityType: 'License', entityId: license.id, ip: IP, details: { before: { status: 'active' }, after: { status: 'suspended' } } });

    const rejected = await validate(key);
    expect(rejected).toMatchObject({ isValid: false, errorCode: 'Suspended', offlineCacheToken: null });
    expect(rejected.message).toMatch(/suspended/i);
    // Seats kept: the activation rows are exactly as they were.
    expect(await activations(license.id)).toEqual(seatsBefore);
    // Activate refuses it (a new device and the device that holds a seat), and changes nothing.
    expect((await t.activate({ licenseKey: key, deviceId: 'device-2' })).json).toMatchObject({ isValid: false, errorCode: 'Suspended' });
    expect((await t.activate({ licenseKey: key, deviceId: 'device-1' })).json).toMatchObject({ isValid: false, errorCode: 'Suspended' });
    expect(await activations(license.id)).toEqual(seatsBefore);
    // Floating and metering refuse it the same way.
    expect((await t.post('/api/v1/float/checkout', { licenseKey: key, deviceId: 'float-2' })).json).toMatchObject({ isValid: false, errorCode: 'Suspended' });
    expect((await t.post('/api/v1/float/heartbeat', { sessionToken: checkout.sessionToken })).json).toMatchObject({ isValid: false, errorCode: 'Suspended' });
    expect((await t.post('/api/v1/meter', { licenseKey: key, event: 'api.calls', quantity: 1 })).json).toMatchObject({ isValid: false, errorCode: 'Suspended' });
    expect(await t.prisma.usageEvent.count({ where: { licenseId: license.id } })).toBe(0);

    // Suspending twice changes nothing (no second entry).
    expect((await audited(() => ok(SUSPEND, { input: { id: license.id } }))).entries).toHaveLength(0);

    // The filters, the dashboard and the analytics see it as suspended.
    const list = await ok('query { licenses(filter: { status: SUSPENDED }) { totalCount nodes { id status } } }');
    expect(list.licenses).toMatchObject({ totalCount: 1, nodes: [{ id: license.id, status: 'SUSPENDED' }] });
    const active = await ok('query { licenses(filter: { status: ACTIVE }) { nodes { id } } }');
    expect(active.licenses.nodes.map((node: { id: string }) => node.id)).not.toContain(license.id);
    const analytics = await ok('query { analytics(range: LAST_7_DAYS) { licensesByStatus { active expired suspended revoked } } dashboardStats { activeLicenses totalLicenses } }');
    expect(analytics.analytics.licensesByStatus.suspended).toBe(1);
    expect(analytics.dashboardStats.activeLicenses).toBe(analytics.analytics.licensesByStatus.active);
    expect(analytics.dashboardStats.totalLicenses).toBe(
      Object.values(analytics.analytics.licensesByStatus as Record<string, number>).reduce((sum, n) => sum + n, 0),
    );

    const reinstated = await audited(() => ok(REINSTATE, { input: { id: license.id } }));
    expect(reinstated.result.reinstateLicense.license).toMatchObject({ status: 'ACTIVE', suspendedAt: null, currentActivations: 1 });
    expect(reinstated.entries).toHaveLength(1);
    expect(reinstated.entries[0]).toMatchObject({ action: 'ReinstateLicense', entityId: license.id, details: { before: { status: 'suspended' }, after: { status: 'active' } } });
    expect(await validate(key)).toMatchObject({ isValid: true, errorCode: null, remainingActivations: 2 });
    expect(await activations(license.id)).toEqual(seatsBefore);
    expect((await t.activate({ licenseKey: key, deviceId: 'device-2' })).json).toMatchObject({ isValid: true, remainingActivations: 1 });
    expect((await t.post('/api/v1/meter', { licenseKey: key, event: 'api.calls', quantity: 1 })).json.isValid).toBe(true);
    // Reinstating an active license changes nothing.
    expect((await audited(() => ok(REINSTATE, { input: { id: license.id } }))).entries).toHaveLength(0);

    const log = await ok('query { activityLog(filter: { entityId: "' + license.id + '" }) { nodes { action details } } }');
    expect(log.activityLog.nodes.map((node: { action: string }) => node.action).slice(0, 2)).toEqual(['REINSTATE_LICENSE', 'SUSPEND_LICENSE']);
  });

  it('revocation stays final: a revoked license cannot be suspended or reinstated; a suspended one can be revoked', async () => {
    const { key, license } = await createLicense({});
    await ok(SUSPEND, { input: { id: license.id } });
    expect((await ok(REVOKE, { input: { id: license.id } })).revokeLicense.license).toMatchObject({ status: 'REVOKED', suspendedAt: null });
    expect(await validate(key)).toMatchObject({ isValid: false, errorCode: 'LicenseRevoked' });
    const before = await t.prisma.license.findUniqueOrThrow({ where: { id: license.id } });
    for (const mutation of [SUSPEND, REINSTATE]) {
      const error = await refused(mutation, { input: { id: license.id } });
      expect(error.extensions?.code).toBe('Conflict');
      expect(error.message).toMatch(/revoked.*final/i);
    }
    expect((await refused(RENEW, { input: { id: license.id, expiresAt: new Date(clock.now().getTime() + 400 * DAY).toISOString() } })).extensions?.code).toBe('Conflict');
    expect((await refused(TRANSFER, { input: { id: license.id, customerEmail: 'new@customer.test' } })).extensions?.code).toBe('Conflict');
    expect(await t.prisma.license.findUniqueOrThrow({ where: { id: license.id } })).toEqual(before);
  });
});

describe('renew', () => {
  it('sets a later expiresAt and clears the sent expiry notices, so a threshold email fires again for the new period', async () => {
    const ctx = () => ({ db: t.deps.db, now: clock.now(), publicUrl: t.config.publicUrl, logger: t.deps.logger });
    const customerEmails = (to: string) => t.prisma.emailOutbox.count({ where: { tenantId: A.tenantId, kind: 'expiry-customer', toAddress: to } });
    // Countdown 7 today: the 7-day threshold fires.
    const { license } = await createLicense({ expiresAt: new Date(Date.parse(START) + 7.5 * DAY).toISOString(), customerEmail: 'renewer@customer.test' });
    // A suspended license in the same window gets no expiry email while suspended.
    const { license: paused } = await createLicense({ expiresAt: new Date(Date.parse(START) + 7.5 * DAY).toISOString(), customerEmail: 'paused@customer.test' });
    await ok(SUSPEND, { input: { id: paused.id } });
    await queueExpiryNotifications(ctx());
    expect(await customerEmails('renewer@customer.test')).toBe(1);
    expect(await t.prisma.expiryNotice.findMany({ where: { licenseId: license.id }, select: { threshold: true } })).toEqual([{ threshold: 7 }]);
    expect(await customerEmails('paused@customer.test')).toBe(0);
    expect(await t.prisma.expiryNotice.count({ where: { licenseId: paused.id } })).toBe(0);

    // An earlier or past date is refused with a field error, changing nothing.
    for (const expiresAt of [new Date(Date.parse(START) + 3 * DAY), new Date(Date.parse(START) - DAY)]) {
      const error = await refused(RENEW, { input: { id: license.id, expiresAt: expiresAt.toISOString() } });
      expect(error.extensions).toMatchObject({ code: 'InvalidRequest', fields: { expiresAt: expect.any(String) } });
    }
    expect(await t.prisma.expiryNotice.count({ where: { licenseId: license.id } })).toBe(1);

    const newExpiry = new Date(Date.parse(START) + 8.5 * DAY).toISOString();
    const { result, entries } = await audited(() => ok(RENEW, { input: { id: license.id, expiresAt: newExpiry } }));
    expect(result.renewLicense.license).toMatchObject({ expiresAt: newExpiry, status: 'ACTIVE' });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      action: 'RenewLicense',
      entityId: license.id,
      details: { before: { expiresAt: new Date(Date.parse(START) + 7.5 * DAY).toISOString() }, after: { expiresAt: newExpiry } },
    });
    expect(await t.prisma.expiryNotice.count({ where: { licenseId: license.id } })).toBe(0);

    // The next day the countdown to the new date reads 7 again: the threshold fires again.
    clock.set(new Date(Date.parse(START) + DAY).toISOString());
    try {
      await queueExpiryNotifications(ctx());
      expect(await customerEmails('renewer@customer.test')).toBe(2);
      expect(await t.prisma.expiryNotice.count({ where: { licenseId: license.id, threshold: 7 } })).toBe(1);
      expect(await customerEmails('paused@customer.test')).toBe(0);
    } finally {
      clock.set(START);
    }
  });

  it('a perpetual license has nothing to renew (field error)', async () => {
    const { license } = await createLicense({});
    const error = await refused(RENEW, { input: { id: license.id, expiresAt: new Date(Date.parse(START) + 30 * DAY).toISOString() } });
    expect(error.extensions).toMatchObject({ code: 'InvalidRequest', fields: { expiresAt: expect.stringMatching(/perpetual/) } });
  });
});

describe('transfer', () => {
  it('moves the license to another (validated) customer email, audited with a diff', async () => {
    const { license } = await createLicense({ customerEmail: 'old@customer.test' });
    const error = await refused(TRANSFER, { input: { id: license.id, customerEmail: 'not an email' } });
    expect(error.extensions).toMatchObject({ code: 'InvalidRequest', fields: { customerEmail: expect.any(String) } });
    const { result, entries } = await audited(() => ok(TRANSFER, { input: { id: license.id, customerEmail: 'new@customer.test' } }));
    expect(result.transferLicense.license.customerEmail).toBe('new@customer.test');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ action: 'TransferLicense', entityId: license.id, details: { before: { customerEmail: 'old@customer.test' }, after: { customerEmail: 'new@customer.test' } } });
    // The same address again changes nothing.
    expect((await audited(() => ok(TRANSFER, { input: { id: license.id, customerEmail: 'new@customer.test' } }))).entries).toHaveLength(0);
  });
});

describe('roles and tenants', () => {
  it('a read-only member or key is Forbidden; another tenant finds nothing (NotFound); nothing changes', async () => {
    const { license } = await createLicense({ expiresAt: new Date(Date.parse(START) + 60 * DAY).toISOString(), customerEmail: 'x@customer.test' });
    const before = await t.prisma.license.findUniqueOrThrow({ where: { id: license.id } });
    const auditBefore = await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId } });
    const calls: [string, Record<string, unknown>][] = [
      [SUSPEND, { id: license.id }],
      [REINSTATE, { id: license.id }],
      [RENEW, { id: license.id, expiresAt: new Date(Date.parse(START) + 400 * DAY).toISOString() }],
      [TRANSFER, { id: license.id, customerEmail: 'thief@evil.test' }],
    ];
    for (const [mutation, input] of calls) {
      expect((await refused(mutation, { input }, { token: A.readOnly.token })).extensions?.code).toBe('Forbidden');
      expect((await refused(mutation, { input }, { apiKey: A.readOnlyKey.key })).extensions?.code).toBe('Forbidden');
      expect((await refused(mutation, { input }, { token: B.admin.token })).extensions?.code).toBe('NotFound');
    }
    expect(await t.prisma.license.findUniqueOrThrow({ where: { id: license.id } })).toEqual(before);
    expect(await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId } })).toBe(auditBefore);
  });
});
