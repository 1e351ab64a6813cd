import { cacheExchange, type Cache, type CacheExchangeOpts, type UpdateResolver } from '@urql/exchange-graphcache';
import { relayPagination } from '@urql/exchange-graphcache/extras';
import { Client, fetchExchange } from 'urql';
import { GRAPHQL_ENDPOINT, session } from './session';

/**
 * Object types without an `id`: graphcache stores them inside their parent (a `keys` entry returning null says
 * that on purpose). Connections, edges and PageInfo are embedded without one. client.test.ts checks this list
 * against server/schema.graphql.
 */
export const EMBEDDED_TYPES = [
  'ActivationBucket',
  'ActivityLogIntegrity',
  'Analytics',
  'CreatedApiKey',
  'CreatedLicense',
  'DashboardStats',
  'FloatingPoolBucket',
  'FloatingSessions',
  'InvitationPreview',
  'LicenseExpiryCounts',
  'LicenseStatusCounts',
  'MeterQuota',
  'MfaEnrollment',
  'NotificationPreferences',
  'ProductLicenses',
  'SeatPoolPoint',
  'SessionPayload',
  'TopProduct',
  'UsageTotal',
  'UsageTotals',
] as const;

/** Root fields whose cached answers are stale after a mutation (refetched by the queries that show them). */
const STALE_AFTER: Record<string, readonly string[]> = {
  createLicense: ['licenses', 'products', 'dashboardStats', 'analytics', 'floatingPoolConsumption'],
  updateLicense: ['licenses', 'dashboardStats', 'analytics', 'floatingPoolConsumption', 'floatingSessions'],
  revokeLicense: ['licenses', 'dashboardStats', 'analytics'],
  deactivateActivation: ['dashboardStats', 'analytics'],
  createProduct: ['products'],
  updateProduct: ['products'],
  deleteProduct: ['products', 'dashboardStats'],
  createUser: ['users'],
  inviteUser: ['invitations'],
  revokeInvitation: ['invitations'],
  createApiKey: ['apiKeys'],
  endFloatingSession: ['floatingSessions', 'floatingPoolConsumption'],
  setMeterQuota: ['usageTotals'],
  removeMeterQuota: ['usageTotals'],
  sendTestEmail: ['emails'],
  runJobNow: ['jobSchedules', 'emails'],
  confirmMfaEnrollment: ['me', 'users'],
  disableMfa: ['me', 'users'],
};

/** Mutations that change an entity the cache already normalizes, and write an activity-log entry. */
const LOGGED_ONLY = ['updateUser', 'deactivateUser', 'reactivateUser', 'revokeApiKey', 'updateCompanySettings', 'changePassword', 'updateNotificationPreferences'];
/** Mutations that write no activity-log entry. */
const NOT_LOGGED = new Set(['sendTestEmail', 'runJobNow']);

function invalidateRootFields(cache: Cache, fieldNames: readonly string[]) {
  for (const field of cache.inspectFields('Query')) {
    if (fieldNames.includes(field.fieldName)) cache.invalidate('Query', field.fieldName, field.arguments ?? undefined);
  }
}

const afterMutation: UpdateResolver = (_result, args, cache, info) => {
  const stale = [...(STALE_AFTER[info.fieldName] ?? [])];
  if (!NOT_LOGGED.has(info.fieldName)) stale.push('activityLog', 'activityLogIntegrity');
  invalidateRootFields(cache, stale);
  // A deleted product, and the activations list of a license one of whose devices was deactivated.
  const id = (args as { id?: unknown; input?: { id?: unknown } }).id ?? (args as { input?: { id?: unknown } }).input?.id;
  if (info.fieldName === 'deleteProduct' && typeof id === 'string') cache.invalidate({ __typename: 'Product', id });
  if (info.fieldName === 'deactivateActivation') {
    for (const license of cache.inspectFields('Query').filter((field) => field.fieldName === 'license')) {
      const key = cache.resolve('Query', license.fieldKey);
      if (typeof key === 'string') for (const field of cache.inspectFields(key)) if (field.fieldName === 'activations') cache.invalidate(key, field.fieldKey);
    }
  }
};

export const cacheConfig: CacheExchangeOpts = {
  keys: {
    ...Object.fromEntries(EMBEDDED_TYPES.map((typename) => [typename, () => null])),
    JobSchedule: (job) => (job.name as string | undefined) ?? null,
  },
  resolvers: {
    // Cursor connections: the pages asked for ("Load more") are merged into one list per filter.
    Query: { licenses: relayPagination(), emails: relayPagination(), activityLog: relayPagination() },
    License: { activations: relayPagination() },
  },
  updates: {
    Mutation: Object.fromEntries([...Object.keys(STALE_AFTER), ...LOGGED_ONLY].map((field) => [field, afterMutation])),
  },
};

/** The one GraphQL client: a normalized cache (graphcache), JSON POSTs with cookies, the session's bearer token and refresh-on-401. */
export function createClient() {
  return new Client({
    url: GRAPHQL_ENDPOINT,
    exchanges: [cacheExchange(cacheConfig), fetchExchange],
    fetch: session.fetch,
    preferGetMethod: false,
    requestPolicy: 'cache-and-network',
    fetchOptions: () => ({ credentials: 'include', headers: { 'x-keyforge-csrf': '1' } }),
  });
}
