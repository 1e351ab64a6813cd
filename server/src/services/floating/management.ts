import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { lockTenantAudit, recordAudit } from '../audit/audit-log.js';
import { auditActor, requireAdmin, requireMember } from '../auth/actor.js';
import { licenseEntity } from '../licenses/license-record.js';
import type { ServiceContext, SystemContext } from '../context.js';
import { isUuid } from '../listing.js';
import { parseInput, StorableDate } from '../validation.js';
import { heldSessionWhere, sessionLapsed, type EndReason } from './sessions.js';

// Management calls (GraphQL, CLI). Every one is scoped by the caller's tenant: a record of another tenant
// answers NotFound, exactly like one that does not exist. Reads need a member, changes an admin.

/** The license if it belongs to the tenant; NotFound otherwise (also for a malformed id). */
export async function requireTenantLicense(ctx: Pick<ServiceContext, 'db'>, tenantId: string, licenseId: string) {
  const license = isUuid(tenantId) && isUuid(licenseId)
    ? await ctx.db.prisma.license.findFirst({ where: { id: licenseId, tenantId }, select: { id: true, tenantId: true, floatingSeats: true, status: true, keyHint: true, product: { select: { name: true } } } })
    : null;
  if (!license) throw new AppError('NotFound', 'License not found.');
  return license;
}

/** What an operator sees of a session: never the token digest. */
export const SESSION_FIELDS = {
  id: true,
  licenseId: true,
  deviceId: true,
  deviceName: true,
  ip: true,
  createdAt: true,
  lastHeartbeatAt: true,
  leaseExpiresAt: true,
  endedAt: true,
  endReason: true,
} as const;

/** Sessions holding a floating seat of the license right now, oldest first. */
export async function listActiveFloatingSessions(ctx: ServiceContext, licenseId: string) {
  const tenantId = requireMember(ctx);
  const license = await requireTenantLicense(ctx, tenantId, licenseId);
  const sessions = await ctx.db.prisma.floatingSession.findMany({
    where: { licenseId: license.id, ...heldSessionWhere(ctx.now) },
    select: SESSION_FIELDS,
    orderBy: { createdAt: 'asc' },
  });
  return { floatingSeats: license.floatingSeats, inUse: sessions.length, sessions };
}

/**
 * Ends a session now (endReason 'admin'), freeing its seat; the client's next heartbeat answers
 * SessionExpired. Idempotent: an ended session is returned as it is (a lapsed lease is recorded as expired).
 */
export async function endFloatingSession(ctx: ServiceContext, sessionId: string) {
  const { tenantId } = requireAdmin(ctx);
  const where = { id: sessionId, tenantId };
  const session = isUuid(tenantId) && isUuid(sessionId)
    ? await ctx.db.prisma.floatingSession.findFirst({ where, select: { ...SESSION_FIELDS, license: { select: { keyHint: true, product: { select: { name: true } } } } } })
    : null;
  if (!session) throw new AppError('NotFound', 'Floating session not found.');
  if (session.endedAt) return ctx.db.prisma.floatingSession.findUniqueOrThrow({ where: { id: sessionId }, select: SESSION_FIELDS });
  const [endedAt, endReason]: [Date, EndReason] = sessionLapsed(session, ctx.now) ? [session.leaseExpiresAt, 'expired'] : [ctx.now, 'admin'];
  await ctx.db.prisma.$transaction(async (tx) => {
    // The activity log's lock before the row (see lockTenantAudit): a checkout holds its license's row while it ends
    // sessions, and a license change holds this lock while it waits for that row.
    await lockTenantAudit(tx, tenantId);
    // Only while held: an end racing this one (a double click, the lease's expiry) changes and logs nothing.
    const { count } = await tx.floatingSession.updateMany({ where: { ...where, endedAt: null }, data: { endedAt, endReason } });
    // A lease that had lapsed is recorded as expired, which is not the admin's doing: nothing to log.
    if (count && endReason === 'admin') {
      const entity = `${session.deviceName ?? session.deviceId} on ${licenseEntity(session.license, session.license.product.name)}`;
      await recordAudit(tx, { tenantId, action: 'EndFloatingSession', entityType: 'FloatingSession', entityId: session.id, entity, details: { licenseId: session.licenseId, deviceId: session.deviceId } }, auditActor(ctx), ctx.now);
    }
  });
  return ctx.db.prisma.floatingSession.findUniqueOrThrow({ where: { id: sessionId }, select: SESSION_FIELDS });
}

export const POOL_BUCKETS = { hour: '1 hour', day: '1 day', week: '7 days' } as const;
const MAX_BUCKETS = 1000;

