import { Prisma } from '../generated/prisma/client.js';
import { AppError } from '../domain/errors.js';
import { requireMember } from './auth/actor.js';
import type { ActorContext, SystemContext } from './context.js';
import { DAY_MS, daysFrom, daysUntil, startOfUtcDay } from '../domain/countdown.js';
import { expiringSql, expiringWhere, statusSql } from './licenses/predicates.js';

// Dashboard figures (docs/integrate/management-api.md "Dashboard stats: `GET /api/dashboard/stats`") and analytics (docs/integrate/management-api.md "Analytics"), computed in SQL for the caller's tenant.
// License states and "expiring within N days" are licenses/predicates.ts's. Buckets are UTC calendar periods.

// The entry points (`dashboardStats`, `analyticsWindow`) take a caller and authorize it; the window they return is
// the caller's tenant's, so the readers of a window need only the database (a SystemContext).

export const ANALYTICS_RANGES = ['TODAY', 'LAST_7_DAYS', 'LAST_30_DAYS'] as const;
export const GRANULARITIES = ['HOUR', 'DAY', 'WEEK', 'MONTH'] as const;
export type AnalyticsRange = (typeof ANALYTICS_RANGES)[number];
export type Granularity = (typeof GRANULARITIES)[number];

const RANGE_DAYS: Record<AnalyticsRange, number> = { TODAY: 1, LAST_7_DAYS: 7, LAST_30_DAYS: 30 };
const UNIT: Record<Granularity, string> = { HOUR: 'hour', DAY: 'day', WEEK: 'week', MONTH: 'month' };
const iso = (date: Date) => date.toISOString();
const HOUR_MS = 3_600_000;

type ProductCounts = { productId: string; productName: string } & Record<'licenses' | 'revoked' | 'suspended' | 'perpetual' | 'expired' | 'future' | 'within7Days' | 'within30Days' | 'within90Days' | 'later', number>;

/**
 * The active licenses with an expiry date, per product and countdown (UTC days from today, domain/countdown.ts; negative:
 * past days), and whether they have expired at `now` (licenses/predicates.ts: expiresAt ≤ now): the other days from
 * the license_expiry_days rollup (kept by triggers), today from the (tenant_id, status, expires_at, product_id)
 * index — one day's expiries at most, split at now by the predicates' own SQL. Exact whatever the table's vacuum
 * state (an index-only scan of every expiry reads the table for each page changed since the last vacuum).
 */
function datedActive(tenantId: string, now: Date) {
  const today = startOfUtcDay(now);
  const day = today.toISOString().slice(0, 10);
  const todays = Prisma.sql`tenant_id = ${tenantId}::uuid AND expires_at >= ${today.toISOString()}::timestamptz`;
  return Prisma.sql`
    SELECT product_id, day - ${day}::date AS days, day < ${day}::date AS expired, sum(licenses) AS n
      FROM license_expiry_days WHERE tenant_id = ${tenantId}::uuid AND day <> ${day}::date GROUP BY 1, 2, 3
    UNION ALL
    SELECT product_id, 0, true, count(*) FROM licenses WHERE ${todays} AND ${statusSql('expired', now)} GROUP BY 1
    UNION ALL
    SELECT product_id, 0, false, count(*) FROM licenses WHERE ${todays} AND ${expiringSql(now, { to: 0 })} GROUP BY 1`;
}

/** Per countdown window of the analytics (docs/integrate/management-api.md "Analytics": ≤ 7 days, 8–30, 31–90, later), over `datedActive`'s rows. */
const EXPIRY_WINDOW_SUMS = Prisma.sql`coalesce(sum(n) FILTER (WHERE expired), 0) AS expired, coalesce(sum(n) FILTER (WHERE NOT expired), 0) AS n,
  coalesce(sum(n) FILTER (WHERE NOT expired AND days <= 7), 0) AS w7, coalesce(sum(n) FILTER (WHERE NOT expired AND days BETWEEN 8 AND 30), 0) AS w30,
  coalesce(sum(n) FILTER (WHERE NOT expired AND days BETWEEN 31 AND 90), 0) AS w90, coalesce(sum(n) FILTER (WHERE NOT expired AND days >= 91), 0) AS later`;

/**
 * Per product of the tenant (most licenses first, then by name): its licenses — all, revoked, suspended and active
 * perpetual from the license_tallies rollup, the active dated ones expired or expiring after now, by window
 * (`datedActive`). Each state is counted by its own rule, none by subtraction.
 */
