import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { Prisma } from '../server/src/generated/prisma/client.js';
import { analyticsWindow, dashboardStats, foldSeatPoolHistory, licenseDistribution, licensesByProduct, seatPool, type AnalyticsRange, type Granularity } from '../server/src/services/analytics.js';
import { listProducts } from '../server/src/services/products.js';
import { listLicenses, SEARCH_WALK, type LicenseFilter } from '../server/src/services/licenses/management.js';
import { countBulkSelection } from '../server/src/services/licenses/bulk.js';
import { floatingPoolConsumption, POOL_BUCKETS } from '../server/src/services/floating/management.js';
import { COUNT_CAP, SEARCH_COUNT_CAP } from '../server/src/services/listing.js';
import { isExpiring, licenseStatus, type ExpiryWindow } from '../server/src/services/licenses/predicates.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { seedLicensesInBulk } from './support/seed.js';

// Reads that stay fast at 1M licenses: capped list counts and the 8-row expiry widget. The rows
// are inserted in SQL (a few thousand licenses), then the answers are compared with the plain definitions.

const T = Date.parse('2026-06-15T12:00:00.000Z');
let t: TestApp;
const clock = new TestClock(T);
let admin: { token: string; tenantId: string };
let productId: string;

const ok = (query: string, variables: Record<string, unknown> = {}) => t.gqlData(query, variables, { token: admin.token });

/** Inserts `count` licenses of the product, created one second apart, emails bulk-<n>@<domain>. */
async function insertLicenses(count: number, domain: string, expiresInDays: number | null = null) {
  const start = await t.prisma.license.count({ where: { tenantId: admin.tenantId } });
  await t.prisma.$executeRawUnsafe(
    `INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, expires_at, customer_email, created_at, updated_at)
     SELECT gen_random_uuid(), $1::uuid, $2::uuid, md5(random()::text || n), 'BULK-…-' || n, 1,
            CASE WHEN $3::int IS NULL THEN NULL ELSE $4::timestamptz + make_interval(days => $3::int) + n * interval '1 second' END,
            'bulk-' || n || '@' || $5, $4::timestamptz - interval '100 days' + n * interval '1 second', now()
       FROM generate_series($6::int, $6::int + $7::int - 1) AS n`,
    admin.tenantId, productId, expiresInDays, new Date(T).toISOString(), domain, start, count,
  );
}

const LIST = 'query ($filter: LicenseFilter) { licenses(filter: $filter, first: 5) { totalCount totalCountCapped nodes { id } } }';
async function listCount(filter: Record<string, unknown> = {}) {
  const { totalCount, totalCountCapped } = (await ok(LIST, { filter })).licenses;
  return { totalCount, totalCountCapped };
}

beforeAll(async () => {
  t = await startTestApp({ clock });
  const setup = await t.setupAdmin();
  admin = { token: setup.token, tenantId: setup.user.tenantId };
  productId = (await t.seedProduct(admin.tenantId, 'Studio')).id;
});
afterAll(() => t.close());

describe('capped counts', () => {
  it('counts exactly up to the cap and says "capped" from one row past it', async () => {
    await insertLicenses(COUNT_CAP - 1, 'a.test');
    expect(await listCount()).toEqual({ totalCount: COUNT_CAP - 1, totalCountCapped: false });
    await insertLicenses(1, 'b.test');
    expect(await listCount()).toEqual({ totalCount: COUNT_CAP, totalCountCapped: false });
    await insertLicenses(1, 'c.test');
    expect(await listCount()).toEqual({ totalCount: COUNT_CAP, totalCountCapped: true });
    expect(await t.prisma.license.count({ where: { tenantId: admin.tenantId } })).toBe(COUNT_CAP + 1);
  });

  it('caps a text search at 1,000', async () => {
    // Every row so far is a bulk-… email; a.test holds 9,999 of them, b.test one.
    expect(await listCount({ search: 'b.test' })).toEqual({ totalCount: 1, totalCountCapped: false });
    expect(await listCount({ search: 'a.test' })).toEqual({ totalCount: SEARCH_COUNT_CAP, totalCountCapped: true });
    await insertLicenses(SEARCH_COUNT_CAP, 'd.test');
    expect(await listCount({ search: 'd.test' })).toEqual({ totalCount: SEARCH_COUNT_CAP, totalCountCapped: false });
    // A filter without text keeps the larger cap.
    expect(await listCount({ productId })).toEqual({ totalCount: COUNT_CAP, totalCountCapped: true });
  });

  it('caps the activity log count the same way', async () => {
    const activity = await ok('{ activityLog(first: 5) { totalCount totalCountCapped } }');
    const entries = await t.prisma.auditLogEntry.count({ where: { tenantId: admin.tenantId } });
    expect(activity.activityLog).toEqual({ totalCount: entries, totalCountCapped: false });
  });
});

describe('dashboard widget', () => {
  it('returns the 8 licenses expiring soonest and counts all of them', async () => {
    await insertLicenses(30, 'soon.test', 3); // expire in 3 days + n seconds: all within 7 and 30 days
    const stats = (await ok('{ dashboardStats { expiringIn7Days expiringIn30Days totalLicenses expiringLicenses { customerEmail expiresAt } } }')).dashboardStats;
    const expected = await t.prisma.license.findMany({
      where: { tenantId: admin.tenantId, status: 'active', expiresAt: { gt: new Date(T), lte: new Date(T + 30 * DAY) } },
      orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }],
    });
    expect(expected).toHaveLength(30);
    expect(stats.expiringIn7Days).toBe(30);
    expect(stats.expiringIn30Days).toBe(30);
    expect(stats.expiringLicenses.map((row: { customerEmail: string }) => row.customerEmail)).toEqual(expected.slice(0, 8).map((license) => license.customerEmail));
  });
});

describe('activation_days rollup', () => {
  const rollup = () => t.prisma.$queryRaw<{ product_id: string; day: Date; n: number }[]>`
    SELECT product_id, day, sum(activations)::int AS n FROM activation_days WHERE tenant_id = ${admin.tenantId}::uuid
     GROUP BY 1, 2 HAVING sum(activations) <> 0 ORDER BY 1, 2`;
  const raw = () => t.prisma.$queryRaw<{ product_id: string; day: Date; n: number }[]>`
    SELECT l.product_id, (a.created_at AT TIME ZONE 'UTC')::date AS day, count(*)::int AS n
      FROM activations a JOIN licenses l ON l.id = a.license_id WHERE a.tenant_id = ${admin.tenantId}::uuid
     GROUP BY 1, 2 ORDER BY 1, 2`;

  it('equals the raw count per product and day after random inserts and deletions, including a cascade', async () => {
    const other = await t.seedProduct(admin.tenantId, 'Viewer');
    const licenses: string[] = [];
    for (const product of [productId, productId, productId, other.id, other.id, other.id]) {
      licenses.push((await t.seedLicense(admin.tenantId, product, { maxActivations: 1000 })).license.id);
    }
    // 600 activations at random times over 40 days, on random licenses, from several statements.
    for (let batch = 0; batch < 6; batch++) {
      await t.prisma.$executeRaw`
        INSERT INTO activations (id, tenant_id, license_id, created_at, last_seen_at)
        SELECT gen_random_uuid(), ${admin.tenantId}::uuid, (${licenses}::uuid[])[1 + floor(random() * ${licenses.length})::int],
               ${new Date(T).toISOString()}::timestamptz - random() * interval '40 days', now()
          FROM generate_series(1, 100)`;
    }
    await t.prisma.$executeRaw`DELETE FROM activations WHERE tenant_id = ${admin.tenantId}::uuid AND random() < 0.3`;
    await t.prisma.$executeRaw`UPDATE activations SET deactivated_at = now() WHERE tenant_id = ${admin.tenantId}::uuid AND random() < 0.3`;
    expect((await raw()).length).toBeGreaterThan(20);
    expect(await rollup()).toEqual(await raw());
    // Deleting a license deletes its activations by cascade: the rollup follows.
    await t.prisma.license.delete({ where: { id: licenses[0] } });
    expect(await rollup()).toEqual(await raw());
  });
});