const PoolQuerySchema = z
  .object({
    from: StorableDate,
    to: StorableDate,
    bucket: z.enum(Object.keys(POOL_BUCKETS) as [keyof typeof POOL_BUCKETS, ...(keyof typeof POOL_BUCKETS)[]]),
    /** Only this license; all floating licenses of the tenant when omitted. */
    licenseId: z.string().optional(),
  })
  .refine((q) => q.to.getTime() > q.from.getTime(), { message: 'must be after from', path: ['to'] });

export interface PoolBucket {
  bucketStart: Date;
  bucketEnd: Date;
  /** Most floating sessions active at the same time during the bucket. */
  peakInUse: number;
  /** Floating seats of the licenses valid (created, unrevoked, unexpired) at some point in the bucket. */
  poolSize: number;
}

/**
 * Pool consumption over time (analytics): per bucket, the peak number of concurrent floating sessions
 * against the pool size. Computed in SQL from the sessions' lifetimes [createdAt, endedAt ?? leaseExpiresAt),
 * so it needs no sweep to be right. Buckets are aligned to UTC hours/days/ISO weeks; `from` is rounded down
 * to its bucket. The pool size uses each license's current floatingSeats (its history is not kept).
 * A revoked license without revokedAt counts nowhere; one whose end precedes its creation counts in no bucket after its end.
 * For the whole tenant, the peaks of completed hours come from the floating_peak_hours cache (see below).
 */