async function productCounts({ db, now }: SystemContext, tenantId: string) {
  return db.prisma.$queryRaw<ProductCounts[]>`
    WITH tally AS (
      SELECT product_id, sum(licenses) AS licenses, sum(revoked) AS revoked, sum(suspended) AS suspended, sum(perpetual) AS perpetual
        FROM license_tallies WHERE tenant_id = ${tenantId}::uuid GROUP BY product_id),
    dated AS (SELECT product_id, ${EXPIRY_WINDOW_SUMS} FROM (${datedActive(tenantId, now)}) e GROUP BY product_id)
    SELECT p.id AS "productId", p.name AS "productName", coalesce(t.licenses, 0)::int AS licenses, coalesce(t.revoked, 0)::int AS revoked,
           coalesce(t.suspended, 0)::int AS suspended, coalesce(t.perpetual, 0)::int AS perpetual, coalesce(d.expired, 0)::int AS expired,
           coalesce(d.n, 0)::int AS future, coalesce(d.w7, 0)::int AS "within7Days",
           coalesce(d.w30, 0)::int AS "within30Days", coalesce(d.w90, 0)::int AS "within90Days", coalesce(d.later, 0)::int AS later
      FROM products p LEFT JOIN tally t ON t.product_id = p.id LEFT JOIN dated d ON d.product_id = p.id
     WHERE p.tenant_id = ${tenantId}::uuid
     ORDER BY licenses DESC, p.name`;
}

/** The dashboard's counts for the whole tenant in one row: the same sources as `productCounts` without the grouping by product. */
async function tenantLicenseCounts({ db, now }: SystemContext, tenantId: string) {
  const [row] = await db.prisma.$queryRaw<Record<'total' | 'active' | 'within7Days' | 'within30Days', number>[]>`
    WITH tally AS (SELECT coalesce(sum(licenses), 0) AS total, coalesce(sum(perpetual), 0) AS perpetual FROM license_tallies WHERE tenant_id = ${tenantId}::uuid),
    dated AS (SELECT ${EXPIRY_WINDOW_SUMS} FROM (${datedActive(tenantId, now)}) e)
    SELECT t.total::int, (t.perpetual + d.n)::int AS active, d.w7::int AS "within7Days", d.w30::int AS "within30Days" FROM tally t CROSS JOIN dated d`;
  return row;
}

/**
 * The tenant's licenses by status and by expiry: the sums over its products. Active = perpetual + expiring after
 * now (predicates.ts: active and not expired).
 */
function licenseCounts(products: ProductCounts[]) {
  const sum = (key: keyof ProductCounts) => products.reduce((total, product) => total + (product[key] as number), 0);
  const [total, revoked, suspended, perpetual, expired, future] = [sum('licenses'), sum('revoked'), sum('suspended'), sum('perpetual'), sum('expired'), sum('future')];
  return {
    total, revoked, suspended, perpetual, active: perpetual + future, expired,
    within7Days: sum('within7Days'), within30Days: sum('within30Days'), within90Days: sum('within90Days'), later: sum('later'),
  };
}

/**
 * The product counts of an analytics window, computed once: licensesByProduct, licensesByStatus and
 * licensesByExpiry of one `analytics` query share them (the window object is their GraphQL parent).
 */
const windowCounts = new WeakMap<AnalyticsWindow, Promise<ProductCounts[]>>();
function productCountsOf(ctx: SystemContext, w: AnalyticsWindow) {
  let counts = windowCounts.get(w);
  if (!counts) windowCounts.set(w, (counts = productCounts({ ...ctx, now: w.to }, w.tenantId)));
  return counts;
}