/** The seat pool's definition, point by point (the query the one-pass version replaced). */
const simpleSeatPool = (tenantId: string, points: Date[]) =>
  Promise.all(points.map(async (at) => {
    const inForce = Prisma.sql`l.tenant_id = ${tenantId}::uuid AND l.created_at <= ${at} AND (l.revoked_at IS NULL OR l.revoked_at > ${at}) AND (l.expires_at IS NULL OR l.expires_at > ${at})`;
    const [row] = await t.prisma.$queryRaw<{ used: number; available: number }[]>`
      SELECT (SELECT count(*) FROM activations a JOIN licenses l ON l.id = a.license_id
               WHERE a.tenant_id = ${tenantId}::uuid AND a.created_at <= ${at} AND (a.deactivated_at IS NULL OR a.deactivated_at > ${at}) AND ${inForce})::int AS used,
             (SELECT coalesce(sum(l.max_activations), 0) FROM licenses l WHERE ${inForce})::int AS available`;
    return [at.toISOString(), row.used, row.available];
  }));

describe('seat pool in one pass', () => {
  it('equals the bucket-by-bucket definition on random data, boundaries included', async () => {
    const tenant = await t.seedTenant({ name: 'Pool Co', keyPrefix: 'POOL' });
    const product = await t.seedProduct(tenant.id, 'Pool');
    // Times are whole days or hours before T, many of them exactly on a bucket's end.
    const when = (offset: string) => Prisma.raw(`'${new Date(T).toISOString()}'::timestamptz - ${offset}`);
    await t.prisma.$executeRaw`
      INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, status, expires_at, revoked_at, created_at, updated_at)
      SELECT gen_random_uuid(), ${tenant.id}::uuid, ${product.id}::uuid, md5(random()::text || n), 'POOL-…-' || n, 1 + floor(random() * 5)::int,
             CASE WHEN random() < 0.2 THEN 'revoked' ELSE 'active' END::license_status,
             CASE WHEN random() < 0.3 THEN NULL ELSE ${when("floor(random() * 50 - 10) * interval '1 day'")} END,
             NULL, ${when("floor(random() * 45 * 24) * interval '1 hour'")}, now()
        FROM generate_series(1, 300) AS n`;
    await t.prisma.$executeRaw`UPDATE licenses SET revoked_at = created_at + floor(random() * 10) * interval '1 day' WHERE tenant_id = ${tenant.id}::uuid AND status = 'revoked'`;
    await t.prisma.$executeRaw`
      INSERT INTO activations (id, tenant_id, license_id, created_at, last_seen_at, deactivated_at)
      SELECT gen_random_uuid(), ${tenant.id}::uuid, l.id, c, now(), CASE WHEN random() < 0.4 THEN c + floor(random() * 20) * interval '1 day' END
        FROM licenses l CROSS JOIN generate_series(1, 4) AS n
        CROSS JOIN LATERAL (SELECT ${when("floor(random() * 40 * 24) * interval '1 hour'")} AS c) x
       WHERE l.tenant_id = ${tenant.id}::uuid AND random() < 0.6`;
    const actor = systemActor(tenant.id);
    const ctx = { db: t.deps.db, secrets: t.deps.secrets, now: new Date(T), actor, meta: NO_META };
    for (const [range, granularity] of [['LAST_30_DAYS', 'DAY'], ['LAST_7_DAYS', 'DAY'], ['TODAY', 'DAY'], ['LAST_30_DAYS', 'WEEK'], ['LAST_30_DAYS', 'MONTH']] as [AnalyticsRange, Granularity][]) {
      const pool = await seatPool(ctx, analyticsWindow(ctx, range, granularity));
      const expected = await simpleSeatPool(tenant.id, pool.map((point) => point.at));
      expect(pool.map((point) => [point.at.toISOString(), point.seatsUsed, point.seatsAvailable])).toEqual(expected);
      expect(pool.some((point) => point.seatsUsed > 0)).toBe(true);
    }
  });
});

