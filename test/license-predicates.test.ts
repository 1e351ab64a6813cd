import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../server/src/generated/prisma/client.js';
import { DAY_MS, startOfUtcDay } from '../server/src/domain/countdown.js';
import { analyticsWindow, licenseDistribution } from '../server/src/services/analytics.js';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import {
  expiringSql,
  expiringWhere,
  LICENSE_STATUSES,
  isExpiring,
  licenseStatus,
  statusRangesSql,
  statusSql,
  statusWhere,
  type ExpiryWindow,
  type LicenseStatusName,
} from '../server/src/services/licenses/predicates.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { seedLicensesInBulk } from './support/seed.js';

// The license-state rule exists in three forms (code, Prisma where, SQL): over random licenses crowded around
// the edges (now, midnights, a millisecond either side), all three must select exactly the same rows. A fourth
// form is the rollups' triggers (license_tallies, license_expiry_days: the states a license row adds to the
// counts): the analytics' counts read from them must equal the rule's, after every kind of write.

let t: TestApp;
let tenantId: string;
type Row = { id: string; status: 'active' | 'suspended' | 'revoked'; expiresAt: Date | null };
let rows: Row[] = [];

// A small seeded generator: a failure can be replayed with the printed seed.
const seed = Number(process.env.PREDICATE_SEED ?? Date.now() % 1_000_000);
let state = seed;
// mulberry32: 32-bit integer arithmetic (Math.imul) stays exact. A classic LCG multiplied in doubles loses bits past
// 2^53 and falls into short cycles for some seeds (seed 2196 gave 496 distinct values in 5,000 draws, and an empty
// expiry window).
const random = () => {
  state = (state + 0x6d2b79f5) | 0;
  let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
  mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
  return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
};
const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)];

/** Nows to test at: midday, exactly midnight, the last millisecond of a day. */
const NOWS = [new Date('2026-06-01T12:00:00.000Z'), new Date('2026-06-02T00:00:00.000Z'), new Date('2026-06-02T23:59:59.999Z')];

function expiryNear(now: Date): Date | null {
  const today = startOfUtcDay(now).getTime();
  const kind = random();
  if (kind < 0.1) return null;
  if (kind < 0.25) return new Date(now.getTime() + pick([-1, 0, 1])); // at now, a millisecond either side
  if (kind < 0.85) return new Date(today + Math.floor(random() * 104 - 3) * DAY_MS + pick([-1, 0, 1])); // midnights −3…+100 days
  return new Date(now.getTime() + Math.floor((random() * 200 - 50) * DAY_MS)); // anywhere
}

beforeAll(async () => {
  t = await startTestApp({ clock: new TestClock() });
  tenantId = (await t.seedTenant()).id;
  const productId = (await t.seedProduct(tenantId)).id;
  await seedLicensesInBulk(t.prisma, { tenantId, productId, count: 1500, hintPrefix: 'ACME' }, (i) => ({
    // Suspended licenses with every kind of expiry (past, future, perpetual): suspended wins over expired.
    status: pick<Row['status']>(['active', 'active', 'active', 'active', 'active', 'active', 'active', 'revoked', 'revoked', 'suspended']),
    expiresAt: expiryNear(NOWS[i % NOWS.length]),
  }));
  rows = await t.prisma.license.findMany({ where: { tenantId }, select: { id: true, status: true, expiresAt: true } });
});
afterAll(async () => {
  await t?.close();
});

const sorted = (ids: string[]) => [...ids].sort();
const byWhere = async (where: Prisma.LicenseWhereInput) =>
  sorted((await t.prisma.license.findMany({ where: { AND: [{ tenantId }, where] }, select: { id: true } })).map((row) => row.id));
const bySql = async (condition: Prisma.Sql) =>
  sorted((await t.prisma.$queryRaw<{ id: string }[]>`SELECT id::text FROM licenses WHERE tenant_id = ${tenantId}::uuid AND ${condition}`).map((row) => row.id));
const byCode = (predicate: (row: Row) => boolean) => sorted(rows.filter(predicate).map((row) => row.id));

const WINDOWS: ExpiryWindow[] = [{}, { to: 0 }, { to: 1 }, { to: 7 }, { to: 30 }, { from: 8, to: 30 }, { from: 31, to: 90 }, { from: 91 }, { from: 0, to: 1 }, { from: 6, to: 7 }, { from: 29, to: 30 }];

