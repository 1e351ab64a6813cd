import { Prisma } from '../generated/prisma/client.js';
import { AppError } from '../domain/errors.js';
import { requireActor, type Actor } from './auth/actor.js';
import type { ServiceContext } from './context.js';
import { daysFrom } from './licenses.js';

// Dashboard figures (spec §2.4, §6.3) and analytics (spec §2.7), computed in SQL for the caller's tenant.
// "Expiring within N days" means: not revoked and now < expiresAt ≤ now + N days. A license whose
// expiresAt ≤ now is expired; one without expiresAt is perpetual. Buckets are UTC calendar periods.

type Ctx = Pick<ServiceContext, 'db' | 'now'>;

export const ANALYTICS_RANGES = ['TODAY', 'LAST_7_DAYS', 'LAST_30_DAYS'] as const;
export const GRANULARITIES = ['DAY', 'WEEK', 'MONTH'] as const;
export type AnalyticsRange = (typeof ANALYTICS_RANGES)[number];
export type Granularity = (typeof GRANULARITIES)[number];

const RANGE_DAYS: Record<AnalyticsRange, number> = { TODAY: 1, LAST_7_DAYS: 7, LAST_30_DAYS: 30 };
const UNIT: Record<Granularity, string> = { DAY: 'day', WEEK: 'week', MONTH: 'month' };
const iso = (date: Date) => date.toISOString();

/** Counts of the tenant's licenses by status and by expiry, in one statement. */
async function licenseCounts({ db, now }: Ctx, tenantId: string) {
  const [d7, d30, d90] = [7, 30, 90].map((days) => iso(daysFrom(now, days)));
  const [row] = await db.prisma.$queryRaw<Record<'total' | 'active' | 'expired' | 'revoked' | 'within7Days' | 'within30Days' | 'within90Days' | 'later' | 'perpetual', number>[]>`
    SELECT count(*)::int AS total,
           count(*) FILTER (WHERE status = 'active' AND (expires_at IS NULL OR expires_at > ${iso(now)}::timestamptz))::int AS active,
           count(*) FILTER (WHERE status = 'active' AND expires_at <= ${iso(now)}::timestamptz)::int AS expired,
           count(*) FILTER (WHERE status = 'revoked')::int AS revoked,
           count(*) FILTER (WHERE status = 'active' AND expires_at > ${iso(now)}::timestamptz AND expires_at <= ${d7}::timestamptz)::int AS "within7Days",
           count(*) FILTER (WHERE status = 'active' AND expires_at > ${d7}::timestamptz AND expires_at <= ${d30}::timestamptz)::int AS "within30Days",
           count(*) FILTER (WHERE status = 'active' AND expires_at > ${d30}::timestamptz AND expires_at <= ${d90}::timestamptz)::int AS "within90Days",
           count(*) FILTER (WHERE status = 'active' AND expires_at > ${d90}::timestamptz)::int AS later,
           count(*) FILTER (WHERE status = 'active' AND expires_at IS NULL)::int AS perpetual
      FROM licenses WHERE tenant_id = ${tenantId}::uuid`;
  return row;
}

/** The widget lists at most this many (spec §6.3); the counts say how many more there are. */
export const EXPIRING_LIST_LIMIT = 8;

/**
 * GET /api/dashboard/stats and the `dashboardStats` query. `expiringLicenses`: the 8 expiring soonest; a big
 * tenant has tens of thousands within 30 days, and the widget shows 8 and links to the filtered list.
 */
export async function dashboardStats(ctx: Ctx, actor: Actor | null) {
  const { tenantId } = requireActor(actor);
  const [counts, products, activations, expiring] = await Promise.all([
    licenseCounts(ctx, tenantId),
    ctx.db.prisma.product.count({ where: { tenantId } }),
    ctx.db.prisma.activation.count({ where: { tenantId, deactivatedAt: null } }),
    ctx.db.prisma.license.findMany({
      where: { tenantId, status: 'active', expiresAt: { gt: ctx.now, lte: daysFrom(ctx.now, 30) } },
      orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }],
      take: EXPIRING_LIST_LIMIT,
      select: { id: true, expiresAt: true, customerEmail: true, product: { select: { name: true } } },
    }),
  ]);
  return {
    activeLicenses: counts.active,
    totalLicenses: counts.total,
    activations,
    products,
    expiringIn7Days: counts.within7Days,
    expiringIn30Days: counts.within7Days + counts.within30Days,
    expiringLicenses: expiring.map((license) => ({ id: license.id, productName: license.product.name, expiresAt: license.expiresAt!, customerEmail: license.customerEmail })),
  };
}