describe('license and activation tallies', () => {
  /** The figures by their plain definitions, straight from the licenses and activations. */
  async function rawFigures(tenantId: string, now: Date) {
    const at = now.toISOString();
    const [row] = await t.prisma.$queryRaw<Record<string, number>[]>`
      SELECT count(*)::int AS total,
             count(*) FILTER (WHERE status = 'active' AND (expires_at IS NULL OR expires_at > ${at}::timestamptz))::int AS active,
             count(*) FILTER (WHERE status = 'active' AND expires_at <= ${at}::timestamptz)::int AS expired,
             count(*) FILTER (WHERE status = 'revoked')::int AS revoked,
             count(*) FILTER (WHERE status = 'suspended')::int AS suspended,
             count(*) FILTER (WHERE status = 'active' AND expires_at > ${at}::timestamptz AND expires_at <= ${at}::timestamptz + interval '7 days')::int AS within7,
             count(*) FILTER (WHERE status = 'active' AND expires_at > ${at}::timestamptz + interval '7 days' AND expires_at <= ${at}::timestamptz + interval '30 days')::int AS within30,
             count(*) FILTER (WHERE status = 'active' AND expires_at > ${at}::timestamptz + interval '30 days' AND expires_at <= ${at}::timestamptz + interval '90 days')::int AS within90,
             count(*) FILTER (WHERE status = 'active' AND expires_at > ${at}::timestamptz + interval '90 days')::int AS later,
             count(*) FILTER (WHERE status = 'active' AND expires_at IS NULL)::int AS perpetual,
             (SELECT count(*) FROM activations WHERE tenant_id = ${tenantId}::uuid AND deactivated_at IS NULL)::int AS activations
        FROM licenses WHERE tenant_id = ${tenantId}::uuid`;
    const byProduct = await t.prisma.$queryRaw<{ productId: string; productName: string; licenses: number; activeLicenses: number }[]>`
      SELECT p.id AS "productId", p.name AS "productName", count(l.id)::int AS licenses,
             count(l.id) FILTER (WHERE l.status = 'active' AND (l.expires_at IS NULL OR l.expires_at > ${at}::timestamptz))::int AS "activeLicenses"
        FROM products p LEFT JOIN licenses l ON l.product_id = p.id WHERE p.tenant_id = ${tenantId}::uuid
       GROUP BY p.id, p.name ORDER BY licenses DESC, p.name`;
    return { row, byProduct };
  }

  async function expectFiguresMatch(tenantId: string, now: Date) {
    const actor = systemActor(tenantId);
    const ctx = { db: t.deps.db, secrets: t.deps.secrets, now, actor, meta: NO_META };
    const { row, byProduct } = await rawFigures(tenantId, now);
    const stats = await dashboardStats(ctx);
    expect({ active: stats.activeLicenses, total: stats.totalLicenses, activations: stats.activations, in7: stats.expiringIn7Days, in30: stats.expiringIn30Days })
      .toEqual({ active: row.active, total: row.total, activations: row.activations, in7: row.within7, in30: row.within7 + row.within30 });
    const window = analyticsWindow(ctx, 'LAST_30_DAYS');
    expect(await licenseDistribution(ctx, window)).toEqual({
      byStatus: { active: row.active, expired: row.expired, suspended: row.suspended, revoked: row.revoked },
      byExpiry: { expired: row.expired, within7Days: row.within7, within30Days: row.within30, within90Days: row.within90, later: row.later, perpetual: row.perpetual },
    });
    expect(await licensesByProduct(ctx, window)).toEqual(byProduct);
    const products = await listProducts(ctx);
    expect(Object.fromEntries(products.map((product) => [product.id, product._count.licenses])))
      .toEqual(Object.fromEntries(byProduct.map((product) => [product.productId, product.licenses])));
    return row;
  }

  it('give the same figures as counting the rows, after random inserts, updates, revocations and deletions', async () => {
    const tenant = await t.seedTenant({ name: 'Tally Co', keyPrefix: 'TALLY' });
    const products = await Promise.all(['Alpha', 'Beta', 'Gamma'].map((name) => t.seedProduct(tenant.id, name)));
    await t.seedProduct(tenant.id, 'Unused');
    const ids = products.map((product) => product.id);
    const now = new Date(T);
    // Licenses on random products, expiring anywhere from 100 days ago to 200 days ahead or never; some revoked, some suspended.
    await t.prisma.$executeRaw`
      INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, status, expires_at, revoked_at, created_at, updated_at)
      SELECT gen_random_uuid(), ${tenant.id}::uuid, (${ids}::uuid[])[1 + floor(random() * 3)::int], md5(random()::text || n), 'TALLY-…-' || n, 3,
             CASE WHEN random() < 0.15 THEN 'revoked' WHEN random() < 0.12 THEN 'suspended' ELSE 'active' END::license_status,
             CASE WHEN random() < 0.3 THEN NULL ELSE ${now.toISOString()}::timestamptz + floor(random() * 300 - 100) * interval '1 day' END,
             NULL, ${now.toISOString()}::timestamptz - interval '200 days', now()
        FROM generate_series(1, 400) AS n`;
    await t.prisma.$executeRaw`
      INSERT INTO activations (id, tenant_id, license_id, created_at, last_seen_at, deactivated_at)
      SELECT gen_random_uuid(), ${tenant.id}::uuid, l.id, now(), now(), CASE WHEN random() < 0.3 THEN now() END
        FROM licenses l CROSS JOIN generate_series(1, 3) WHERE l.tenant_id = ${tenant.id}::uuid AND random() < 0.7`;
    const first = await expectFiguresMatch(tenant.id, now);
    expect(Math.min(first.active, first.expired, first.revoked, first.suspended, first.within7, first.within30, first.perpetual, first.activations)).toBeGreaterThan(0);

    // Changes of every kind the triggers follow, in several statements and transactions.
    await t.prisma.$executeRaw`UPDATE licenses SET status = 'revoked', revoked_at = now() WHERE tenant_id = ${tenant.id}::uuid AND status = 'active' AND random() < 0.2`;
    // Suspend, reinstate, and revoke suspended licenses (the lifecycle's transitions).
    await t.prisma.$executeRaw`UPDATE licenses SET status = 'active', suspended_at = NULL WHERE tenant_id = ${tenant.id}::uuid AND status = 'suspended' AND random() < 0.4`;
    await t.prisma.$executeRaw`UPDATE licenses SET status = 'suspended', suspended_at = now() WHERE tenant_id = ${tenant.id}::uuid AND status = 'active' AND random() < 0.15`;
    await t.prisma.$executeRaw`UPDATE licenses SET status = 'revoked', revoked_at = now() WHERE tenant_id = ${tenant.id}::uuid AND status = 'suspended' AND random() < 0.2`;
    await t.prisma.$executeRaw`UPDATE licenses SET expires_at = CASE WHEN random() < 0.5 THEN NULL ELSE ${now.toISOString()}::timestamptz + floor(random() * 60 - 20) * interval '1 day' END
                               WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.3`;
    await t.prisma.$executeRaw`UPDATE licenses SET product_id = ${ids[2]}::uuid WHERE tenant_id = ${tenant.id}::uuid AND product_id = ${ids[0]}::uuid AND random() < 0.3`;
    await t.prisma.$executeRaw`UPDATE licenses SET max_activations = 7, customer_email = 'x@y.test' WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.3`;
    await t.prisma.$executeRaw`UPDATE activations SET deactivated_at = now() WHERE tenant_id = ${tenant.id}::uuid AND deactivated_at IS NULL AND random() < 0.3`;
    await t.prisma.$executeRaw`UPDATE activations SET deactivated_at = NULL WHERE tenant_id = ${tenant.id}::uuid AND deactivated_at IS NOT NULL AND random() < 0.2`;
    await t.prisma.$executeRaw`DELETE FROM activations WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.1`;
    await t.prisma.$transaction(async (tx) => {
      // Deleting licenses deletes their activations by cascade; a rolled-back change leaves no trace.
      await tx.$executeRaw`DELETE FROM licenses WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.1`;
    });
    await t.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`DELETE FROM licenses WHERE tenant_id = ${tenant.id}::uuid`;
      throw new Error('rolled back');
    }).catch((error: Error) => expect(error.message).toBe('rolled back'));
    await expectFiguresMatch(tenant.id, now);
    // Time moves on: what expired meanwhile is counted as expired without any write.
    await expectFiguresMatch(tenant.id, new Date(T + 45 * DAY));
  });
});

