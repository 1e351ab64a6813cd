import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import type { ServiceContext } from '../context.js';
import { parseInput } from '../validation.js';
import type { EndReason } from './sessions.js';

// Management calls (GraphQL, CLI). Every one is scoped by the caller's tenant: a record of another tenant
// answers NotFound, exactly like one that does not exist.

type Ctx = Pick<ServiceContext, 'db' | 'now'>;

// Any 8-4-4-4-12 hex id: a malformed one must answer NotFound, not a database error.
const isUuid = (value: string) => z.guid().safeParse(value).success;

/** The license if it belongs to the tenant; NotFound otherwise (also for a malformed id). */
export async function requireTenantLicense(ctx: Ctx, tenantId: string, licenseId: string) {
  const license = isUuid(tenantId) && isUuid(licenseId)
    ? await ctx.db.prisma.license.findFirst({ where: { id: licenseId, tenantId }, select: { id: true, tenantId: true, floatingSeats: true } })
    : null;
  if (!license) throw new AppError('NotFound', 'License not found.');
  return license;
}

/** What an operator sees of a session: never the token digest. */
const SESSION_FIELDS = {
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
export async function listActiveFloatingSessions(ctx: Ctx, tenantId: string, licenseId: string) {
  const license = await requireTenantLicense(ctx, tenantId, licenseId);
  const sessions = await ctx.db.prisma.floatingSession.findMany({
    where: { licenseId: license.id, endedAt: null, leaseExpiresAt: { gt: ctx.now } },
    select: SESSION_FIELDS,
    orderBy: { createdAt: 'asc' },
  });
  return { floatingSeats: license.floatingSeats, inUse: sessions.length, sessions };
}

/**
 * Ends a session now (endReason 'admin'), freeing its seat; the client's next heartbeat answers
 * SessionExpired. Idempotent: an ended session is returned as it is (a lapsed lease is recorded as expired).
 */
export async function endFloatingSession(ctx: Ctx, tenantId: string, sessionId: string) {
  const where = { id: sessionId, tenantId };
  const session = isUuid(tenantId) && isUuid(sessionId) ? await ctx.db.prisma.floatingSession.findFirst({ where, select: SESSION_FIELDS }) : null;
  if (!session) throw new AppError('NotFound', 'Floating session not found.');
  if (session.endedAt) return session;
  const lapsed = session.leaseExpiresAt.getTime() <= ctx.now.getTime();
  const [endedAt, endReason]: [Date, EndReason] = lapsed ? [session.leaseExpiresAt, 'expired'] : [ctx.now, 'admin'];
  await ctx.db.prisma.floatingSession.updateMany({ where: { ...where, endedAt: null }, data: { endedAt, endReason } });
  return ctx.db.prisma.floatingSession.findUniqueOrThrow({ where: { id: sessionId }, select: SESSION_FIELDS });
}

export const POOL_BUCKETS = { hour: '1 hour', day: '1 day', week: '7 days' } as const;
const MAX_BUCKETS = 1000;

const PoolQuerySchema = z
  .object({
    from: z.coerce.date(),
    to: z.coerce.date(),
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
 */
export async function floatingPoolConsumption(ctx: Ctx, tenantId: string, query: z.input<typeof PoolQuerySchema>): Promise<PoolBucket[]> {
  const { from, to, bucket, licenseId } = parseInput(PoolQuerySchema, query);
  if (licenseId !== undefined) await requireTenantLicense(ctx, tenantId, licenseId);
  else if (!isUuid(tenantId)) return [];
  const stepMs = { hour: 3_600_000, day: 86_400_000, week: 7 * 86_400_000 }[bucket];
  if ((to.getTime() - from.getTime()) / stepMs > MAX_BUCKETS) {
    throw new AppError('InvalidRequest', `At most ${MAX_BUCKETS} buckets: choose a larger bucket or a shorter range.`, { fields: { bucket: 'too many buckets' } });
  }
  // Each session is +1 at its start and −1 at its end; a running sum over those changes is the number of
  // sessions in use. At equal instants the −1 sorts first, so a hand-over never counts twice. A bucket's
  // peak is the level at its start or right after any change inside it.
  return ctx.db.prisma.$queryRawUnsafe<PoolBucket[]>(
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
       SELECT at, delta, SUM(delta) OVER (ORDER BY at, delta ROWS UNBOUNDED PRECEDING) AS level FROM changes
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
                AND (l.status = 'active' OR l.revoked_at > b.bucket_start)
                AND (l.expires_at IS NULL OR l.expires_at > b.bucket_start))::int AS "poolSize"
       FROM buckets b
      ORDER BY b.bucket_start`,
    tenantId,
    licenseId ?? null,
    bucket,
    from,
    to,
    POOL_BUCKETS[bucket],
  );
}