export interface AnalyticsWindow {
  tenantId: string;
  range: AnalyticsRange;
  granularity: Granularity;
  /** Start of the first UTC day of the range. */
  from: Date;
  /** Now. */
  to: Date;
}

/** TODAY: since 00:00 UTC today; LAST_7_DAYS / LAST_30_DAYS: the last 7 / 30 UTC calendar days, today included. */
export function analyticsWindow(ctx: Ctx, actor: Actor | null, range: AnalyticsRange, granularity: Granularity = 'DAY'): AnalyticsWindow {
  const { tenantId } = requireActor(actor);
  const startOfToday = Date.UTC(ctx.now.getUTCFullYear(), ctx.now.getUTCMonth(), ctx.now.getUTCDate());
  return { tenantId, range, granularity, from: daysFrom(new Date(startOfToday), 1 - RANGE_DAYS[range]), to: ctx.now };
}

/** The periods (UTC day, ISO week from Monday, or month) that overlap the window, as (start, next). */
const buckets = (w: AnalyticsWindow) => Prisma.sql`
  SELECT b AT TIME ZONE 'UTC' AS start, (b + ${`1 ${UNIT[w.granularity]}`}::interval) AT TIME ZONE 'UTC' AS next
    FROM generate_series(date_trunc(${UNIT[w.granularity]}::text, ${iso(w.from)}::timestamptz AT TIME ZONE 'UTC'),
                         ${iso(w.to)}::timestamptz AT TIME ZONE 'UTC', ${`1 ${UNIT[w.granularity]}`}::interval) AS b`;

/**
 * New activations per UTC day and product in the window: the days before today from the activation_days
 * rollup (exact, kept by triggers), today from the activations themselves up to now (a few rows, by index).
 */
const activationsPerDay = (w: AnalyticsWindow) => {
  const today = new Date(Date.UTC(w.to.getUTCFullYear(), w.to.getUTCMonth(), w.to.getUTCDate()));
  return Prisma.sql`
    SELECT d.day::timestamp AT TIME ZONE 'UTC' AS at, d.product_id, sum(d.activations)::int AS n
      FROM activation_days d
     WHERE d.tenant_id = ${w.tenantId}::uuid AND d.day >= ${iso(w.from)}::timestamptz AT TIME ZONE 'UTC' AND d.day < ${iso(today)}::timestamptz AT TIME ZONE 'UTC'
     GROUP BY d.day, d.product_id
    UNION ALL
    SELECT ${iso(today)}::timestamptz, l.product_id, count(*)::int
      FROM activations a JOIN licenses l ON l.id = a.license_id
     WHERE a.tenant_id = ${w.tenantId}::uuid AND a.created_at >= ${iso(today)}::timestamptz AND a.created_at <= ${iso(w.to)}::timestamptz
     GROUP BY l.product_id`;
};

/** New activations per bucket (only those inside the window: the first and last buckets are clipped). */
export async function activationTrend({ db }: Ctx, w: AnalyticsWindow) {
  return db.prisma.$queryRaw<{ start: Date; activations: number }[]>`
    WITH buckets AS (${buckets(w)}), days AS (${activationsPerDay(w)})
    SELECT b.start, coalesce(sum(d.n), 0)::int AS activations
      FROM buckets b LEFT JOIN days d ON d.at >= b.start AND d.at < b.next
     GROUP BY b.start ORDER BY b.start`;
}

/** Every product with its number of licenses (all, and active ones): the current state, whatever the range. */
export async function licensesByProduct({ db, now }: Ctx, w: AnalyticsWindow) {
  return db.prisma.$queryRaw<{ productId: string; productName: string; licenses: number; activeLicenses: number }[]>`
    SELECT p.id AS "productId", p.name AS "productName", count(l.id)::int AS licenses,
           count(l.id) FILTER (WHERE l.status = 'active' AND (l.expires_at IS NULL OR l.expires_at > ${iso(now)}::timestamptz))::int AS "activeLicenses"
      FROM products p LEFT JOIN licenses l ON l.product_id = p.id AND l.tenant_id = ${w.tenantId}::uuid
     WHERE p.tenant_id = ${w.tenantId}::uuid
     GROUP BY p.id, p.name ORDER BY licenses DESC, p.name`;
}