describe('expiry counts (license_expiry_days rollup)', () => {
  const HOUR = 3_600_000;
  /** The counts by the one rule in code (predicates.ts), license by license. */
  async function plainCounts(tenantId: string, now: Date) {
    const licenses = await t.prisma.license.findMany({ where: { tenantId }, select: { status: true, expiresAt: true, productId: true } });
    const count = (keep: (license: (typeof licenses)[number]) => boolean) => licenses.filter(keep).length;
    const within = (window: ExpiryWindow) => count((license) => isExpiring(license, now, window));
    const status = (name: string) => count((license) => licenseStatus(license, now) === name);
    return {
      byStatus: { active: status('active'), expired: status('expired'), suspended: status('suspended'), revoked: status('revoked') },
      byExpiry: {
        expired: status('expired'), within7Days: within({ to: 7 }), within30Days: within({ from: 8, to: 30 }), within90Days: within({ from: 31, to: 90 }),
        later: within({ from: 91 }), perpetual: count((license) => licenseStatus(license, now) === 'active' && license.expiresAt === null),
      },
      activeByProduct: Object.fromEntries([...new Set(licenses.map((license) => license.productId))].sort().map((id) => [id, count((license) => license.productId === id && licenseStatus(license, now) === 'active')])),
    };
  }

  async function expectCountsMatch(tenantId: string, now: Date) {
    const ctx = { db: t.deps.db, secrets: t.deps.secrets, now, actor: systemActor(tenantId), meta: NO_META };
    const plain = await plainCounts(tenantId, now);
    expect(await licenseDistribution(ctx, analyticsWindow(ctx, 'TODAY'))).toEqual({ byStatus: plain.byStatus, byExpiry: plain.byExpiry });
    const byProduct = await licensesByProduct(ctx, analyticsWindow(ctx, 'TODAY'));
    expect(Object.fromEntries(byProduct.filter((row) => row.licenses > 0).map((row) => [row.productId, row.activeLicenses]).sort())).toEqual(plain.activeByProduct);
    const stats = await dashboardStats(ctx);
    expect({ active: stats.activeLicenses, in7: stats.expiringIn7Days, in30: stats.expiringIn30Days })
      .toEqual({ active: plain.byStatus.active, in7: plain.byExpiry.within7Days, in30: plain.byExpiry.within7Days + plain.byExpiry.within30Days });
    return plain;
  }

  /** The rollup's rows summed, against the licenses grouped the same way. */
  async function expectRollupMatches(tenantId: string) {
    const rollup = await t.prisma.$queryRaw<unknown[]>`
      SELECT product_id, day, sum(licenses)::int AS n FROM license_expiry_days WHERE tenant_id = ${tenantId}::uuid GROUP BY 1, 2 HAVING sum(licenses) <> 0 ORDER BY 1, 2`;
    const raw = await t.prisma.$queryRaw<unknown[]>`
      SELECT product_id, (expires_at AT TIME ZONE 'UTC')::date AS day, count(*)::int AS n FROM licenses
       WHERE tenant_id = ${tenantId}::uuid AND status = 'active' AND expires_at IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2`;
    expect(rollup).toEqual(raw);
  }

  it('equal the plain definition at any instant of a day, after random writes, without any vacuum', async () => {
    const tenant = await t.seedTenant({ name: 'Expiry Co', keyPrefix: 'EXPD' });
    const ids = (await Promise.all(['One', 'Two', 'Three'].map((name) => t.seedProduct(tenant.id, name)))).map((product) => product.id);
    const now = new Date(T - 5 * HOUR); // 07:00 UTC: expiries earlier today are expired, later today expiring (countdown 0)
    const at = now.toISOString();
    // Random instants from 50 days ago to 200 days ahead, 60 of them today (before and after now); some perpetual, revoked, suspended.
    await t.prisma.$executeRaw`
      INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, status, expires_at, created_at, updated_at)
      SELECT gen_random_uuid(), ${tenant.id}::uuid, (${ids}::uuid[])[1 + floor(random() * 3)::int], md5(random()::text || n), 'EXPD-…-' || n, 1,
             CASE WHEN random() < 0.1 THEN 'revoked' WHEN random() < 0.1 THEN 'suspended' ELSE 'active' END::license_status,
             CASE WHEN random() < 0.15 THEN NULL
                  WHEN n <= 60 THEN date_trunc('day', ${at}::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + random() * interval '1 day'
                  ELSE ${at}::timestamptz + (random() * 250 - 50) * interval '1 day' END,
             ${at}::timestamptz - interval '300 days', now()
        FROM generate_series(1, 600) AS n`;
    const first = await expectCountsMatch(tenant.id, now);
    expect(Math.min(first.byStatus.expired, first.byExpiry.within7Days, first.byExpiry.within30Days, first.byExpiry.within90Days, first.byExpiry.later, first.byExpiry.perpetual)).toBeGreaterThan(0);
    await expectRollupMatches(tenant.id);

    // Writes of every kind the trigger follows: new expiry instants (today's included), status changes, a product change, deletions, a rollback.
    await t.prisma.$executeRaw`UPDATE licenses SET expires_at = ${at}::timestamptz + (random() * 40 - 10) * interval '1 day' WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.3`;
    await t.prisma.$executeRaw`UPDATE licenses SET expires_at = ${at}::timestamptz + (random() * 10 - 5) * interval '1 hour' WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.05`;
    await t.prisma.$executeRaw`UPDATE licenses SET expires_at = NULL WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.05`;
    await t.prisma.$executeRaw`UPDATE licenses SET status = 'revoked', revoked_at = now() WHERE tenant_id = ${tenant.id}::uuid AND status = 'active' AND random() < 0.1`;
    await t.prisma.$executeRaw`UPDATE licenses SET status = 'suspended' WHERE tenant_id = ${tenant.id}::uuid AND status = 'active' AND random() < 0.1`;
    await t.prisma.$executeRaw`UPDATE licenses SET status = 'active' WHERE tenant_id = ${tenant.id}::uuid AND status = 'suspended' AND random() < 0.5`;
    await t.prisma.$executeRaw`UPDATE licenses SET product_id = ${ids[1]}::uuid WHERE tenant_id = ${tenant.id}::uuid AND product_id = ${ids[0]}::uuid AND random() < 0.3`;
    await t.prisma.$executeRaw`UPDATE licenses SET customer_email = 'x@y.test', max_activations = 3 WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.3`;
    await t.prisma.$executeRaw`DELETE FROM licenses WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.1`;
    await t.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`UPDATE licenses SET expires_at = NULL WHERE tenant_id = ${tenant.id}::uuid`;
      throw new Error('rolled back');
    }).catch((error: Error) => expect(error.message).toBe('rolled back'));
    await expectRollupMatches(tenant.id);
    // Now at the first and last millisecond of the day, mid-day, and later days: licenses move between windows and expire without any write.
    const startOfDay = T - 12 * HOUR;
    for (const instant of [now.getTime(), startOfDay, startOfDay + DAY - 1, T, T + 8 * DAY - 1, T + 45 * DAY + 3 * HOUR, T - 20 * DAY]) {
      await expectCountsMatch(tenant.id, new Date(instant));
    }
  });
});

