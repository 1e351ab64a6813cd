import { describe, it } from 'vitest';
import { FUZZ_TIMEOUT_MS, fuzzOperation, GRAPHQL_RUNS, type Operation, useFuzzTarget } from './support/fuzz-graphql.js';

// Every query with arguments, hostile variables, as an admin (so they reach the services).
let ids: string[] = [];
const fuzz = useFuzzTarget(async (target) => {
  const integration = await target.t.prisma.paymentConnection.create({ data: { tenantId: target.admin.user.tenantId, provider: 'stripe', name: 'Stripe', secretEncrypted: target.t.deps.secrets.encrypt('whsec_fuzz_0000'), secretHint: '…0000' } });
  ids = [target.admin.user.id, target.product.id, target.license.id, integration.id];
});

const period = ['DAY', 'MONTH', 'YEAR', 'LIFETIME', 'day'] as const;
/** Relay connection arguments: every list takes them. */
const page = { first: 'int', after: 'string', last: 'int', before: 'string' } as const;
const connection = (name: string): Operation => ({
  name,
  query: `query($first: Int, $after: String, $last: Int, $before: String) { ${name}(first: $first, after: $after, last: $last, before: $before) { totalCount edges { cursor node { __typename } } pageInfo { startCursor endCursor } } }`,
  variables: page,
});
const operations: Operation[] = [
  { name: 'license', query: 'query($id: ID!) { license(id: $id) { id } }', variables: { id: 'id' } },
  { name: 'product', query: 'query($id: ID!) { product(id: $id) { id } }', variables: { id: 'id' } },
  {
    name: 'licenses',
    query: 'query($first: Int, $after: String, $last: Int, $before: String, $filter: LicenseFilter) { licenses(first: $first, after: $after, last: $last, before: $before, filter: $filter) { totalCount edges { node { id } } } }',
    variables: { ...page, filter: { search: 'string', productId: 'id', expiringWithinDays: 'int', status: ['ACTIVE', 'REVOKED', 'EXPIRED', 'SUSPENDED', 'active'] } },
  },
  {
    name: 'license.activations',
    query: 'query($id: ID!, $first: Int, $after: String, $last: Int, $before: String) { license(id: $id) { activations(first: $first, after: $after, last: $last, before: $before) { totalCount edges { cursor } } } }',
    variables: { id: 'id', ...page },
  },
  {
    name: 'activityLog',
    query: 'query($first: Int, $after: String, $last: Int, $before: String, $filter: ActivityFilter) { activityLog(first: $first, after: $after, last: $last, before: $before, filter: $filter) { edges { node { id } } } }',
    variables: { ...page, filter: { action: ['CREATE_LICENSE', 'LOGIN', 'CreateLicense'], user: 'string', userId: 'id', entity: 'string', entityId: 'id', entityType: 'string', from: 'date', to: 'date' } },
  },
  {
    name: 'emails',
    query: 'query($first: Int, $after: String, $last: Int, $before: String, $status: EmailStatus, $kind: EmailKind) { emails(first: $first, after: $after, last: $last, before: $before, status: $status, kind: $kind) { edges { node { id } } } }',
    variables: { ...page, status: ['PENDING', 'SENT', 'FAILED', 'sent'], kind: ['TEST', 'WEEKLY_DIGEST', 'test'] },
  },
  connection('products'),
  connection('users'),
  connection('apiKeys'),
  connection('invitations'),
  connection('webhookEndpoints'),
  connection('paymentIntegrations'),
  {
    name: 'paymentPrices',
    query: 'query($integrationId: ID!, $first: Int, $after: String, $last: Int, $before: String) { paymentPrices(integrationId: $integrationId, first: $first, after: $after, last: $last, before: $before) { totalCount edges { node { id priceId } } } }',
    variables: { integrationId: 'id', ...page },
  },
  {
    name: 'paymentEvents',
    query: 'query($integrationId: ID!, $first: Int, $after: String, $last: Int, $before: String) { paymentEvents(integrationId: $integrationId, first: $first, after: $after, last: $last, before: $before) { totalCount edges { node { id outcome } } } }',
    variables: { integrationId: 'id', ...page },
  },
  {
    name: 'webhookDeliveries',
    query: 'query($endpointId: ID!, $first: Int, $after: String, $last: Int, $before: String) { webhookDeliveries(endpointId: $endpointId, first: $first, after: $after, last: $last, before: $before) { totalCount edges { node { id } } } }',
    variables: { endpointId: 'id', ...page },
  },
  { name: 'invitation', query: 'query($token: String!) { invitation(token: $token) { email } }', variables: { token: 'string' } },
  {
    name: 'floatingSessions',
    query: 'query($licenseId: ID!, $first: Int, $after: String, $last: Int, $before: String) { floatingSessions(licenseId: $licenseId) { sessions(first: $first, after: $after, last: $last, before: $before) { totalCount } } }',
    variables: { licenseId: 'id', ...page },
  },
  {
    name: 'floatingPoolConsumption',
    query: 'query($licenseId: ID, $from: DateTime!, $to: DateTime!, $bucket: PoolBucketSize!) { floatingPoolConsumption(licenseId: $licenseId, from: $from, to: $to, bucket: $bucket) { __typename } }',
    variables: { licenseId: 'id', from: 'date', to: 'date', bucket: ['HOUR', 'DAY', 'WEEK', 'hour'] },
  },
  { name: 'usageTotals', query: 'query($licenseId: ID!, $event: String, $period: MeterPeriod!) { usageTotals(licenseId: $licenseId, event: $event, period: $period) { __typename } }', variables: { licenseId: 'id', event: 'string', period } },
  // The verification against kept checkpoints (any text; hostile strings hold no checkpoint).
  { name: 'activityLogVerification', query: 'query($checkpoints: String!) { activityLogVerification(checkpoints: $checkpoints) { valid brokenAtSeq } }', variables: { checkpoints: 'string' } },
  { name: 'analytics', query: 'query($range: AnalyticsRange!, $granularity: Granularity) { analytics(range: $range, granularity: $granularity) { __typename } }', variables: { range: ['TODAY', 'LAST_7_DAYS', 'LAST_30_DAYS'], granularity: ['DAY', 'WEEK', 'MONTH'] } },
  { name: 'bulkSelectionCount', query: 'query($selection: BulkLicenseSelection!) { bulkSelectionCount(selection: $selection) }', variables: { selection: { licenseIds: 'json', filter: 'json' } } },
  { name: 'licenseImportJob', query: 'query($id: ID!, $first: Int) { licenseImportJob(id: $id) { id failures(first: $first) { error } } }', variables: { id: 'id', first: 'int' } },
  { name: 'bulkJob', query: 'query($id: ID!, $first: Int) { bulkJob(id: $id) { id failures(first: $first) { error } } }', variables: { id: 'id', first: 'int' } },
];

describe(`GraphQL queries under hostile variables (${GRAPHQL_RUNS} per operation)`, () => {
  for (const op of operations) it(op.name, () => fuzzOperation(fuzz.t, fuzz.auth, op, () => ids), FUZZ_TIMEOUT_MS);
});
