import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_META, operatorIn, systemActor } from '../server/src/services/auth/actor.js';
import { findByKey, revokeLicense } from '../server/src/services/licenses/management.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { seedTwoTenants } from './support/tenants.js';

// Dashboard stats (docs/integrate/management-api.md "Dashboard stats: `GET /api/dashboard/stats`") and analytics (docs/integrate/management-api.md "Analytics") on a seeded data set whose answers
// were worked out by hand. "Expiring within N days": active, not expired yet, and at most N UTC calendar days to
// the expiry date (the countdown rule, server/src/domain/countdown.ts).

const T = Date.parse('2026-06-15T12:00:00.000Z'); // a Monday
const iso = (offset: number) => new Date(T + offset).toISOString();
const HOUR = 3_600_000;

let t: TestApp;
const clock = new TestClock(T);
let admin: { token: string; tenantId: string };
let B: { token: string; tenantId: string; licenseId: string };
let adminKey: string;
let readOnlyKey: string;
let revokedKey: string;
const L: Record<string, string> = {};

const ok = (query: string, variables: Record<string, unknown> = {}, auth: { token?: string; apiKey?: string } = { token: admin.token }) => t.gqlData(query, variables, auth);

beforeAll(async () => {
  t = await startTestApp({ clock });
  // Tenant B is there to show that nothing of it reaches A's numbers (its one license is below).
  const { A, B: globex } = await seedTwoTenants(t, { catalog: false });
  admin = { token: A.admin.token, tenantId: A.tenantId };
  adminKey = A.adminKey.key;
  readOnlyKey = A.readOnlyKey.key;
  revokedKey = A.revokedKey.key;

  // Everything is created 40 days before T, so it is in force across the whole 30-day range.
  clock.set(iso(-40 * DAY));
  const tenantId = admin.tenantId;
  const studio = await t.seedProduct(tenantId, 'Studio');
  const viewer = await t.seedProduct(tenantId, 'Viewer');
  await t.seedProduct(tenantId, 'Empty');
  const keys: Record<string, string> = {};
  const seed = async (name: string, productId: string, maxActivations: number, expiresAt: number | null, customerEmail?: string) => {
    const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations, expiresAt: expiresAt === null ? null : new Date(T + expiresAt), customerEmail });
    [L[name], keys[name]] = [license.id, key];
  };
  await seed('L1', studio.id, 5, 7 * DAY + 12 * HOUR - 1, 'one@customer.test'); // Jun 22 23:59:59.999, in 7 days: within 7
  await seed('L2', studio.id, 3, 7 * DAY + 12 * HOUR); //                          Jun 23 00:00, in 8 days: within 30, not 7
  await seed('L3', viewer.id, 2, 30 * DAY + 12 * HOUR - 1, 'three@customer.test'); // Jul 15 23:59:59.999, in 30 days: within 30
  await seed('L4', viewer.id, 2, 30 * DAY + 12 * HOUR); //                          Jul 16 00:00, in 31 days: within 90
  await seed('L5', studio.id, 1, 0); //                                  expires exactly now: expired
  await seed('L6', studio.id, 4, null); //                               perpetual
  await seed('L7', viewer.id, 10, DAY); //                               revoked at T − 2 days
  await seed('L8', studio.id, 2, 200 * DAY); //                          later
  await seed('L9', studio.id, 1, -10 * DAY); //                          expired 10 days ago
  clock.set(iso(-2 * DAY));
  const operator = { db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(null), meta: NO_META };
  const l7 = await findByKey(operator, keys.L7);
  await revokeLicense(operatorIn(operator, l7.tenantId), l7.id);

  const activation = (license: string, createdAt: number, deactivatedAt?: number) =>
    t.prisma.activation.create({ data: { tenantId, licenseId: L[license], createdAt: new Date(T + createdAt), lastSeenAt: new Date(T + createdAt), deactivatedAt: deactivatedAt === undefined ? null : new Date(T + deactivatedAt) } });
  await activation('L1', -20 * DAY); //               A1  May 26
  await activation('L1', -3 * DAY); //                A2  Jun 12 12:00
  await activation('L2', -HOUR); //                   A3  Jun 15 11:00 (today)
  await activation('L3', -5 * DAY, -2 * DAY); //      A4  Jun 10 12:00, deactivated Jun 13 12:00
  await activation('L6', -39 * DAY); //               A5  May 7 (before every range)
  await activation('L7', -8 * DAY); //                A6  Jun 7 12:00, on the license revoked Jun 13 12:00
  await activation('L9', -25 * DAY); //               A7  May 21, on the license expired Jun 5 12:00

  // Tenant B: one license expiring soon.
  const gadget = await t.seedProduct(globex.tenantId, 'Gadget');
  const { license } = await t.seedLicense(globex.tenantId, gadget.id, { expiresAt: new Date(T + 2 * DAY), customerEmail: 'b@globex.test' });
  clock.set(iso(0));
  B = { token: globex.admin.token, tenantId: globex.tenantId, licenseId: license.id };
});
afterAll(() => t.close());

