import { builder } from '../builder.js';
import { serviceCtx } from '../context.js';
import {
  ANALYTICS_RANGES,
  GRANULARITIES,
  activationTrend,
  analyticsWindow,
  dashboardStats,
  licenseDistribution,
  licensesByPlan,
  licensesByProduct,
  seatPool,
  topProducts,
  type AnalyticsWindow,
} from '../../services/analytics.js';

type Stats = Awaited<ReturnType<typeof dashboardStats>>;

const ExpiringLicenseType = builder.objectRef<Stats['expiringLicenses'][number]>('ExpiringLicense').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    productName: t.exposeString('productName'),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    customerEmail: t.exposeString('customerEmail', { nullable: true }),
    daysUntilExpiry: t.exposeInt('daysUntilExpiry', { description: 'UTC calendar days to the expiry date (0: today): the countdown "in Nd".' }),
  }),
});

const DashboardStatsType = builder.objectRef<Stats>('DashboardStats').implement({
  description: 'Expiring within N days: active, not expired yet, and at most N UTC calendar days to the expiry date (daysUntilExpiry ≤ N).',
  fields: (t) => ({
    activeLicenses: t.exposeInt('activeLicenses', { description: 'Neither revoked nor expired.' }),
    totalLicenses: t.exposeInt('totalLicenses'),
    activations: t.exposeInt('activations', { description: 'Seats in use: activations not deactivated.' }),
    products: t.exposeInt('products'),
    expiringIn7Days: t.exposeInt('expiringIn7Days'),
    expiringIn30Days: t.exposeInt('expiringIn30Days', { description: 'Includes those expiring in 7 days.' }),
    expiringLicenses: t.field({ type: [ExpiringLicenseType], description: 'The 8 licenses expiring soonest within 30 days (expiringIn30Days counts them all).', resolve: (stats) => stats.expiringLicenses }),
  }),
});

const AnalyticsRangeEnum = builder.enumType('AnalyticsRange', {
  description: 'TODAY: since 00:00 UTC; LAST_7_DAYS / LAST_30_DAYS: the last 7 / 30 UTC days, today included.',
  values: ANALYTICS_RANGES,
});
const GranularityEnum = builder.enumType('Granularity', { description: 'UTC hours (the TODAY range, always), days, ISO weeks (from Monday) or months.', values: GRANULARITIES });

const ActivationBucketType = builder.objectRef<{ start: Date; activations: number }>('ActivationBucket').implement({
  fields: (t) => ({ start: t.expose('start', { type: 'DateTime' }), activations: t.exposeInt('activations') }),
});

const ProductLicensesType = builder.objectRef<{ productId: string; productName: string; licenses: number; activeLicenses: number }>('ProductLicenses').implement({
  fields: (t) => ({
    productId: t.exposeID('productId'),
    productName: t.exposeString('productName'),
    licenses: t.exposeInt('licenses'),
    activeLicenses: t.exposeInt('activeLicenses'),
  }),
});

const PlanLicensesType = builder.objectRef<Awaited<ReturnType<typeof licensesByPlan>>[number]>('PlanLicenses').implement({
  fields: (t) => ({
    planId: t.exposeID('planId'),
    planName: t.exposeString('planName'),
    productId: t.exposeID('productId'),
    productName: t.exposeString('productName'),
    archived: t.exposeBoolean('archived'),
    licenses: t.exposeInt('licenses', { description: 'Licenses created from the plan.' }),
    activeLicenses: t.exposeInt('activeLicenses'),
  }),
});