export async function floatingPoolConsumption(ctx: ServiceContext, query: z.input<typeof PoolQuerySchema>): Promise<PoolBucket[]> {
  const tenantId = requireMember(ctx);
  const { from, to, bucket, licenseId } = parseInput(PoolQuerySchema, query);
  if (licenseId !== undefined) await requireTenantLicense(ctx, tenantId, licenseId);
  else if (!isUuid(tenantId)) return [];
  const stepMs = { hour: HOUR_MS, day: 24 * HOUR_MS, week: 7 * 24 * HOUR_MS }[bucket];
  if ((to.getTime() - from.getTime()) / stepMs > MAX_BUCKETS) {
    throw new AppError('InvalidRequest', `At most ${MAX_BUCKETS} buckets: choose a larger bucket or a shorter range.`, { fields: { bucket: 'too many buckets' } });
  }
  if (licenseId !== undefined) return poolBuckets(ctx, tenantId, licenseId, bucket, from, to, BOTH);
  // The whole tenant: the pool sizes per bucket (cheap), and the peaks per hour — completed hours from the
  // floating_peak_hours cache (computing and storing the missing ones), the hour in progress live. A bucket's
  // peak is the highest of its hours'.
  const buckets = await poolBuckets(ctx, tenantId, undefined, bucket, from, to, { sessions: false, seats: true });
  if (!buckets.length) return buckets;
  const start = buckets[0].bucketStart.getTime();
  const completed = Math.max(start, Math.floor(Math.min(to.getTime(), ctx.now.getTime()) / HOUR_MS) * HOUR_MS);
  // The console asks for today by hour and 7 or 30 days by day; a longer range (weeks) is computed directly.
  if (completed - start > MAX_CACHED_HOURS * HOUR_MS) return poolBuckets(ctx, tenantId, undefined, bucket, from, to, BOTH);
  const hours = [
    ...(completed > start ? await completedHourPeaks(ctx, tenantId, start, completed) : []),
    ...(to.getTime() > completed ? (await poolBuckets(ctx, tenantId, undefined, 'hour', new Date(completed), to, PEAKS)).map((b) => ({ hour: b.bucketStart, peak: b.peakInUse })) : []),
  ];
  // Each hour into its bucket (buckets are contiguous and in order): one pass, not buckets × hours.
  const peaks = new Array<number>(buckets.length).fill(0);
  const bucketOf = (hour: number) => {
    let [lo, hi] = [0, buckets.length - 1];
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (buckets[mid].bucketStart.getTime() <= hour) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  for (const { hour, peak } of hours) {
    const k = bucketOf(hour.getTime());
    if (hour >= buckets[k].bucketStart && hour < buckets[k].bucketEnd) peaks[k] = Math.max(peaks[k], peak);
  }
  return buckets.map((b, k) => ({ ...b, peakInUse: peaks[k] }));
}

const HOUR_MS = 3_600_000;

/** A floating license's end: its revocation if revoked (none recorded: before anything), else its expiry. */
const LICENSE_END = `LEAST(CASE WHEN l.status = 'revoked' THEN COALESCE(l.revoked_at, '-infinity') END, l.expires_at)`;
const HOUR_OF = (t: string) => `date_bin('1 hour', ${t}, timestamptz '2000-01-01 00:00:00+00')`;

/**
 * The pool size of one license: it counts in bucket k when its validity [created, end) meets the bucket — created <
 * bucket end and bucket start < end, i.e. for k in [lo, hi] — and the validity is not empty; +seats at lo and −seats
 * after hi, a running sum over the buckets. A pool CTE of `poolBuckets` ($2: the license, $8: seats wanted).
 */
const LICENSE_POOL = `valid AS MATERIALIZED (
       SELECT width_bucket(l.created_at, g.later_starts) + 1 AS lo,
              CASE WHEN e.ends IS NULL THEN g.n ELSE width_bucket(e.ends - interval '1 microsecond', g.starts) END AS hi,
              sum(l.floating_seats) AS seats
         FROM licenses l CROSS JOIN grid g CROSS JOIN LATERAL (SELECT ${LICENSE_END} AS ends) e
        WHERE l.tenant_id = $1::uuid AND l.id = $2::uuid AND l.floating_seats IS NOT NULL AND l.created_at < g.t1
          AND (e.ends IS NULL OR e.ends > l.created_at) AND $8::boolean
        GROUP BY 1, 2
     ), pool_changes AS (
       SELECT lo AS k, seats FROM valid WHERE lo <= hi
       UNION ALL SELECT hi + 1, -seats FROM valid WHERE lo <= hi
     ), pool AS (
       SELECT b.k, COALESCE(sum(sum(c.seats)) OVER (ORDER BY b.k), 0) AS seats
         FROM buckets b LEFT JOIN pool_changes c ON c.k = b.k GROUP BY b.k
     )`;

/**
 * The pool size of the tenant, by the same rule, from the floating_seat_changes rollup (kept by triggers; see its
 * migration): bucket k's pool is Σ started (at < its end) − Σ ended (at ≤ its start) — bucket bounds are hour
 * boundaries except the last end, `to`: the licenses created in [the hour boundary before it, to) are added from
 * the table (an index range of at most an hour). Each rollup row is numbered by width_bucket (j = the marks before
 * it) and counts in the buckets after j: a running sum. The rollup rows are read whatever the vacuum state costs
 * the licenses table; reading the tenant's floating licenses from an index instead fetched each from the table on
 * pages changed since the last vacuum.
 */
const TENANT_POOL = `pool_marks AS (
       SELECT array_agg(${HOUR_OF('bucket_end')} ORDER BY k) AS ends, array_agg(bucket_start + interval '30 minutes' ORDER BY k) AS starts,
              max(bucket_start) AS last_start
         FROM buckets
     ), pool_steps AS (
       SELECT width_bucket(c.at, m.ends) + 1 AS k, sum(c.started) AS seats
         FROM floating_seat_changes c CROSS JOIN pool_marks m CROSS JOIN grid g
        WHERE c.tenant_id = $1::uuid AND c.started <> 0 AND c.at < g.t1 AND $8::boolean GROUP BY 1
       UNION ALL
       SELECT width_bucket(c.at, m.starts) + 1, -sum(c.ended)
         FROM floating_seat_changes c CROSS JOIN pool_marks m
        WHERE c.tenant_id = $1::uuid AND c.ended <> 0 AND c.at <= m.last_start AND $8::boolean GROUP BY 1
     ), pool_live AS (
       SELECT COALESCE(sum(l.floating_seats), 0) AS seats
         FROM licenses l CROSS JOIN grid g CROSS JOIN LATERAL (SELECT ${LICENSE_END} AS ends) e
        WHERE l.tenant_id = $1::uuid AND l.created_at >= ${HOUR_OF('g.t1')} AND l.created_at < g.t1 AND l.floating_seats IS NOT NULL
          AND (e.ends IS NULL OR e.ends > l.created_at) AND $8::boolean
     ), pool AS (
       SELECT b.k, COALESCE(sum(sum(s.seats)) OVER (ORDER BY b.k), 0) + CASE WHEN b.k = g.n THEN live.seats ELSE 0 END AS seats
         FROM buckets b CROSS JOIN grid g CROSS JOIN pool_live live LEFT JOIN pool_steps s ON s.k = b.k
        GROUP BY b.k, g.n, live.seats
     )`;

/** Ranges of up to 1,000 hours (41 days) use the cache of completed hours. */
const MAX_CACHED_HOURS = 1_000;
const BOTH = { sessions: true, seats: true };
const PEAKS = { sessions: true, seats: false };

/** The tenant's peak per completed hour in [start, end) (hour boundaries): cached ones read, missing ones computed and stored. */
async function completedHourPeaks(ctx: SystemContext, tenantId: string, start: number, end: number) {
  const cached = await ctx.db.prisma.floatingPeakHour.findMany({ where: { tenantId, hour: { gte: new Date(start), lt: new Date(end) } }, select: { hour: true, peak: true } });
  const have = new Set(cached.map((row) => row.hour.getTime()));
  const missing: number[] = [];
  for (let hour = start; hour < end; hour += HOUR_MS) if (!have.has(hour)) missing.push(hour);
  if (!missing.length) return cached;
  const computed = await poolBuckets(ctx, tenantId, undefined, 'hour', new Date(missing[0]), new Date(missing[missing.length - 1] + HOUR_MS), PEAKS);
  const fresh = computed.filter((b) => !have.has(b.bucketStart.getTime())).map((b) => ({ hour: b.bucketStart, peak: b.peakInUse }));
  // Two readers may fill the same hours: both computed the same values.
  await ctx.db.prisma.floatingPeakHour.createMany({ data: fresh.map((row) => ({ tenantId, ...row })), skipDuplicates: true });
  return [...cached, ...fresh];
}

/**
 * Per bucket: peak concurrent sessions and pool size (each 0 unless asked for), for one license or the tenant.
 */
async function poolBuckets(ctx: SystemContext, tenantId: string, licenseId: string | undefined, bucket: keyof typeof POOL_BUCKETS, from: Date, to: Date, parts: { sessions: boolean; seats: boolean }) {
  // Each session is +1 at its start (or the window's start, if earlier) and −1 at its end; a running sum over
  // the instants of change is the number of sessions in use. A bucket's peak is the level at its start or at
  // any instant inside it. One pass: the instants are numbered by bucket (width_bucket over the bucket starts),
  // and a bucket without any change keeps the level its predecessor ended with. The sessions come from an
  // index-only range (a session ends at the latest when its lease does), the licenses likewise.
  // Pool size: TENANT_POOL or LICENSE_POOL below.
  return ctx.db.prisma.$queryRawUnsafe<PoolBucket[]>(
    `WITH bounds AS (
       SELECT date_trunc($3, $4::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS t0, $5::timestamptz AS t1
     ), buckets AS (
       SELECT row_number() OVER (ORDER BY b)::int AS k, b AS bucket_start, LEAST(b + $6::interval, bounds.t1) AS bucket_end
         FROM bounds, generate_series(bounds.t0, bounds.t1 - interval '1 millisecond', $6::interval) AS b
     ), grid AS (
       SELECT coalesce(array_agg(bucket_start ORDER BY k) FILTER (WHERE k > 1), '{}') AS later_starts,
              array_agg(bucket_start ORDER BY k) AS starts, count(*)::int AS n, max(bucket_end) AS t1
         FROM buckets
     ), sessions AS (
       SELECT GREATEST(s.created_at, bounds.t0) AS started, COALESCE(s.ended_at, s.lease_expires_at) AS ended
         FROM floating_sessions s, bounds
        WHERE s.tenant_id = $1::uuid AND ($2::uuid IS NULL OR s.license_id = $2::uuid)
          AND s.lease_expires_at > bounds.t0 AND s.created_at < bounds.t1 AND COALESCE(s.ended_at, s.lease_expires_at) > bounds.t0 AND $7::boolean
     ), instants AS (
       SELECT at, sum(sum(delta)) OVER (ORDER BY at) AS level
         FROM (SELECT started AS at, 1 AS delta FROM sessions
               UNION ALL SELECT ended, -1 FROM sessions, bounds WHERE ended < bounds.t1) AS changes
        GROUP BY at
     ), levels AS (
       SELECT width_bucket(i.at, g.later_starts) + 1 AS k, i.at, i.level, lag(i.level, 1, 0::numeric) OVER (ORDER BY i.at) AS before
         FROM instants i, grid g
     ), per_bucket AS (
       SELECT k, min(at) AS first_at, max(level) AS top, (array_agg(before ORDER BY at))[1] AS level_before,
              (array_agg(level ORDER BY at DESC))[1] AS level_after
         FROM levels GROUP BY k
     ), peaks AS (
       SELECT b.k, p.first_at, p.top, p.level_before,
              max(p.k) OVER (ORDER BY b.k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous
         FROM buckets b LEFT JOIN per_bucket p ON p.k = b.k
     ), ${licenseId === undefined ? TENANT_POOL : LICENSE_POOL}
     SELECT b.bucket_start AS "bucketStart", b.bucket_end AS "bucketEnd",
            CASE WHEN p.first_at IS NULL THEN COALESCE((SELECT q.level_after FROM per_bucket q WHERE q.k = p.previous), 0)
                 WHEN p.first_at > b.bucket_start THEN GREATEST(p.top, p.level_before)
                 ELSE p.top END::int AS "peakInUse",
            pool.seats::int AS "poolSize"
       FROM buckets b JOIN peaks p ON p.k = b.k JOIN pool ON pool.k = b.k
      ORDER BY b.bucket_start`,
    tenantId,
    licenseId ?? null,
    bucket,
    from,
    to,
    POOL_BUCKETS[bucket],
    parts.sessions,
    parts.seats,
  );
}