const STATS = '{ dashboardStats { activeLicenses totalLicenses activations products expiringIn7Days expiringIn30Days expiringLicenses { id productName expiresAt customerEmail daysUntilExpiry } } }';

describe('dashboard stats', () => {
  const expected = () => ({
    activeLicenses: 6,
    totalLicenses: 9,
    activations: 6,
    products: 3,
    expiringIn7Days: 1,
    expiringIn30Days: 3,
    expiringLicenses: [
      { id: L.L1, productName: 'Studio', expiresAt: iso(7 * DAY + 12 * HOUR - 1), customerEmail: 'one@customer.test', daysUntilExpiry: 7 },
      { id: L.L2, productName: 'Studio', expiresAt: iso(7 * DAY + 12 * HOUR), customerEmail: null, daysUntilExpiry: 8 },
      { id: L.L3, productName: 'Viewer', expiresAt: iso(30 * DAY + 12 * HOUR - 1), customerEmail: 'three@customer.test', daysUntilExpiry: 30 },
    ],
  });

  it('GET /api/dashboard/stats answers the known figures with a Bearer token or an API key (any role)', async () => {
    for (const headers of [{ authorization: `Bearer ${admin.token}` }, { 'x-api-key': adminKey }, { 'x-api-key': readOnlyKey }] as Record<string, string>[]) {
      const response = await t.get('/api/dashboard/stats', headers);
      expect(response.status).toBe(200);
      expect(response.json).toEqual(expected());
    }
    expect((await ok(STATS)).dashboardStats).toEqual(expected());
  });

  it('the 7- and 30-day boundaries are calendar days: the last millisecond of a day counts, the next day moves them', async () => {
    clock.set(iso(12 * HOUR - 1)); // Jun 15 23:59:59.999: still the figures above
    try {
      // An API key: the admin's 15-minute access token is long expired at these clock settings.
      expect((await ok(STATS, {}, { apiKey: adminKey })).dashboardStats).toMatchObject({ expiringIn7Days: 1, expiringIn30Days: 3 });
      clock.set(iso(12 * HOUR)); // Jun 16 00:00: every countdown is a day shorter
      const stats = (await ok(STATS, {}, { apiKey: adminKey })).dashboardStats;
      expect(stats).toMatchObject({ expiringIn7Days: 2, expiringIn30Days: 4, activeLicenses: 6 });
      expect(stats.expiringLicenses.map((l: { id: string; daysUntilExpiry: number }) => [l.id, l.daysUntilExpiry])).toEqual([[L.L1, 6], [L.L2, 7], [L.L3, 29], [L.L4, 30]]);
    } finally {
      clock.set(iso(0));
    }
    const within = async (days: number) => (await ok(`{ licenses(filter: { expiringWithinDays: ${days} }) { nodes { id } } }`)).licenses.nodes.map((n: { id: string }) => n.id).sort();
    expect(await within(7)).toEqual([L.L1]);
    expect(await within(30)).toEqual([L.L1, L.L2, L.L3].sort());
  });

  it("is tenant-scoped: B sees only its own figures; bad credentials get 401", async () => {
    const response = await t.get('/api/dashboard/stats', { authorization: `Bearer ${B.token}` });
    expect(response.json).toEqual({
      activeLicenses: 1, totalLicenses: 1, activations: 0, products: 1, expiringIn7Days: 1, expiringIn30Days: 1,
      expiringLicenses: [{ id: B.licenseId, productName: 'Gadget', expiresAt: iso(2 * DAY), customerEmail: 'b@globex.test', daysUntilExpiry: 2 }],
    });
    expect((await ok(STATS)).dashboardStats.expiringLicenses.map((l: { id: string }) => l.id)).not.toContain(B.licenseId);
    for (const headers of [{}, { 'x-api-key': revokedKey }, { authorization: 'Bearer not-a-token' }] as Record<string, string>[]) {
      const denied = await t.get('/api/dashboard/stats', headers);
      expect(denied.status).toBe(401);
      expect(denied.json.error.code).toBe('Unauthorized');
    }
    expect((await t.gql(STATS, {}, { apiKey: revokedKey })).status).toBe(401);
  });
});