type Distribution = Awaited<ReturnType<typeof licenseDistribution>>;
const StatusCountsType = builder.objectRef<Distribution['byStatus']>('LicenseStatusCounts').implement({
  fields: (t) => ({ active: t.exposeInt('active'), expired: t.exposeInt('expired'), suspended: t.exposeInt('suspended'), revoked: t.exposeInt('revoked') }),
});
const ExpiryCountsType = builder.objectRef<Distribution['byExpiry']>('LicenseExpiryCounts').implement({
  description: 'Licenses neither revoked nor suspended, by time left; the buckets do not overlap (within30Days: more than 7, at most 30 days).',
  fields: (t) => ({
    expired: t.exposeInt('expired'),
    within7Days: t.exposeInt('within7Days'),
    within30Days: t.exposeInt('within30Days'),
    within90Days: t.exposeInt('within90Days'),
    later: t.exposeInt('later'),
    perpetual: t.exposeInt('perpetual'),
  }),
});

const TopProductType = builder.objectRef<{ productId: string; productName: string; activations: number }>('TopProduct').implement({
  fields: (t) => ({ productId: t.exposeID('productId'), productName: t.exposeString('productName'), activations: t.exposeInt('activations') }),
});

const SeatPoolPointType = builder.objectRef<{ start: Date; at: Date; seatsUsed: number; seatsAvailable: number }>('SeatPoolPoint').implement({
  fields: (t) => ({
    start: t.expose('start', { type: 'DateTime' }),
    at: t.expose('at', { type: 'DateTime', description: 'The instant measured: the end of the bucket, or now.' }),
    seatsUsed: t.exposeInt('seatsUsed'),
    seatsAvailable: t.exposeInt('seatsAvailable', { description: 'maxActivations of the licenses in force (created, not revoked, not expired).' }),
  }),
});

// Each field runs its own query, only when asked for.
const AnalyticsType = builder.objectRef<AnalyticsWindow>('Analytics').implement({
  fields: (t) => ({
    range: t.field({ type: AnalyticsRangeEnum, resolve: (w) => w.range }),
    granularity: t.field({ type: GranularityEnum, resolve: (w) => w.granularity }),
    from: t.expose('from', { type: 'DateTime' }),
    to: t.expose('to', { type: 'DateTime' }),
    activationTrend: t.field({ type: [ActivationBucketType], description: 'New activations per bucket within the range.', resolve: (w, _args, ctx) => activationTrend(serviceCtx(ctx), w) }),
    licensesByProduct: t.field({ type: [ProductLicensesType], description: 'Current state, whatever the range.', resolve: (w, _args, ctx) => licensesByProduct(serviceCtx(ctx), w) }),
    licensesByPlan: t.field({
      type: [PlanLicensesType],
      description: 'Licenses created from each plan (archived plans too), by product and plan name; current state, whatever the range.',
      resolve: (w, _args, ctx) => licensesByPlan(serviceCtx(ctx), w),
    }),
    licensesByStatus: t.field({ type: StatusCountsType, resolve: async (w, _args, ctx) => (await licenseDistribution(serviceCtx(ctx), w)).byStatus }),
    licensesByExpiry: t.field({ type: ExpiryCountsType, resolve: async (w, _args, ctx) => (await licenseDistribution(serviceCtx(ctx), w)).byExpiry }),
    topProducts: t.field({
      type: [TopProductType],
      description: 'Products with the most new activations within the range.',
      args: { limit: t.arg.int({ defaultValue: 5, description: '1–50' }) },
      resolve: (w, args, ctx) => topProducts(serviceCtx(ctx), w, args.limit ?? 5),
    }),
    seatPool: t.field({ type: [SeatPoolPointType], description: 'Seats used vs available at the end of each bucket.', resolve: (w, _args, ctx) => seatPool(serviceCtx(ctx), w) }),
  }),
});

builder.queryFields((t) => ({
  dashboardStats: t.field({ type: DashboardStatsType, resolve: (_root, _args, ctx) => dashboardStats(serviceCtx(ctx)) }),
  analytics: t.field({
    type: AnalyticsType,
    args: { range: t.arg({ type: AnalyticsRangeEnum, required: true }), granularity: t.arg({ type: GranularityEnum, defaultValue: 'DAY' }) },
    resolve: (_root, args, ctx) => analyticsWindow(serviceCtx(ctx), args.range, args.granularity ?? 'DAY'),
  }),
}));