describe('seat pool rollup (seat_pool_changes)', () => {
  const HOUR = 3_600_000;
  // Now is inside an hour, so the current bucket's point is not an hour boundary.
  const NOW = T + 37 * 60_000 + 13_000;

  it('equals the definition when now is inside an hour, with changes between now and the next hour, and after every kind of change', async () => {
    const tenant = await t.seedTenant({ name: 'Hourly Co', keyPrefix: 'HOURLY' });
    const product = await t.seedProduct(tenant.id, 'Pool');
    // Minute-resolution times over the last 40 days; a share of them in the current hour, before and after now.
    const when = (spread: string) => Prisma.raw(`'${new Date(NOW).toISOString()}'::timestamptz + ${spread}`);
    const recent = "CASE WHEN random() < 0.25 THEN floor(random() * 120 - 60) * interval '1 minute' ELSE -floor(random() * 40 * 24 * 60) * interval '1 minute' END";
    // Expiries: a share in the next hour (some before the next boundary, some after), the rest from 10 days ago to 40 ahead.
    const expiry = "CASE WHEN random() < 0.3 THEN floor(random() * 60) * interval '1 minute' ELSE floor(random() * 50 - 10) * interval '1 day' END";
    await t.prisma.$executeRaw`
      INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, status, expires_at, revoked_at, created_at, updated_at)
      SELECT gen_random_uuid(), ${tenant.id}::uuid, ${product.id}::uuid, md5(random()::text || n), 'HOURLY-…-' || n, 1 + floor(random() * 5)::int,
             'active', CASE WHEN random() < 0.3 THEN NULL ELSE ${when(expiry)} END, NULL,
             ${when("- interval '45 days' + floor(random() * 10) * interval '1 day'")}, now()
        FROM generate_series(1, 200) AS n`;
    await t.prisma.$executeRaw`
      INSERT INTO activations (id, tenant_id, license_id, created_at, last_seen_at, deactivated_at)
      SELECT gen_random_uuid(), ${tenant.id}::uuid, l.id, c, now(), CASE WHEN random() < 0.4 THEN c + floor(random() * 3 * 24 * 60) * interval '1 minute' END
        FROM licenses l CROSS JOIN generate_series(1, 4) AS n
        CROSS JOIN LATERAL (SELECT ${when(recent)} + n * interval '0' AS c) x
       WHERE l.tenant_id = ${tenant.id}::uuid AND random() < 0.7`;
    await t.prisma.$executeRaw`UPDATE licenses SET status = 'revoked', revoked_at = ${when(recent)} WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.2`;

    const actor = systemActor(tenant.id);
    const check = async (now: number) => {
      const ctx = { db: t.deps.db, secrets: t.deps.secrets, now: new Date(now), actor, meta: NO_META };
      for (const [range, granularity] of [['LAST_30_DAYS', 'DAY'], ['LAST_7_DAYS', 'DAY'], ['TODAY', 'DAY'], ['LAST_30_DAYS', 'WEEK'], ['LAST_30_DAYS', 'MONTH']] as [AnalyticsRange, Granularity][]) {
        const pool = await seatPool(ctx, analyticsWindow(ctx, range, granularity));
        const expected = await simpleSeatPool(tenant.id, pool.map((point) => point.at));
        expect(pool.map((point) => [point.at.toISOString(), point.seatsUsed, point.seatsAvailable])).toEqual(expected);
      }
    };
    // Rows with a bound between now and the next hour exist, so the correction is exercised.
    const [{ later }] = await t.prisma.$queryRaw<{ later: number }[]>`
      SELECT count(*)::int AS later FROM activations a JOIN licenses l ON l.id = a.license_id
       WHERE a.tenant_id = ${tenant.id}::uuid AND least(a.deactivated_at, l.revoked_at, l.expires_at) > ${new Date(NOW).toISOString()}::timestamptz
         AND least(a.deactivated_at, l.revoked_at, l.expires_at) <= ${new Date(T + HOUR).toISOString()}::timestamptz`;
    expect(later).toBeGreaterThan(0);
    await check(NOW);
    await check(T); // on the hour
    await check(T + HOUR - 1);

    // Every change the triggers follow rewrites the history as the definition computes it.
    await t.prisma.$executeRaw`UPDATE licenses SET expires_at = ${when(expiry)} WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.3`;
    await t.prisma.$executeRaw`UPDATE licenses SET max_activations = max_activations + 3 WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.3`;
    await t.prisma.$executeRaw`UPDATE licenses SET status = 'revoked', revoked_at = ${when(recent)} WHERE tenant_id = ${tenant.id}::uuid AND status = 'active' AND random() < 0.2`;
    await t.prisma.$executeRaw`UPDATE licenses SET created_at = created_at - interval '3 days' WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.2`;
    await t.prisma.$executeRaw`UPDATE activations SET deactivated_at = ${when(recent)} WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.3`;
    await t.prisma.$executeRaw`UPDATE activations SET deactivated_at = NULL WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.1`;
    await t.prisma.$executeRaw`DELETE FROM activations WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.1`;
    await t.prisma.$executeRaw`DELETE FROM licenses WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.1`;
    await check(NOW);
    await check(T + 3 * DAY + 17 * 60_000);

    // The housekeeping job keeps the hours before 35 days ago summed under at = -infinity: the same figures, and a
    // change written later to such an hour (a license created 40 days ago renewed, revoked, resized; an old
    // activation) goes to that row directly.
    const rowsBelow = async (boundary: number) => (await t.prisma.$queryRaw<{ n: number; folded: number }[]>`
      SELECT count(*) FILTER (WHERE at > '-infinity')::int AS n, count(*) FILTER (WHERE at = '-infinity')::int AS folded
        FROM seat_pool_changes WHERE tenant_id = ${tenant.id}::uuid AND at < ${new Date(boundary).toISOString()}::timestamptz`)[0];
    const boundary = T - 35 * DAY; // T is noon: the boundary is the start of that day
    expect((await rowsBelow(boundary)).n).toBeGreaterThan(0);
    expect(await foldSeatPoolHistory({ db: t.deps.db, now: new Date(NOW) })).toBeGreaterThan(0);
    expect(await rowsBelow(boundary - 12 * HOUR)).toMatchObject({ n: 0, folded: expect.any(Number) });
    expect((await rowsBelow(boundary - 12 * HOUR)).folded).toBeGreaterThan(0);
    await check(NOW);
    await check(T + 3 * DAY + 17 * 60_000);
    await t.prisma.$executeRaw`UPDATE licenses SET max_activations = max_activations + 2 WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.5`;
    await t.prisma.$executeRaw`UPDATE licenses SET expires_at = created_at + interval '1 day' WHERE tenant_id = ${tenant.id}::uuid AND random() < 0.2`;
    await t.prisma.$executeRaw`UPDATE licenses SET status = 'revoked', revoked_at = created_at + interval '2 days' WHERE tenant_id = ${tenant.id}::uuid AND status = 'active' AND random() < 0.2`;
    await t.prisma.$executeRaw`
      INSERT INTO activations (id, tenant_id, license_id, created_at, last_seen_at, deactivated_at)
      SELECT gen_random_uuid(), l.tenant_id, l.id, l.created_at + interval '1 hour', now(), CASE WHEN random() < 0.5 THEN l.created_at + interval '5 hours' END
        FROM licenses l WHERE l.tenant_id = ${tenant.id}::uuid AND random() < 0.5`;
    expect((await rowsBelow(boundary - 12 * HOUR)).n).toBe(0);
    await check(NOW);
    await check(T + 3 * DAY + 17 * 60_000);
    expect(await foldSeatPoolHistory({ db: t.deps.db, now: new Date(NOW) })).toBe(0); // nothing left to fold
  });
});