const ANALYTICS = `query($range: AnalyticsRange!, $granularity: Granularity, $limit: Int) {
  analytics(range: $range, granularity: $granularity) {
    range granularity from to
    activationTrend { start activations }
    licensesByProduct { productName licenses activeLicenses }
    licensesByStatus { active expired revoked }
    licensesByExpiry { expired within7Days within30Days within90Days later perpetual }
    topProducts(limit: $limit) { productName activations }
    seatPool { start at seatsUsed seatsAvailable }
  } }`;
const analytics = async (range: string, granularity?: string, auth?: { token?: string; apiKey?: string }, limit?: number) =>
  (await ok(ANALYTICS, { range, granularity, limit }, auth)).analytics;
const trend = (buckets: { start: string; activations: number }[]) => buckets.map((b) => [b.start.slice(0, 10), b.activations]);

describe('analytics', () => {
  it('activation trends per day, week and month for each range', async () => {
    const week = await analytics('LAST_7_DAYS');
    expect(week).toMatchObject({ range: 'LAST_7_DAYS', granularity: 'DAY', from: '2026-06-09T00:00:00.000Z', to: iso(0) });
    expect(trend(week.activationTrend)).toEqual([
      ['2026-06-09', 0], ['2026-06-10', 1], ['2026-06-11', 0], ['2026-06-12', 1], ['2026-06-13', 0], ['2026-06-14', 0], ['2026-06-15', 1],
    ]);
    // Today is by hour, whatever granularity was asked: 00:00 … 12:00 (now), A3 at 11:00.
    const today = await analytics('TODAY', 'MONTH');
    expect(today).toMatchObject({ from: '2026-06-15T00:00:00.000Z', granularity: 'HOUR' });
    expect(today.activationTrend).toHaveLength(13);
    expect(today.activationTrend.filter((bucket: { activations: number }) => bucket.activations).map((bucket: { start: string; activations: number }) => [bucket.start, bucket.activations])).toEqual([['2026-06-15T11:00:00.000Z', 1]]);
    expect(today.seatPool).toHaveLength(13);
    const hourly = await t.gql('query { analytics(range: LAST_7_DAYS, granularity: HOUR) { granularity } }', {}, { token: admin.token });
    expect(hourly.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { granularity: expect.any(String) } });

    const month = await analytics('LAST_30_DAYS');
    expect(month.activationTrend).toHaveLength(30);
    expect(month.activationTrend[0].start).toBe('2026-05-17T00:00:00.000Z');
    expect(trend(month.activationTrend).filter(([, n]) => n)).toEqual([['2026-05-21', 1], ['2026-05-26', 1], ['2026-06-07', 1], ['2026-06-10', 1], ['2026-06-12', 1], ['2026-06-15', 1]]);
    // ISO weeks start on Monday; the first bucket only counts from the range's start (May 17, a Sunday).
    expect(trend((await analytics('LAST_30_DAYS', 'WEEK')).activationTrend)).toEqual([
      ['2026-05-11', 0], ['2026-05-18', 1], ['2026-05-25', 1], ['2026-06-01', 1], ['2026-06-08', 2], ['2026-06-15', 1],
    ]);
    expect(trend((await analytics('LAST_30_DAYS', 'MONTH')).activationTrend)).toEqual([['2026-05-01', 2], ['2026-06-01', 4]]);
  });

  it('license distribution by product, status and expiry bucket', async () => {
    const result = await analytics('LAST_7_DAYS');
    expect(result.licensesByProduct).toEqual([
      { productName: 'Studio', licenses: 6, activeLicenses: 4 },
      { productName: 'Viewer', licenses: 3, activeLicenses: 2 },
      { productName: 'Empty', licenses: 0, activeLicenses: 0 },
    ]);
    expect(result.licensesByStatus).toEqual({ active: 6, expired: 2, revoked: 1 });
    expect(result.licensesByExpiry).toEqual({ expired: 2, within7Days: 1, within30Days: 2, within90Days: 1, later: 1, perpetual: 1 });
  });

  it('top products by activations within the range', async () => {
    expect((await analytics('TODAY')).topProducts).toEqual([{ productName: 'Studio', activations: 1 }]);
    expect((await analytics('LAST_7_DAYS')).topProducts).toEqual([{ productName: 'Studio', activations: 2 }, { productName: 'Viewer', activations: 1 }]);
    expect((await analytics('LAST_30_DAYS')).topProducts).toEqual([{ productName: 'Studio', activations: 4 }, { productName: 'Viewer', activations: 2 }]);
    expect((await analytics('LAST_30_DAYS', 'DAY', undefined, 1)).topProducts).toEqual([{ productName: 'Studio', activations: 4 }]);
    expect((await t.gql(ANALYTICS, { range: 'TODAY', limit: 0 }, { token: admin.token })).errors![0].extensions!.code).toBe('InvalidRequest');
  });

  it('seat pool: seats used vs available at the end of each bucket', async () => {
    const pool = (await analytics('LAST_7_DAYS')).seatPool;
    expect(pool.map((p: { at: string; seatsUsed: number; seatsAvailable: number }) => [p.at, p.seatsUsed, p.seatsAvailable])).toEqual([
      ['2026-06-10T00:00:00.000Z', 3, 29],
      ['2026-06-11T00:00:00.000Z', 4, 29], // + A4
      ['2026-06-12T00:00:00.000Z', 4, 29],
      ['2026-06-13T00:00:00.000Z', 5, 29], // + A2
      ['2026-06-14T00:00:00.000Z', 3, 19], // L7 revoked (−10 seats, −A6), A4 deactivated
      ['2026-06-15T00:00:00.000Z', 3, 19],
      [iso(0), 4, 18], //                     + A3; L5 expires exactly now
    ]);
    const months = (await analytics('LAST_30_DAYS', 'MONTH')).seatPool;
    expect(months.map((p: { start: string; at: string }) => [p.start, p.at])).toEqual([['2026-05-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z'], ['2026-06-01T00:00:00.000Z', iso(0)]]);
  });

  it("is tenant-scoped and readable by the ReadOnly role; a revoked key gets 401", async () => {
    const theirs = await analytics('LAST_30_DAYS', 'DAY', { token: B.token });
    expect(theirs.licensesByProduct).toEqual([{ productName: 'Gadget', licenses: 1, activeLicenses: 1 }]);
    expect(theirs.topProducts).toEqual([]);
    expect(theirs.activationTrend.every((b: { activations: number }) => b.activations === 0)).toBe(true);
    expect(theirs.licensesByStatus).toEqual({ active: 1, expired: 0, revoked: 0 });
    expect((await analytics('LAST_7_DAYS', 'DAY', { apiKey: readOnlyKey })).licensesByStatus).toEqual({ active: 6, expired: 2, revoked: 1 });
    expect((await t.gql(ANALYTICS, { range: 'TODAY' }, { apiKey: revokedKey })).status).toBe(401);
    expect((await t.gql(ANALYTICS, { range: 'TODAY' }, {})).errors![0].extensions!.code).toBe('Unauthorized');
  });
});
