import { builder } from '../builder.js';
import { serviceCtx } from '../context.js';
import { POOL_BUCKETS, endFloatingSession, floatingPoolConsumption, listActiveFloatingSessions, type PoolBucket } from '../../services/floating/management.js';
import { removeMeterQuota, setMeterQuota, usageTotals, type UsageTotal } from '../../services/metering/management.js';
import { METER_PERIODS, type MeterPeriod } from '../../services/metering/periods.js';

// Floating sessions and usage metering: thin resolvers over the tenant-scoped services (the caller's
// tenant comes from its actor; another tenant's license or session answers NotFound).

type FloatingSessionShape = Awaited<ReturnType<typeof endFloatingSession>>;
type ActiveSessions = Awaited<ReturnType<typeof listActiveFloatingSessions>>;
type Usage = Awaited<ReturnType<typeof usageTotals>>;

const MeterPeriodEnum = builder.enumType('MeterPeriod', {
  description: 'Calendar period in UTC (day, month, year) or the whole lifetime.',
  values: METER_PERIODS,
});
const PoolBucketEnum = builder.enumType('PoolBucketSize', { values: Object.keys(POOL_BUCKETS) as (keyof typeof POOL_BUCKETS)[] });

const FloatingSessionType = builder.objectRef<FloatingSessionShape>('FloatingSession').implement({
  description: 'A checked-out floating seat. The session token is never shown again after checkout.',
  fields: (t) => ({
    id: t.exposeID('id'),
    licenseId: t.exposeID('licenseId'),
    deviceId: t.exposeString('deviceId', { nullable: true }),
    deviceName: t.exposeString('deviceName', { nullable: true }),
    ip: t.exposeString('ip', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastHeartbeatAt: t.expose('lastHeartbeatAt', { type: 'DateTime' }),
    leaseExpiresAt: t.expose('leaseExpiresAt', { type: 'DateTime' }),
    endedAt: t.expose('endedAt', { type: 'DateTime', nullable: true }),
    endReason: t.exposeString('endReason', { nullable: true, description: 'checkin, expired, replaced, revoked, license_expired, floating_disabled or admin.' }),
  }),
});

const ActiveSessionsType = builder.objectRef<ActiveSessions>('FloatingSessions').implement({
  fields: (t) => ({
    floatingSeats: t.exposeInt('floatingSeats', { nullable: true, description: 'Pool size; null when the license has no floating pool.' }),
    inUse: t.exposeInt('inUse'),
    sessions: t.field({ type: [FloatingSessionType], resolve: (active) => active.sessions }),
  }),
});

const PoolBucketType = builder.objectRef<PoolBucket>('FloatingPoolBucket').implement({
  fields: (t) => ({
    bucketStart: t.expose('bucketStart', { type: 'DateTime' }),
    bucketEnd: t.expose('bucketEnd', { type: 'DateTime' }),
    peakInUse: t.exposeInt('peakInUse', { description: 'Most floating sessions active at the same time in the bucket.' }),
    poolSize: t.exposeInt('poolSize', { description: 'Floating seats of the licenses valid during the bucket.' }),
  }),
});

const MeterQuotaType = builder.objectRef<{ event?: string; period: MeterPeriod; limit: number }>('MeterQuota').implement({
  fields: (t) => ({
    period: t.field({ type: MeterPeriodEnum, resolve: (quota) => quota.period }),
    limit: t.exposeInt('limit'),
  }),
});

const UsageTotalType = builder.objectRef<UsageTotal>('UsageTotal').implement({
  fields: (t) => ({
    event: t.exposeString('event'),
    total: t.exposeInt('total'),
    count: t.exposeInt('count'),
    quota: t.field({ type: MeterQuotaType, nullable: true, resolve: (usage) => usage.quota }),
    remaining: t.exposeInt('remaining', { nullable: true, description: 'limit − total when the quota is per the period asked for.' }),
  }),
});

const UsageType = builder.objectRef<Usage>('UsageTotals').implement({
  fields: (t) => ({
    period: t.field({ type: MeterPeriodEnum, resolve: (usage) => usage.period }),
    periodStart: t.expose('periodStart', { type: 'DateTime', nullable: true }),
    periodEnd: t.expose('periodEnd', { type: 'DateTime', nullable: true }),
    totals: t.field({ type: [UsageTotalType], resolve: (usage) => usage.totals }),
  }),
});

builder.queryFields((t) => ({
  floatingSessions: t.field({
    type: ActiveSessionsType,
    description: 'Floating sessions holding a seat of the license right now.',
    args: { licenseId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => listActiveFloatingSessions(serviceCtx(ctx), String(args.licenseId)),
  }),
  floatingPoolConsumption: t.field({
    type: [PoolBucketType],
    description: 'Pool consumption over time: peak concurrent floating sessions vs pool size per bucket (UTC).',
    args: {
      from: t.arg({ type: 'DateTime', required: true }),
      to: t.arg({ type: 'DateTime', required: true }),
      bucket: t.arg({ type: PoolBucketEnum, required: true }),
      licenseId: t.arg.id({ description: 'Only this license; all floating licenses when omitted.' }),
    },
    resolve: (_root, args, ctx) =>
      floatingPoolConsumption(serviceCtx(ctx), {
        from: args.from,
        to: args.to,
        bucket: args.bucket,
        licenseId: args.licenseId == null ? undefined : String(args.licenseId),
      }),
  }),
  usageTotals: t.field({
    type: UsageType,
    description: 'Metered usage of a license per event in the current period.',
    args: { licenseId: t.arg.id({ required: true }), period: t.arg({ type: MeterPeriodEnum, required: true }), event: t.arg.string() },
    resolve: (_root, args, ctx) =>
      usageTotals(serviceCtx(ctx), String(args.licenseId), { period: args.period, event: args.event ?? undefined }),
  }),
}));

builder.mutationFields((t) => ({
  endFloatingSession: t.field({
    type: FloatingSessionType,
    description: 'Ends a session now and frees its seat; the client’s next heartbeat answers SessionExpired.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => endFloatingSession(serviceCtx(ctx), String(args.id)),
  }),
  setMeterQuota: t.field({
    type: MeterQuotaType,
    description: 'Sets (or replaces) the license’s limit for one event per period.',
    args: {
      licenseId: t.arg.id({ required: true }),
      event: t.arg.string({ required: true }),
      period: t.arg({ type: MeterPeriodEnum, required: true }),
      limit: t.arg.int({ required: true }),
    },
    resolve: (_root, args, ctx) =>
      setMeterQuota(serviceCtx(ctx), String(args.licenseId), { event: args.event, period: args.period, limit: args.limit }),
  }),
  removeMeterQuota: t.boolean({
    args: { licenseId: t.arg.id({ required: true }), event: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => (await removeMeterQuota(serviceCtx(ctx), String(args.licenseId), args.event)).removed,
  }),
}));