describe('floating pool consumption in one pass', () => {
  /**
   * The definition, bucket by bucket: the query the one-pass version replaced, with one fix. It summed the changes
   * in ROWS mode, so when several sessions changed at the same instant, "the level at a bucket's start" was that of
   * an arbitrary one of them (e.g. 1 after 7 of 8 simultaneous check-ins) and could stay wrong for every later
   * bucket; RANGE mode gives every simultaneous change the level after all of them.
   */
  const simplePool = (tenantId: string, licenseId: string | null, from: Date, to: Date, bucket: keyof typeof POOL_BUCKETS) =>
    t.prisma.$queryRawUnsafe<{ bucketStart: Date; bucketEnd: Date; peakInUse: number; poolSize: number }[]>(
      `WITH bounds AS (
         SELECT date_trunc($3, $4::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS t0, $5::timestamptz AS t1
       ), sessions AS (
         SELECT s.created_at AS started, COALESCE(s.ended_at, s.lease_expires_at) AS ended
           FROM floating_sessions s, bounds
          WHERE s.tenant_id = $1::uuid AND ($2::uuid IS NULL OR s.license_id = $2::uuid)
            AND s.created_at < bounds.t1 AND COALESCE(s.ended_at, s.lease_expires_at) > bounds.t0
       ), changes AS (
         SELECT started AS at, 1 AS delta FROM sessions UNION ALL SELECT ended, -1 FROM sessions
       ), levels AS (
         SELECT at, delta, SUM(delta) OVER (ORDER BY at, delta RANGE UNBOUNDED PRECEDING) AS level FROM changes
       ), buckets AS (
         SELECT b AS bucket_start, LEAST(b + $6::interval, bounds.t1) AS bucket_end
           FROM bounds, generate_series(bounds.t0, bounds.t1 - interval '1 millisecond', $6::interval) AS b
       )
       SELECT b.bucket_start AS "bucketStart", b.bucket_end AS "bucketEnd",
              GREATEST(
                COALESCE((SELECT l.level FROM levels l WHERE l.at <= b.bucket_start ORDER BY l.at DESC, l.delta DESC LIMIT 1), 0),
                COALESCE((SELECT MAX(l.level) FROM levels l WHERE l.at > b.bucket_start AND l.at < b.bucket_end), 0)
              )::int AS "peakInUse",
              (SELECT COALESCE(SUM(l.floating_seats), 0) FROM licenses l
                WHERE l.tenant_id = $1::uuid AND ($2::uuid IS NULL OR l.id = $2::uuid) AND l.floating_seats IS NOT NULL
                  AND l.created_at < b.bucket_end
                  AND (l.status <> 'revoked' OR l.revoked_at > b.bucket_start)
                  AND (l.expires_at IS NULL OR l.expires_at > b.bucket_start)
                  -- an empty validity (ended at or before its creation) counts nowhere
                  AND (l.status <> 'revoked' OR l.revoked_at > l.created_at)
                  AND (l.expires_at IS NULL OR l.expires_at > l.created_at))::int AS "poolSize"
         FROM buckets b
        ORDER BY b.bucket_start`,
      tenantId, licenseId, bucket, from, to, POOL_BUCKETS[bucket],
    );

  it('equals the bucket-by-bucket definition on random sessions and licenses, boundaries included', async () => {
    const tenant = await t.seedTenant({ name: 'Float Co', keyPrefix: 'FLOAT' });
    const product = await t.seedProduct(tenant.id, 'Floaty');
    const base = `'${new Date(T).toISOString()}'::timestamptz`;
    // Licenses created, revoked and expiring on whole hours or at random minutes over 10 days around T.
    await t.prisma.$executeRawUnsafe(`
      INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, floating_seats, status, expires_at, revoked_at, created_at, updated_at)
      SELECT gen_random_uuid(), $1::uuid, $2::uuid, md5(random()::text || n), 'FLOAT-…-' || n, 1,
             CASE WHEN random() < 0.15 THEN NULL ELSE 1 + floor(random() * 6)::int END,
             CASE WHEN random() < 0.2 THEN 'revoked' ELSE 'active' END::license_status,
             CASE WHEN random() < 0.4 THEN NULL ELSE ${base} + floor(random() * 240 - 120) * interval '1 hour' + CASE WHEN random() < 0.5 THEN floor(random() * 60) * interval '1 minute' ELSE interval '0' END END,
             NULL, ${base} - floor(random() * 240) * interval '1 hour' + CASE WHEN random() < 0.3 THEN interval '150 hours' ELSE interval '0' END, now()
        FROM generate_series(1, 60) AS n`, tenant.id, product.id);
    await t.prisma.$executeRawUnsafe(`UPDATE licenses SET revoked_at = CASE WHEN random() < 0.1 THEN NULL ELSE created_at + floor(random() * 100) * interval '1 hour' END
                                       WHERE tenant_id = $1::uuid AND status = 'revoked'`, tenant.id);
    // Sessions starting on whole hours or at random minutes; ended, or still leased (some leases in the future).
    await t.prisma.$executeRawUnsafe(`
      INSERT INTO floating_sessions (id, tenant_id, license_id, token_digest, created_at, last_heartbeat_at, lease_expires_at, ended_at, end_reason)
      SELECT gen_random_uuid(), l.tenant_id, l.id, md5(random()::text || l.id || n), c, c, c + d + interval '15 minutes',
             CASE WHEN random() < 0.7 THEN c + d END, NULL
        FROM licenses l CROSS JOIN generate_series(1, 8) AS n
        CROSS JOIN LATERAL (SELECT ${base} - floor(random() * 200 + n * 0) * interval '1 hour' + CASE WHEN random() < 0.5 THEN floor(random() * 60) * interval '1 minute' ELSE interval '0' END AS c,
                                   CASE WHEN random() < 0.3 THEN floor(random() * 4) * interval '1 hour' ELSE floor(random() * 300) * interval '1 minute' END AS d) x
       WHERE l.tenant_id = $1::uuid AND l.floating_seats IS NOT NULL`, tenant.id);
    const [one] = await t.prisma.license.findMany({ where: { tenantId: tenant.id, floatingSeats: { not: null } }, take: 1 });
    const ctx = { db: t.deps.db, secrets: t.deps.secrets, now: new Date(T), actor: systemActor(tenant.id), meta: NO_META };
    const cases: [number, number, keyof typeof POOL_BUCKETS][] = [
      [T - 30 * DAY, T, 'day'], [T - 7 * DAY, T, 'day'], [T - DAY, T + 7 * 60_000, 'hour'], [T - 3 * DAY - 17 * 60_000, T + 90 * 60_000, 'hour'],
      [T - 40 * DAY, T + 5 * DAY, 'week'], [T - 2 * 3_600_000, T - 3_600_000, 'hour'],
    ];
    let busy = 0;
    const compare = async () => {
      for (const [from, to, bucket] of cases) {
        for (const licenseId of [null, one.id]) {
          const query = { from: new Date(from), to: new Date(to), bucket, ...(licenseId && { licenseId }) };
          const pool = await floatingPoolConsumption(ctx, query);
          expect(pool).toEqual(await simplePool(tenant.id, licenseId, new Date(from), new Date(to), bucket));
          busy += pool.filter((point) => point.peakInUse > 0 && point.poolSize > 0).length;
        }
      }
    };
    const cachedHours = () => t.prisma.floatingPeakHour.count({ where: { tenantId: tenant.id } });
    await compare(); // fills the cache of completed hours
    expect(busy).toBeGreaterThan(5); // random data: enough busy buckets that the comparison is not vacuous
    expect(await cachedHours()).toBeGreaterThan(24 * 30);
    await compare(); // reads it

    // Changes in the past (not something the service does, but a backfill or an operator could): the triggers
    // forget exactly the hours they touch, and the next read recomputes them.
    const cachedBefore = await cachedHours();
    await t.prisma.$executeRawUnsafe(`
      INSERT INTO floating_sessions (id, tenant_id, license_id, token_digest, created_at, last_heartbeat_at, lease_expires_at)
      SELECT gen_random_uuid(), $1::uuid, $2::uuid, md5(random()::text || n), ${base} - n * interval '7 hours', ${base}, ${base} - n * interval '7 hours' + interval '3 hours'
        FROM generate_series(1, 12) AS n`, tenant.id, one.id);
    expect(await cachedHours()).toBeLessThan(cachedBefore);
    await t.prisma.$executeRawUnsafe(`UPDATE floating_sessions SET ended_at = created_at + interval '10 minutes' WHERE tenant_id = $1::uuid AND random() < 0.2`, tenant.id);
    await t.prisma.$executeRawUnsafe(`UPDATE floating_sessions SET created_at = created_at - interval '2 hours' WHERE tenant_id = $1::uuid AND random() < 0.1`, tenant.id);
    await t.prisma.$executeRawUnsafe(`UPDATE floating_sessions SET lease_expires_at = lease_expires_at + interval '5 hours' WHERE tenant_id = $1::uuid AND ended_at IS NULL AND random() < 0.3`, tenant.id);
    await t.prisma.$executeRawUnsafe(`DELETE FROM floating_sessions WHERE tenant_id = $1::uuid AND random() < 0.1`, tenant.id);
    await t.prisma.$executeRawUnsafe(`DELETE FROM licenses WHERE tenant_id = $1::uuid AND id <> $2::uuid AND floating_seats IS NOT NULL AND random() < 0.1`, tenant.id, one.id);
    // License changes the pool size's rollup (floating_seat_changes) follows: new expiries, revocations with and
    // without a date, seats changed, added and taken away, a license created in the hour before `to`.
    const licenseWrites = [
      `UPDATE licenses SET expires_at = coalesce(expires_at, ${base}) + floor(random() * 100 - 50) * interval '37 minutes' WHERE tenant_id = $1::uuid AND random() < 0.3`,
      `UPDATE licenses SET status = 'revoked', revoked_at = CASE WHEN random() < 0.2 THEN NULL ELSE ${base} - floor(random() * 200) * interval '1 hour' END
        WHERE tenant_id = $1::uuid AND status = 'active' AND random() < 0.15`,
      `UPDATE licenses SET floating_seats = CASE WHEN floating_seats IS NULL THEN 3 WHEN random() < 0.3 THEN NULL ELSE floating_seats + 2 END WHERE tenant_id = $1::uuid AND random() < 0.3`,
      `INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, floating_seats, status, created_at, updated_at)
       SELECT gen_random_uuid(), $1::uuid, product_id, md5(random()::text), 'FLOAT-…-late', 1, 4, 'active', ${base} + interval '3 minutes', now() FROM licenses WHERE id = $2::uuid`,
    ];
    for (const sql of licenseWrites) await t.prisma.$executeRawUnsafe(sql, tenant.id, ...(sql.includes('$2') ? [one.id] : []));
    await compare();
  });
});