/** Licenses by status (active / expired / revoked) and, for unrevoked ones, by expiry bucket. */
export async function licenseDistribution(ctx: Ctx, w: AnalyticsWindow) {
  const { active, expired, revoked, within7Days, within30Days, within90Days, later, perpetual } = await licenseCounts(ctx, w.tenantId);
  return { byStatus: { active, expired, revoked }, byExpiry: { expired, within7Days, within30Days, within90Days, later, perpetual } };
}

/** Products with the most new activations in the window. */
export async function topProducts({ db }: Ctx, w: AnalyticsWindow, limit = 5) {
  if (!Number.isInteger(limit) || limit < 1 || limit > 50) throw new AppError('InvalidRequest', 'limit must be between 1 and 50.', { fields: { limit: '1–50' } });
  return db.prisma.$queryRaw<{ productId: string; productName: string; activations: number }[]>`
    WITH days AS (${activationsPerDay(w)})
    SELECT p.id AS "productId", p.name AS "productName", sum(d.n)::int AS activations
      FROM days d JOIN products p ON p.id = d.product_id AND p.tenant_id = ${w.tenantId}::uuid
     GROUP BY p.id, p.name HAVING sum(d.n) > 0 ORDER BY activations DESC, p.name LIMIT ${limit}`;
}

/**
 * Seat pool per bucket, at its end (`at`; now for the current bucket): seats held by activations of
 * licenses in force then, and the seats (maxActivations) of those licenses. A license is in force from its
 * creation until revoked or expired. maxActivations has no history: today's value is used throughout.
 */
export async function seatPool({ db }: Ctx, w: AnalyticsWindow) {
  // One pass instead of two scans per bucket (MATERIALIZED: inlined, the CTEs would be rescanned per point): each row is in force on [start, end) (end null: still); with
  // the points p_1 < … < p_n, "p < x" counts as width_bucket(x, p + 1 µs), the column's resolution. A row then
  // counts at the points k with e < k ≤ f, where e = #points before its start and f = #points before its end.
  return db.prisma.$queryRaw<{ start: Date; at: Date; seatsUsed: number; seatsAvailable: number }[]>`
    WITH buckets AS (${buckets(w)}),
    points AS (SELECT b.start, least(b.next, ${iso(w.to)}::timestamptz) AS at, row_number() OVER (ORDER BY b.start)::int AS k FROM buckets b),
    grid AS (SELECT array_agg(at + interval '1 microsecond' ORDER BY k) AS p, count(*)::int AS n FROM points),
    used AS MATERIALIZED (
      SELECT width_bucket(greatest(a.created_at, l.created_at), g.p) AS e,
             coalesce(width_bucket(least(a.deactivated_at, l.revoked_at, l.expires_at), g.p), g.n) AS f, count(*) AS seats
        FROM activations a JOIN licenses l ON l.id = a.license_id CROSS JOIN grid g
       WHERE a.tenant_id = ${w.tenantId}::uuid AND l.tenant_id = ${w.tenantId}::uuid
       GROUP BY 1, 2),
    available AS MATERIALIZED (
      SELECT width_bucket(l.created_at, g.p) AS e, coalesce(width_bucket(least(l.revoked_at, l.expires_at), g.p), g.n) AS f,
             sum(l.max_activations) AS seats
        FROM licenses l CROSS JOIN grid g
       WHERE l.tenant_id = ${w.tenantId}::uuid
       GROUP BY 1, 2)
    SELECT p.start, p.at,
           (SELECT coalesce(sum(u.seats), 0) FROM used u WHERE u.e < p.k AND p.k <= u.f)::int AS "seatsUsed",
           (SELECT coalesce(sum(v.seats), 0) FROM available v WHERE v.e < p.k AND p.k <= v.f)::int AS "seatsAvailable"
      FROM points p
     ORDER BY p.start`;
}
