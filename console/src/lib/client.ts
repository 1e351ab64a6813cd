import { cacheExchange, type Cache, type CacheExchangeOpts, type UpdateResolver } from '@urql/exchange-graphcache';
import { relayPagination } from '@urql/exchange-graphcache/extras';
import { Client, fetchExchange } from 'urql';
import { GRAPHQL_ENDPOINT, session } from './session';
import { sessionAuthExchange } from './sessionAuth';

/**
 * Object types without an `id` (mutation payloads aside): graphcache stores them inside their parent (a `keys`
 * entry returning null says that on purpose). Connections, edges and PageInfo are embedded without one.
 * client.test.ts checks these lists against server/schema.graphql.
 */
export const EMBEDDED_TYPES = [
  'ActivationBucket',
  'ActivityCheckpointReport',
  'ActivityLogCheckpoint',
  'ActivityLogIntegrity',
  'ActivityLogVerdict',
  'ActivityLogVerification',
  'Analytics',
  'BulkJobFailure',
  'BulkSelectionTotal',
  'DashboardStats',
  'FloatingPoolBucket',
  'FloatingSessions',
  'InstallationStatus',
  'InvitationPreview',
  'JobLastRun',
  'JobRunProgress',
  'LicenseExpiryCounts',
  'LicenseImportError',
  'LicenseImportFailure',
  'LicenseImportReport',
  'LicenseStatusCounts',
  'LoginSuccess',
  'MeterQuota',
  'MfaRequired',
  'NotificationPreferences',
  'PasswordChangeRequired',
  'PasswordResetPreview',
  'PlanLicenses',
  'PlanQuota',
  'ProductLicenses',
  'SeatPoolPoint',
  'SystemStatus',
  'TopProduct',
  'UsageTotal',
  'UsageTotals',
] as const;

/**
 * Every mutation, with the root fields whose cached answers it makes stale (the queries showing them refetch).
 * Entities a mutation returns update themselves (normalized by id); this is for lists, counts and totals.
 */
export const MUTATIONS: Record<string, readonly string[]> = {
  acceptInvitation: [],
  activateOffline: ['dashboardStats', 'analytics'],
  changePassword: [],
  checkLicenseImport: [],
  confirmMfaEnrollment: ['me', 'users'],
  createApiKey: ['apiKeys'],
  createLicense: ['licenses', 'products', 'plans', 'dashboardStats', 'analytics', 'floatingPoolConsumption'],
  createPaymentIntegration: ['paymentIntegrations'],
  createPlan: ['plans', 'analytics'],
  createProduct: ['products', 'dashboardStats'],
  createRelease: ['releases'],
  createWebhookEndpoint: ['webhookEndpoints'],
  deactivateActivation: ['dashboardStats', 'analytics'],
  deactivateOffline: ['dashboardStats', 'analytics'],
  deactivateUser: [],
  deletePaymentIntegration: ['paymentIntegrations', 'paymentPrices', 'paymentEvents'],
  deletePlan: ['plans', 'analytics'],
  deleteProduct: ['products', 'plans', 'dashboardStats'],
  deleteRelease: ['releases'],
  // The release's files list is refetched by the page (an artifact is embedded in its release).
  deleteArtifact: ['releases', 'release'],
  deleteWebhookEndpoint: ['webhookEndpoints', 'webhookDeliveries'],
  disableMfa: ['me', 'users'],
  endFloatingSession: ['floatingSessions', 'floatingPoolConsumption'],
  inviteUser: ['invitations'],
  issueLicenseFile: [],
  login: [],
  logout: [],
  reauthenticate: [],
  reactivateUser: [],
  requestPasswordReset: [],
  resetPassword: [],
  resetUserMfa: [],
  refreshSession: [],
  reinstateLicense: ['licenses', 'dashboardStats', 'analytics'],
  // The payload's license (its new key hint) updates in place; the list's search by key hint goes stale.
  reissueLicenseKey: ['licenses'],
  removeMeterQuota: ['usageTotals'],
  renewLicense: ['licenses', 'dashboardStats', 'analytics', 'floatingPoolConsumption'],
  resendWebhookDelivery: ['webhookDeliveries'],
  revokeApiKey: [],
  revokeInvitation: ['invitations'],
  revokeLicense: ['licenses', 'dashboardStats', 'analytics'],
  rotateWebhookSecret: ['webhookEndpoints'],
  runJobNow: ['jobSchedules', 'emails'],
  sendPasswordResetLink: ['emails'],
  sendTestEmail: ['emails'],
  sendTestWebhookEvent: ['webhookDeliveries'],
  setMeterQuota: ['usageTotals'],
  setup: [],
  // The changes come later, from a worker: the console refetches the list when the job reports finished.
  startBulkLicenseAction: [],
  // As a bulk action: the licenses come later, from a worker (the list is refetched when the job reports finished).
  startLicenseImport: [],
  startMfaEnrollment: [],
  suspendLicense: ['licenses', 'dashboardStats', 'analytics'],
  takeLicenseImportKeys: [],
  transferLicense: ['licenses', 'dashboardStats'],
  unlockUser: [],
  updateCompanySettings: [],
  updateLicense: ['licenses', 'dashboardStats', 'analytics', 'floatingPoolConsumption', 'floatingSessions'],
  // Keyless (embedded in the payload): the root field is refetched rather than updated in place.
  updateNotificationPreferences: ['notificationPreferences'],
  updatePlan: ['plans', 'analytics'],
  updateProduct: ['products', 'plans'],
  updateUser: [],
  updateWebhookEndpoint: ['webhookEndpoints'],
  publishRelease: ['releases'],
  setArtifactTauriSignature: [],
  updateRelease: ['releases'], // a new channel moves it in or out of a channel's list
  yankRelease: ['releases'],
  mapPaymentPrice: ['paymentPrices'],
  unmapPaymentPrice: ['paymentPrices'],
  updatePaymentIntegration: ['paymentIntegrations'],
};