describe('license search by email, split at the domain', () => {
  it('finds exactly the licenses whose email or key hint contains the text (case-insensitive, literally), after email changes and deletions', async () => {
    const tenant = await t.seedTenant({ name: 'Mail Co', keyPrefix: 'MAIL' });
    const product = await t.seedProduct(tenant.id, 'Mailer');
    // Domains as prefixes, suffixes and middles of others, a domain-like local part, wildcard characters, odd case,
    // two '@' and none (written directly: the API accepts only valid addresses).
    const emails = [
      'ann@example.test', 'Ann.Lee@Example.TEST', 'bob@sub.example.test', 'carol@example.testing.org', 'example.test@mail.org', 'dave@myexample.test',
      'a_b@x.test', 'axb@x.test', 'per%cent@x.test', 'odd@local@odd.test', 'no-at-sign.test', 'ann@EXAMPLE.test', 'zed@ex.test', null,
    ];
    // Two copies of each: hints MAIL-…-<email index><copy>.
    await seedLicensesInBulk(t.prisma, { tenantId: tenant.id, productId: product.id, count: 2 * emails.length }, (index) => ({
      keyHint: `MAIL-…-${Math.floor(index / 2)}${index % 2}`, customerEmail: emails[Math.floor(index / 2)],
    }));
    const ctx = { db: t.deps.db, secrets: t.deps.secrets, now: new Date(T), actor: systemActor(tenant.id), meta: NO_META };
    const terms = [
      'example.test', 'EXAMPLE.TEST', '@example.test', '@example.t', '@sub.example', 'ann@', 'ann@exa', 'n@example.t', 'ann.lee', '.test', 'test',
      'ex', 'a_b', '_', '%', 'per%', 'le@ex', '@', 'l@o', 'local@odd', 'odd@local@odd.test', 'e.test@m', 'nobody.test', 'sub.example.test', 'MAIL-…-1', 'MAIL-...-30',
    ];
    const check = async () => {
      for (const term of terms) {
        const page = await listLicenses(ctx, { search: term }, { first: 100 });
        // The plain definition: the text, literally and ignoring case, anywhere in the email or the key hint.
        const expected = await t.prisma.$queryRaw<{ id: string }[]>`
          SELECT id::text FROM licenses WHERE tenant_id = ${tenant.id}::uuid
             AND (strpos(lower(customer_email), lower(${term.replaceAll('...', '…')})) > 0 OR strpos(lower(key_hint), lower(${term.replaceAll('...', '…')})) > 0)`;
        expect(page.nodes.map((node) => node.id).sort(), term).toEqual(expected.map((row) => row.id).sort());
        expect(page.totalCount, term).toBe(expected.length);
      }
    };
    await check();
    expect((await listLicenses(ctx, { search: '@example.test' })).totalCount).toBe(8); // example.test(ing.org) in any case; not sub. or myexample
    // The domain tally follows email changes (the domain changed, taken away, added) and deletions.
    const rows = await t.prisma.license.findMany({ where: { tenantId: tenant.id }, orderBy: { keyHint: 'asc' }, select: { id: true } });
    await t.prisma.license.update({ where: { id: rows[0].id }, data: { customerEmail: 'ann@elsewhere.test' } });
    await t.prisma.license.update({ where: { id: rows[1].id }, data: { customerEmail: null } });
    await t.prisma.license.update({ where: { id: rows[27].id }, data: { customerEmail: 'new@example.test' } });
    await t.prisma.license.delete({ where: { id: rows[2].id } });
    terms.push('elsewhere', 'new@');
    await check();
    const tally = await t.prisma.$queryRaw<{ domain: string; n: number }[]>`
      SELECT domain, sum(licenses)::int AS n FROM license_email_domains WHERE tenant_id = ${tenant.id}::uuid GROUP BY 1 HAVING sum(licenses) <> 0 ORDER BY 1`;
    const raw = await t.prisma.$queryRaw<{ domain: string; n: number }[]>`
      SELECT lower(substring(customer_email FROM '@([^@]*)$')) AS domain, count(*)::int AS n FROM licenses
       WHERE tenant_id = ${tenant.id}::uuid AND customer_email LIKE '%@%' GROUP BY 1 ORDER BY 1`;
    expect(tally).toEqual(raw);
  });
});