describe(`license predicates agree (seed ${seed})`, () => {
  it.each(NOWS.map((now) => [now.toISOString(), now] as const))('status at %s: code, Prisma where and SQL select the same licenses', async (_label, now) => {
    for (const status of LICENSE_STATUSES as readonly LicenseStatusName[]) {
      const expected = byCode((row) => licenseStatus(row, now) === status);
      expect(expected.length, status).toBeGreaterThan(0);
      expect(await byWhere(statusWhere(status, now)), `${status} (where)`).toEqual(expected);
      expect(await bySql(statusSql(status, now)), `${status} (sql)`).toEqual(expected);
      // The index ranges: disjoint, together the same rows.
      const ranges = await Promise.all(statusRangesSql(status, now).map(bySql));
      expect(sorted(ranges.flat()), `${status} (sql ranges)`).toEqual(expected);
    }
  });

  it.each(NOWS.map((now) => [now.toISOString(), now] as const))('expiring windows at %s: code, Prisma where and SQL select the same licenses', async (_label, now) => {
    for (const window of WINDOWS) {
      const expected = byCode((row) => isExpiring(row, now, window));
      const label = JSON.stringify(window);
      // Only "expires today" at the day's last millisecond is empty by construction.
      const emptyByConstruction = window.to === 0 && now.getTime() % DAY_MS === DAY_MS - 1;
      if (emptyByConstruction) expect(expected, label).toEqual([]);
      else expect(expected.length, label).toBeGreaterThan(0);
      expect(await byWhere(expiringWhere(now, window)), `${label} (where)`).toEqual(expected);
      expect(await bySql(expiringSql(now, window)), `${label} (sql)`).toEqual(expected);
    }
  });

  it('the windows partition what is expiring, and expiring licenses are active', () => {
    const now = NOWS[0];
    const bands: ExpiryWindow[] = [{ to: 7 }, { from: 8, to: 30 }, { from: 31, to: 90 }, { from: 91 }];
    for (const row of rows) {
      const inBands = bands.filter((band) => isExpiring(row, now, band)).length;
      expect(inBands).toBe(isExpiring(row, now) ? 1 : 0);
      if (isExpiring(row, now)) expect(licenseStatus(row, now)).toBe('active');
    }
  });

  it('suspended beats expired and is never expiring (no expiry emails while suspended); revoked beats both', () => {
    const now = NOWS[0];
    const past = new Date(now.getTime() - DAY_MS);
    const soon = new Date(now.getTime() + DAY_MS);
    expect(licenseStatus({ status: 'suspended', expiresAt: past }, now)).toBe('suspended');
    expect(licenseStatus({ status: 'suspended', expiresAt: soon }, now)).toBe('suspended');
    expect(isExpiring({ status: 'suspended', expiresAt: soon }, now)).toBe(false);
    expect(licenseStatus({ status: 'revoked', expiresAt: past }, now)).toBe('revoked');
    const suspended = rows.filter((row) => row.status === 'suspended');
    expect(suspended.some((row) => row.expiresAt && row.expiresAt <= now)).toBe(true);
    expect(suspended.some((row) => row.expiresAt && row.expiresAt > now)).toBe(true);
  });

  it.each(NOWS.map((now) => [now.toISOString(), now] as const))('the tally triggers agree at %s: counts by status and by expiry window from the rollups equal the rule', async (_label, now) => {
    // Its own tenant: inserted (the triggers' INSERT), then changed and deleted (their UPDATE and DELETE), no vacuum.
    const other = (await t.seedTenant({ name: `Tally Co ${now.getTime()}`, keyPrefix: `TAL${NOWS.indexOf(now)}` })).id;
    const products = [(await t.seedProduct(other, 'One')).id, (await t.seedProduct(other, 'Two')).id];
    // Spread over both products: each row picks its own.
    await seedLicensesInBulk(t.prisma, { tenantId: other, productId: products[0], count: 600, hintPrefix: 'OTHER' }, () => ({
      productId: pick(products), status: pick<Row['status']>(['active', 'active', 'active', 'active', 'active', 'revoked', 'suspended']), expiresAt: expiryNear(now),
    }));
    const ids = (await t.prisma.license.findMany({ where: { tenantId: other }, select: { id: true } })).map((row) => row.id);
    for (const id of ids.filter(() => random() < 0.3)) {
      const change = random();
      const data = change < 0.4 ? { expiresAt: expiryNear(now) } : change < 0.6 ? { status: pick<Row['status']>(['active', 'suspended', 'revoked']) } : change < 0.8 ? { productId: pick(products) } : null;
      if (data) await t.prisma.license.update({ where: { id }, data });
      else await t.prisma.license.delete({ where: { id } });
    }
    const licenses = await t.prisma.license.findMany({ where: { tenantId: other }, select: { id: true, status: true, expiresAt: true } });
    const count = (predicate: (row: Row) => boolean) => licenses.filter(predicate).length;
    const status = (name: LicenseStatusName) => count((row) => licenseStatus(row, now) === name);
    const within = (window: ExpiryWindow) => count((row) => isExpiring(row, now, window));
    const ctx = { db: t.deps.db, secrets: t.deps.secrets, now, actor: systemActor(other), meta: NO_META };
    const counts = await licenseDistribution(ctx, analyticsWindow(ctx, 'TODAY'));
    expect(counts).toEqual({
      byStatus: { active: status('active'), expired: status('expired'), suspended: status('suspended'), revoked: status('revoked') },
      byExpiry: {
        expired: status('expired'), within7Days: within({ to: 7 }), within30Days: within({ from: 8, to: 30 }), within90Days: within({ from: 31, to: 90 }),
        later: within({ from: 91 }), perpetual: count((row) => licenseStatus(row, now) === 'active' && row.expiresAt === null),
      },
    });
    expect(Object.values(counts.byStatus).every((n) => n > 0)).toBe(true);
  });
});
