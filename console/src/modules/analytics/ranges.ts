import type { EnumOf } from '../../graphql';

export type AnalyticsRange = EnumOf<'AnalyticsRange'>;
export type Granularity = EnumOf<'Granularity'>;

export const RANGES: { value: AnalyticsRange; label: string }[] = [
  { value: 'TODAY', label: 'Today' },
  { value: 'LAST_7_DAYS', label: 'Last 7 days' },
  { value: 'LAST_30_DAYS', label: 'Last 30 days' },
];

/** The choices for 7 and 30 days (Today is always by hour). */
export const GRANULARITIES: { value: Granularity; label: string }[] = [
  { value: 'DAY', label: 'Daily' },
  { value: 'WEEK', label: 'Weekly' },
  { value: 'MONTH', label: 'Monthly' },
];

export const parseRange = (value: string | null): AnalyticsRange => RANGES.find((range) => range.value === value)?.value ?? 'LAST_30_DAYS';
export const parseGranularity = (value: string | null): Granularity => GRANULARITIES.find((g) => g.value === value)?.value ?? 'DAY';

/** Floating-pool buckets matching the other charts' granularity (the pool has no month bucket: weeks then). */
export const poolBucketFor = (granularity: Granularity) => ({ HOUR: 'HOUR', DAY: 'DAY', WEEK: 'WEEK', MONTH: 'WEEK' } as const)[granularity] as EnumOf<'PoolBucketSize'>;

/** Expiry buckets in display order, with colours matching the dashboard widget. */
export const EXPIRY_BUCKETS = [
  { key: 'within7Days', label: '≤ 7 days', color: '#fa5252' },
  { key: 'within30Days', label: '8–30 days', color: '#fab005' },
  { key: 'within90Days', label: '31–90 days', color: '#74c0fc' },
  { key: 'later', label: '> 90 days', color: '#4c6ef5' },
  { key: 'perpetual', label: 'Perpetual', color: '#12b886' },
  { key: 'expired', label: 'Expired', color: '#adb5bd' },
] as const;

export const STATUS_BUCKETS = [
  { key: 'active', label: 'Active', color: '#12b886' },
  { key: 'expired', label: 'Expired', color: '#fd7e14' },
  { key: 'suspended', label: 'Suspended', color: '#7950f2' },
  { key: 'revoked', label: 'Revoked', color: '#fa5252' },
] as const;
