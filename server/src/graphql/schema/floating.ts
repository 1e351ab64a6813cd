import { builder, screamingEnumValues } from '../builder.js';
import { arrayConnection, orNull } from '../connections.js';
import { serviceCtx } from '../context.js';
import { POOL_BUCKETS, SESSION_FIELDS, endFloatingSession, floatingPoolConsumption, listActiveFloatingSessions, type PoolBucket } from '../../services/floating/management.js';
import { removeMeterQuota, setMeterQuota, usageTotals, type UsageTotal } from '../../services/metering/management.js';
import { METER_PERIODS } from '../../services/metering/periods.js';

// Floating sessions and usage metering: thin resolvers over the tenant-scoped services (the caller's
// tenant comes from its actor; another tenant's license or session answers NotFound).

type FloatingSessionShape = Awaited<ReturnType<typeof endFloatingSession>>;
type ActiveSessions = Awaited<ReturnType<typeof listActiveFloatingSessions>>;
type Usage = Awaited<ReturnType<typeof usageTotals>>;

export const MeterPeriodEnum = builder.enumType('MeterPeriod', {
  description: 'Calendar period in UTC (DAY, MONTH, YEAR) or the whole LIFETIME.',
  values: screamingEnumValues(METER_PERIODS),
});
const PoolBucketEnum = builder.enumType('PoolBucketSize', { values: screamingEnumValues(Object.keys(POOL_BUCKETS) as (keyof typeof POOL_BUCKETS)[]) });

// Select mode: never the session token's digest.
const FloatingSessionType = builder.prismaObject('FloatingSession', {
  select: SESSION_FIELDS,
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
    endReason: t.exposeString('endReason', { nullable: true, description: 'checkin, expired, replaced, revoked, suspended, license_expired, floating_disabled or admin.' }),
  }),
});

const ActiveSessionsType = builder.objectRef<ActiveSessions>('FloatingSessions').implement({
  fields: (t) => ({
    floatingSeats: t.exposeInt('floatingSeats', { nullable: true, description: 'Pool size; null when the license has no floating pool.' }),
    inUse: t.exposeInt('inUse'),
    sessions: t.connection(
      { type: FloatingSessionType, description: 'Oldest first.', resolve: (active, args) => arrayConnection(args, active.sessions) },
      { name: 'FloatingSessionConnection' },
      { name: 'FloatingSessionEdge' },
    ),
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

// Include mode: a quota row has no column to keep back, and usageTotals and setMeterQuota hand over whole rows, so
// its fields read the row they get and never reload it.
const MeterQuotaType = builder.prismaObject('MeterQuota', {
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
    nullable: true,
    description: 'Floating sessions holding a seat of the license right now; null when there is no such license in your company.',
    args: { licenseId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => orNull(listActiveFloatingSessions(serviceCtx(ctx), String(args.licenseId))),
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
    nullable: true,
    description: 'Metered usage of a license per event in the current period; null when there is no such license in your company.',
    args: { licenseId: t.arg.id({ required: true }), period: t.arg({ type: MeterPeriodEnum, required: true }), event: t.arg.string() },
    resolve: (_root, args, ctx) =>
      orNull(usageTotals(serviceCtx(ctx), String(args.licenseId), { period: args.period, event: args.event ?? undefined })),
  }),
}));

const EndFloatingSessionInput = builder.inputType('EndFloatingSessionInput', { fields: (t) => ({ id: t.id({ required: true }) }) });
const EndFloatingSessionPayload = builder.objectRef<FloatingSessionShape>('EndFloatingSessionPayload').implement({
  fields: (t) => ({ floatingSession: t.field({ type: FloatingSessionType, resolve: (session) => session }) }),
});
const SetMeterQuotaInput = builder.inputType('SetMeterQuotaInput', {
  fields: (t) => ({
    licenseId: t.id({ required: true }),
    event: t.string({ required: true }),
    period: t.field({ type: MeterPeriodEnum, required: true }),
    limit: t.int({ required: true }),
  }),
});
const SetMeterQuotaPayload = builder.objectRef<Awaited<ReturnType<typeof setMeterQuota>>>('SetMeterQuotaPayload').implement({
  fields: (t) => ({ quota: t.field({ type: MeterQuotaType, resolve: (quota) => quota }) }),
});
const RemoveMeterQuotaInput = builder.inputType('RemoveMeterQuotaInput', {
  fields: (t) => ({ licenseId: t.id({ required: true }), event: t.string({ required: true }) }),
});
const RemoveMeterQuotaPayload = builder.objectRef<{ removed: boolean }>('RemoveMeterQuotaPayload').implement({
  fields: (t) => ({ removed: t.exposeBoolean('removed', { description: 'Always true: removing a quota the license does not have answers NotFound.' }) }),
});

builder.mutationFields((t) => ({
  endFloatingSession: t.field({
    type: EndFloatingSessionPayload,
    description: 'Ends a session now and frees its seat; the client’s next heartbeat answers SessionExpired.',
    args: { input: t.arg({ type: EndFloatingSessionInput, required: true }) },
    resolve: (_root, { input }, ctx) => endFloatingSession(serviceCtx(ctx), String(input.id)),
  }),
  setMeterQuota: t.field({
    type: SetMeterQuotaPayload,
    description: 'Sets (or replaces) the license’s limit for one event per period.',
    args: { input: t.arg({ type: SetMeterQuotaInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      setMeterQuota(serviceCtx(ctx), String(input.licenseId), { event: input.event, period: input.period, limit: input.limit }),
  }),
  removeMeterQuota: t.field({
    type: RemoveMeterQuotaPayload,
    args: { input: t.arg({ type: RemoveMeterQuotaInput, required: true }) },
    resolve: (_root, { input }, ctx) => removeMeterQuota(serviceCtx(ctx), String(input.licenseId), input.event),
  }),
}));