describe('license search combined with each filter', () => {
  it('returns exactly the licenses that match the search and every filter, and counts them exactly or capped, against a plain check of every row', async () => {
    const tenant = await t.seedTenant({ name: 'Combo Co', keyPrefix: 'COMB' });
    const products = [await t.seedProduct(tenant.id, 'Combo One'), await t.seedProduct(tenant.id, 'Combo Two')];
    const emails = ['ann@example.test', 'Ann.Lee@Example.TEST', 'bob@sub.example.test', 'carol@example.testing.org', 'example.test@mail.org', 'a_b@x.test', 'odd@local@odd.test', null];
    const now = new Date(T);
    // Every email at every state: active perpetual, expired, expiring in 10 days, active for 100 more days; then
    // suspended and revoked ones (some expired too), over two products.
    const states = [
      { status: 'active', expiresAt: null }, { status: 'active', expiresAt: new Date(T - 2 * DAY) }, { status: 'active', expiresAt: new Date(T + 10 * DAY) },
      { status: 'active', expiresAt: new Date(T + 100 * DAY) }, { status: 'suspended', expiresAt: new Date(T + 10 * DAY) }, { status: 'suspended', expiresAt: new Date(T - DAY) },
      { status: 'revoked', expiresAt: null }, { status: 'revoked', expiresAt: new Date(T + 10 * DAY) },
    ] as const;
    for (const [p, product] of products.entries()) {
      await seedLicensesInBulk(t.prisma, { tenantId: tenant.id, productId: product.id, count: emails.length * states.length, hintPrefix: `COMB${p}` }, (index) => ({
        customerEmail: emails[index % emails.length], ...states[Math.floor(index / emails.length)], createdAt: new Date(T - index * 60_000),
      }));
    }
    // Older licenses after them, more than a search's walk first reads (SEARCH_WALK.probeFactor × 101 rows for pages of
    // 100): a term rare in the newest rows is then found by the search's indexes after all ('@': every license;
    // 'pad1': one in five).
    await seedLicensesInBulk(t.prisma, { tenantId: tenant.id, productId: products[0].id, count: SEARCH_WALK.probeFactor * 101 + 100, hintPrefix: 'PADD' }, (index) => ({
      customerEmail: `pad${index}@padding.org`, createdAt: new Date(T - (200 + index) * 60_000), ...(index % 7 === 0 ? { status: 'revoked' as const } : {}),
    }));
    const ctx = { db: t.deps.db, secrets: t.deps.secrets, now, actor: systemActor(tenant.id), meta: NO_META };
    const all = await t.prisma.license.findMany({ where: { tenantId: tenant.id } });
    const filters: LicenseFilter[] = [
      {}, { status: 'active' }, { status: 'expired' }, { status: 'suspended' }, { status: 'revoked' }, { productId: products[1].id }, { expiringWithinDays: 30 },
      { productId: products[0].id, status: 'active', expiringWithinDays: 30 }, { productId: products[1].id, status: 'expired' },
    ];
    const terms = ['example.test', '@example.t', 'ann@', 'n@example.t', '.test', '@', '_', 'COMB1-…-00', 'comb0-...-01', 'nobody-zz', 'sub.example', 'x.test', 'pad1', 'pad10'];
    // Both ways of answering a search: by its indexes (a small company: every term is rare), and walking the list first
    // (as a search common in a large company is: here every term is taken as one).
    const cases = [0, SEARCH_WALK.commonRows].flatMap((commonRows) => terms.flatMap((term) => filters.map((filter) => ({ commonRows, term, filter }))));
    const { commonRows: defaultCommonRows } = SEARCH_WALK;
    for (const { commonRows, term, filter } of cases) {
      SEARCH_WALK.commonRows = commonRows;
      try {
        const text = term.replaceAll('...', '…').toLowerCase();
        // The plain definitions: the text anywhere in the email or the key hint, ignoring case; each filter by the code form of the rule.
        const expected = all
          .filter((license) => (license.customerEmail ?? '').toLowerCase().includes(text) || license.keyHint.toLowerCase().includes(text))
          .filter((license) => !filter.productId || license.productId === filter.productId)
          .filter((license) => !filter.status || licenseStatus(license, now) === filter.status)
          .filter((license) => !filter.expiringWithinDays || isExpiring(license, now, { to: filter.expiringWithinDays }))
          .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (b.id < a.id ? -1 : 1))
          .map((license) => license.id);
        const label = `${term} ${JSON.stringify(filter)} ${commonRows ? 'by the indexes' : 'walked first'}`;
        const page = await listLicenses(ctx, { ...filter, search: term }, { first: 100 });
        expect(page.nodes.map((node) => node.id), label).toEqual(expected.slice(0, 100));
        // A search counts up to SEARCH_COUNT_CAP, the list and the bulk action's confirmation alike.
        const capped = { totalCount: Math.min(expected.length, SEARCH_COUNT_CAP), totalCountCapped: expected.length > SEARCH_COUNT_CAP };
        expect({ totalCount: page.totalCount, totalCountCapped: page.totalCountCapped }, label).toEqual(capped);
        if (expected.length > 100) {
          const next = await listLicenses(ctx, { ...filter, search: term }, { first: 100, after: page.pageInfo.endCursor });
          expect(next.nodes.map((node) => node.id), `${label} page 2`).toEqual(expected.slice(100, 200));
          const back = await listLicenses(ctx, { ...filter, search: term }, { last: 50, before: next.pageInfo.startCursor });
          expect(back.nodes.map((node) => node.id), `${label} back`).toEqual(expected.slice(50, 100));
        }
        // The bulk action's counts: exact, and capped.
        expect(await countBulkSelection(ctx, { filter: { ...filter, search: term } }), label).toEqual({ totalCount: expected.length, totalCountCapped: false });
        expect(await countBulkSelection(ctx, { filter: { ...filter, search: term } }, COUNT_CAP), label).toEqual(capped);
      } finally {
        SEARCH_WALK.commonRows = defaultCommonRows;
      }
    }
  });
});