/** The payload type of a mutation (`createLicense` → `CreateLicensePayload`): embedded, it has no id. */
export const payloadType = (mutation: string) => `${mutation[0].toUpperCase()}${mutation.slice(1)}Payload`;

/** Mutations that write no activity-log entry (the others make the cached log and its integrity check stale). */
const NOT_LOGGED = new Set(['sendTestEmail', 'runJobNow', 'refreshSession', 'startMfaEnrollment', 'checkLicenseImport', 'takeLicenseImportKeys']);

function invalidateRootFields(cache: Cache, fieldNames: readonly string[]) {
  for (const field of cache.inspectFields('Query')) {
    if (fieldNames.includes(field.fieldName)) cache.invalidate('Query', field.fieldName, field.arguments ?? undefined);
  }
}

const afterMutation: UpdateResolver = (_result, args, cache, info) => {
  const stale = [...(MUTATIONS[info.fieldName] ?? [])];
  if (!NOT_LOGGED.has(info.fieldName)) stale.push('activityLog', 'activityLogIntegrity');
  invalidateRootFields(cache, stale);
  // A deleted product, and the activations list of a license one of whose devices was activated or deactivated.
  const id = (args as { id?: unknown; input?: { id?: unknown } }).id ?? (args as { input?: { id?: unknown } }).input?.id;
  if (info.fieldName === 'deleteProduct' && typeof id === 'string') cache.invalidate({ __typename: 'Product', id });
  if (info.fieldName === 'deactivateActivation' || info.fieldName === 'activateOffline' || info.fieldName === 'deactivateOffline') {
    for (const license of cache.inspectFields('Query').filter((field) => field.fieldName === 'license')) {
      const key = cache.resolve('Query', license.fieldKey);
      if (typeof key === 'string') for (const field of cache.inspectFields(key)) if (field.fieldName === 'activations') cache.invalidate(key, field.fieldKey);
    }
  }
};

/** Connection fields whose pages graphcache merges (client.test.ts checks that every query of them selects pageInfo). */
export const PAGINATED = ['Query.licenses', 'Query.emails', 'Query.activityLog', 'Query.releases', 'License.activations'];

export const cacheConfig: CacheExchangeOpts = {
  keys: {
    ...Object.fromEntries([...EMBEDDED_TYPES, ...Object.keys(MUTATIONS).map(payloadType)].map((typename) => [typename, () => null])),
    JobSchedule: (job) => (job.name as string | undefined) ?? null,
  },
  resolvers: {
    // The connections the console pages through ("Load more"): the pages asked for are merged into one list
    // per filter. Every query of these fields must select pageInfo (relayPagination resolves to null without
    // it). Products, users, API keys and invitations come whole (up to 100) and are not merged.
    Query: Object.fromEntries(PAGINATED.filter((field) => field.startsWith('Query.')).map((field) => [field.slice(6), relayPagination()])),
    License: { activations: relayPagination() },
  },
  updates: {
    Mutation: Object.fromEntries(Object.keys(MUTATIONS).map((field) => [field, afterMutation])),
  },
};

/** The one GraphQL client: a normalized cache (graphcache), the session's bearer token and refresh-on-401 (sessionAuth.ts), JSON POSTs with cookies. */
export function createClient() {
  return new Client({
    url: GRAPHQL_ENDPOINT,
    exchanges: [cacheExchange(cacheConfig), sessionAuthExchange(session), fetchExchange],
    preferGetMethod: false,
    requestPolicy: 'cache-and-network',
    fetchOptions: () => ({ credentials: 'include', headers: { 'x-keyforge-csrf': '1' } }),
  });
}