/** Activations holding a seat (not deactivated), from the activation_tallies rollup. */
async function activeActivations({ db }: SystemContext, tenantId: string) {
  const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT coalesce(sum(active), 0)::int AS n FROM activation_tallies WHERE tenant_id = ${tenantId}::uuid`;
  return row.n;
}

/** The widget lists at most this many (docs/integrate/management-api.md "Dashboard stats: `GET /api/dashboard/stats`"); the counts say how many more there are. */
export const EXPIRING_LIST_LIMIT = 8;

/**
 * GET /api/dashboard/stats and the `dashboardStats` query. `expiringLicenses`: the 8 expiring soonest; a big
 * tenant has tens of thousands within 30 days, and the widget shows 8 and links to the filtered list.
 */
export async function dashboardStats(ctx: SystemContext & ActorContext) {
  const tenantId = requireMember(ctx);
  const [counts, products, activations, expiring] = await Promise.all([
    tenantLicenseCounts(ctx, tenantId),
    ctx.db.prisma.product.count({ where: { tenantId } }),
    activeActivations(ctx, tenantId),
    ctx.db.prisma.license.findMany({
      where: { tenantId, ...expiringWhere(ctx.now, { to: 30 }) },
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
    expiringLicenses: expiring.map((license) => ({
      id: license.id,
      productName: license.product.name,
      expiresAt: license.expiresAt!,
      customerEmail: license.customerEmail,
      daysUntilExpiry: daysUntil(license.expiresAt!, ctx.now),
    })),
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

/**
 * TODAY: since 00:00 UTC today, always by hour (one daily bar says nothing); LAST_7_DAYS / LAST_30_DAYS: the last 7 /
 * 30 UTC calendar days, today included, by day, ISO week or month (HOUR is for TODAY only).
 */
export function analyticsWindow(ctx: SystemContext & ActorContext, range: AnalyticsRange, requested: Granularity = 'DAY'): AnalyticsWindow {
  const tenantId = requireMember(ctx);
  if (range !== 'TODAY' && requested === 'HOUR') throw new AppError('InvalidRequest', 'Hourly buckets are for the TODAY range; choose DAY, WEEK or MONTH.', { fields: { granularity: 'HOUR is for TODAY' } });
  const granularity = range === 'TODAY' ? 'HOUR' : requested;
  const startOfToday = Date.UTC(ctx.now.getUTCFullYear(), ctx.now.getUTCMonth(), ctx.now.getUTCDate());
  return { tenantId, range, granularity, from: daysFrom(new Date(startOfToday), 1 - RANGE_DAYS[range]), to: ctx.now };
}

/** The periods (UTC day, ISO week from Monday, or month) that overlap the window, as (start, next). */
const buckets = (w: AnalyticsWindow) => Prisma.sql`
  SELECT b AT TIME ZONE 'UTC' AS start, (b + ${`1 ${UNIT[w.granularity]}`}::interval) AT TIME ZONE 'UTC' AS next
    FROM generate_series(date_trunc(${UNIT[w.granularity]}::text, ${iso(w.from)}::timestamptz AT TIME ZONE 'UTC'),
                         ${iso(w.to)}::timestamptz AT TIME ZONE 'UTC', ${`1 ${UNIT[w.granularity]}`}::interval) AS b`;

/**
 * New activations per UTC day and product in the window, all from the activation_days rollup (exact, kept by
 * triggers in each writer's transaction), today included: an activation is created at the time it is written,
 * so today's row holds exactly the activations created since 00:00 UTC up to now.
 */
const activationsPerDay = (w: AnalyticsWindow) => Prisma.sql`
    SELECT d.day::timestamp AT TIME ZONE 'UTC' AS at, d.product_id, sum(d.activations)::int AS n
      FROM activation_days d
     WHERE d.tenant_id = ${w.tenantId}::uuid AND d.day >= ${iso(w.from)}::timestamptz AT TIME ZONE 'UTC' AND d.day <= ${iso(w.to)}::timestamptz AT TIME ZONE 'UTC'
     GROUP BY d.day, d.product_id`;

/** New activations per bucket (only those inside the window: the first and last buckets are clipped). */
export async function activationTrend({ db }: SystemContext, w: AnalyticsWindow) {
  // By hour (TODAY): the day's activations themselves, one index-only range of (tenant_id, created_at).
  if (w.granularity === 'HOUR') {
    return db.prisma.$queryRaw<{ start: Date; activations: number }[]>`
      WITH buckets AS (${buckets(w)}),
      hours AS (SELECT date_trunc('hour', a.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS at, count(*)::int AS n FROM activations a
                 WHERE a.tenant_id = ${w.tenantId}::uuid AND a.created_at >= ${iso(w.from)}::timestamptz AND a.created_at <= ${iso(w.to)}::timestamptz GROUP BY 1)
      SELECT b.start, coalesce(h.n, 0)::int AS activations FROM buckets b LEFT JOIN hours h ON h.at = b.start ORDER BY b.start`;
  }
  return db.prisma.$queryRaw<{ start: Date; activations: number }[]>`
    WITH buckets AS (${buckets(w)}), days AS (${activationsPerDay(w)})
    SELECT b.start, coalesce(sum(d.n), 0)::int AS activations
      FROM buckets b LEFT JOIN days d ON d.at >= b.start AND d.at < b.next
     GROUP BY b.start ORDER BY b.start`;
}

/** Every product with its number of licenses (all, and active ones): the current state, whatever the range. */
export async function licensesByProduct(ctx: SystemContext, w: AnalyticsWindow) {
  return (await productCountsOf(ctx, w)).map(({ productId, productName, licenses, perpetual, future }) => ({ productId, productName, licenses, activeLicenses: perpetual + future }));
}

/**
 * Licenses per plan of the tenant (archived plans included), by product then plan name: how many were created from
 * each and how many of those are active now. Read from the licenses' (tenant_id, plan_id, created_at) index.
 */
export async function licensesByPlan({ db }: SystemContext, w: AnalyticsWindow) {
  return db.prisma.$queryRaw<{ planId: string; planName: string; productId: string; productName: string; archived: boolean; licenses: number; activeLicenses: number }[]>`
    SELECT p.id::text AS "planId", p.name AS "planName", pr.id::text AS "productId", pr.name AS "productName", p.archived_at IS NOT NULL AS archived,
           count(l.id)::int AS licenses, (count(l.id) FILTER (WHERE ${statusSql('active', w.to)}))::int AS "activeLicenses"
      FROM plans p
      JOIN products pr ON pr.id = p.product_id
      LEFT JOIN licenses l ON l.tenant_id = p.tenant_id AND l.plan_id = p.id
     WHERE p.tenant_id = ${w.tenantId}::uuid
     GROUP BY p.id, p.name, pr.id, pr.name, p.archived_at
     ORDER BY pr.name, p.name, p.id`;
}

/** Licenses by status (active / expired / suspended / revoked) and, for the neither revoked nor suspended ones, by expiry bucket. */
export async function licenseDistribution(ctx: SystemContext, w: AnalyticsWindow) {
  const { active, expired, suspended, revoked, within7Days, within30Days, within90Days, later, perpetual } = licenseCounts(await productCountsOf(ctx, w));
  return { byStatus: { active, expired, suspended, revoked }, byExpiry: { expired, within7Days, within30Days, within90Days, later, perpetual } };
}

/** Products with the most new activations in the window. */
export async function topProducts({ db }: SystemContext, w: AnalyticsWindow, limit = 5) {
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
 * creation until revoked or expired; an activation holds a seat from its creation (or its license's, if later)
 * until deactivated or its license ends. maxActivations has no history: today's value is used throughout.
 *
 * From the seat_pool_changes rollup (signed changes per UTC hour, kept by triggers; see its migration): the pool
 * at an hour boundary h is the sum of the changes with at ≤ h. Bucket ends are hour boundaries. The current
 * bucket ends now, inside an hour: the pool at the next boundary, minus what changes between now and then —
 * normally only the expiries already scheduled for the rest of the hour (rows found by index; any row with a
 * bound in (now, next boundary] is taken, so the answer is exact whatever the data).
 */
export async function seatPool({ db }: SystemContext, w: AnalyticsWindow) {
  const now = iso(w.to);
  const next = iso(new Date(Math.ceil(w.to.getTime() / HOUR_MS) * HOUR_MS));
  const bounded = (column: string) => Prisma.sql`tenant_id = ${w.tenantId}::uuid AND ${Prisma.raw(column)} > ${now}::timestamptz AND ${Prisma.raw(column)} <= ${next}::timestamptz`;
  const change = Prisma.sql`(r.s <= ${next}::timestamptz AND (r.e IS NULL OR r.e > ${next}::timestamptz))::int - (r.s <= ${now}::timestamptz AND (r.e IS NULL OR r.e > ${now}::timestamptz))::int`;
  return db.prisma.$queryRaw<{ start: Date; at: Date; seatsUsed: number; seatsAvailable: number }[]>`
    WITH buckets AS (${buckets(w)}),
    points AS (SELECT b.start, least(b.next, ${now}::timestamptz) AS at, row_number() OVER (ORDER BY b.start)::int AS k FROM buckets b),
    marks AS (SELECT p.*, seat_pool_hour(p.at) AS h FROM points p),
    -- Change rows and marks sit on hour boundaries: width_bucket over (mark + 30 min) gives j = the number of
    -- marks before the row (h < at), so the pool at mark k is the sum of the rows with j < k (at ≤ h_k).
    grid AS (SELECT array_agg(h + interval '30 minutes' ORDER BY k) AS p, max(h) AS last FROM marks),
    steps AS (
      SELECT width_bucket(c.at, g.p) AS j, sum(c.seats_used) AS used, sum(c.seats_available) AS available
        FROM seat_pool_changes c CROSS JOIN grid g
       WHERE c.tenant_id = ${w.tenantId}::uuid AND c.at <= g.last
       GROUP BY 1),
    later_licenses AS (
      SELECT id FROM licenses WHERE ${bounded('created_at')}
      UNION SELECT id FROM licenses WHERE ${bounded('revoked_at')}
      UNION SELECT id FROM licenses WHERE ${bounded('expires_at')} AND status IN ('active', 'suspended', 'revoked')),
    later_activations AS (
      SELECT id, license_id, created_at, deactivated_at FROM activations WHERE ${bounded('created_at')}
      UNION SELECT id, license_id, created_at, deactivated_at FROM activations WHERE ${bounded('deactivated_at')}
      -- OFFSET 0 keeps the per-license index lookup (a hash join would read every activation).
      UNION SELECT a.* FROM later_licenses c
              CROSS JOIN LATERAL (SELECT id, license_id, created_at, deactivated_at FROM activations WHERE license_id = c.id OFFSET 0) a),
    later AS (
      SELECT (SELECT coalesce(sum(${change}), 0)
                FROM (SELECT greatest(a.created_at, l.created_at) AS s, least(a.deactivated_at, l.revoked_at, l.expires_at) AS e
                        FROM later_activations a JOIN licenses l ON l.id = a.license_id) r) AS used,
             (SELECT coalesce(sum(r.w * (${change})), 0)
                FROM (SELECT l.created_at AS s, least(l.revoked_at, l.expires_at) AS e, l.max_activations AS w
                        FROM later_licenses c JOIN licenses l ON l.id = c.id) r) AS available)
    SELECT m.start, m.at,
           ((SELECT coalesce(sum(s.used), 0) FROM steps s WHERE s.j < m.k) - CASE WHEN m.at < m.h THEN later.used ELSE 0 END)::int AS "seatsUsed",
           ((SELECT coalesce(sum(s.available), 0) FROM steps s WHERE s.j < m.k) - CASE WHEN m.at < m.h THEN later.available ELSE 0 END)::int AS "seatsAvailable"
      FROM marks m CROSS JOIN later
     ORDER BY m.start`;
}

/** The analytics reach back 30 days (`analyticsWindow`); seat-pool history older than this is kept summed. */
export const SEAT_POOL_FOLD_DAYS = 35;

/**
 * Housekeeping (system-only, every tenant): moves the boundary of seat_pool_changes' summed history to the start of
 * the UTC day SEAT_POOL_FOLD_DAYS ago (never back) and merges the rows of the hours before it into each tenant's
 * at = -infinity rows (migration seat_pool_fold), so a seat-pool read sums ~35 days of rows, not the whole history.
 * The sums up to any instant after the boundary are unchanged. Returns how many rows were merged.
 */
export async function foldSeatPoolHistory({ db, now }: SystemContext): Promise<number> {
  const before = new Date(startOfUtcDay(now).getTime() - SEAT_POOL_FOLD_DAYS * DAY_MS);
  const [{ n }] = await db.prisma.$queryRaw<{ n: number }[]>`
    WITH boundary AS (UPDATE seat_pool_fold SET before = greatest(before, ${before}::timestamptz) WHERE id RETURNING before),
    folded AS (
      DELETE FROM seat_pool_changes WHERE at > '-infinity' AND at < (SELECT before FROM boundary)
      RETURNING tenant_id, slot, seats_used, seats_available),
    merged AS (
      INSERT INTO seat_pool_changes AS c (tenant_id, at, slot, seats_used, seats_available)
      SELECT tenant_id, '-infinity', slot, sum(seats_used), sum(seats_available) FROM folded GROUP BY tenant_id, slot
      ON CONFLICT (tenant_id, at, slot) DO UPDATE SET seats_used = c.seats_used + EXCLUDED.seats_used, seats_available = c.seats_available + EXCLUDED.seats_available)
    SELECT count(*)::int AS n FROM folded`;
  return n;
}
