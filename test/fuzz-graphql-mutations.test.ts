import { afterAll, beforeAll, describe, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';
import { FUZZ_TIMEOUT_MS, fuzzOperation, GRAPHQL_RUNS, type Operation, seedFuzzTarget } from './support/fuzz-graphql.js';

// Issue 12 item 6: every mutation with arguments, hostile variables, as an admin. Session-ending mutations
// (logout, refreshSession, changePassword) are left out so the admin stays signed in; login and setup are public.
let t: TestApp;
let auth: { token: string };
let ids: string[] = [];
beforeAll(async () => {
  t = await startTestApp();
  const target = await seedFuzzTarget(t);
  auth = target.auth;
  const other = await t.seedUser(target.admin.user.tenantId, { email: 'other@acme.test' });
  ids = [target.product.id, target.license.id, other.id];
});
afterAll(async () => {
  await t?.close();
});

const role = ['CompanyAdmin', 'ReadOnly'] as const;
const period = ['day', 'month', 'year', 'lifetime'] as const;
const licenseFields = { customFields: 'json', customerEmail: 'string', expiresAt: 'date', features: 'json', floatingSeats: 'int', gracePeriodDays: 'int', isTrial: 'bool', maxActivations: 'int', maxVersion: 'string', minVersion: 'string', offlineGraceDays: 'int' } as const;
const byId = (name: string, field = 'id') => ({ name, query: `mutation($id: ID!) { ${name}(id: $id) { ${field} } }`, variables: { id: 'id' as const } });
const operations: Operation[] = [
  byId('revokeApiKey'),
  byId('deactivateUser'),
  byId('reactivateUser'),
  byId('revokeLicense'),
  byId('deactivateActivation'),
  byId('endFloatingSession'),
  byId('revokeInvitation'),
  { name: 'deleteProduct', query: 'mutation($id: ID!) { deleteProduct(input: { id: $id }) { deletedProductId } }', variables: { id: 'id' } },
  { name: 'updateUser', query: 'mutation($id: ID!, $name: String, $role: Role) { updateUser(input: { id: $id, name: $name, role: $role }) { user { id } } }', variables: { id: 'id', name: 'string', role } },
  { name: 'createUser', query: 'mutation($email: String!, $name: String, $password: String!, $role: Role!) { createUser(input: { email: $email, name: $name, password: $password, role: $role }) { user { id } } }', variables: { email: 'string', name: 'string', password: 'string', role } },
  { name: 'inviteUser', query: 'mutation($email: String!, $name: String, $role: Role!) { inviteUser(input: { email: $email, name: $name, role: $role }) { invitation { id } } }', variables: { email: 'string', name: 'string', role } },
  { name: 'acceptInvitation', query: 'mutation($token: String!, $password: String!, $name: String) { acceptInvitation(input: { token: $token, password: $password, name: $name }) { status } }', variables: { token: 'string', password: 'string', name: 'string' } },
  { name: 'createApiKey', query: 'mutation($name: String!, $role: Role!) { createApiKey(input: { name: $name, role: $role }) { key } }', variables: { name: 'string', role } },
  { name: 'createProduct', query: 'mutation($name: String!, $bundleOf: [String!], $bundleMemberIds: [ID!]) { createProduct(input: { name: $name, bundleOf: $bundleOf, bundleMemberIds: $bundleMemberIds }) { product { id } } }', variables: { name: 'string', bundleOf: 'json', bundleMemberIds: 'json' } },
  { name: 'updateProduct', query: 'mutation($id: ID!, $name: String, $bundleOf: [String!]) { updateProduct(input: { id: $id, name: $name, bundleOf: $bundleOf }) { product { id } } }', variables: { id: 'id', name: 'string', bundleOf: 'json' } },
  { name: 'createLicense', query: 'mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key } }', variables: { input: { productId: 'id', ...licenseFields } } },
  { name: 'updateLicense', query: 'mutation($id: ID!, $input: UpdateLicenseInput!) { updateLicense(id: $id, input: $input) { id } }', variables: { id: 'id', input: licenseFields } },
  { name: 'setMeterQuota', query: 'mutation($licenseId: ID!, $event: String!, $limit: Int!, $period: MeterPeriod!) { setMeterQuota(input: { licenseId: $licenseId, event: $event, limit: $limit, period: $period }) { quota { __typename } } }', variables: { licenseId: 'id', event: 'string', limit: 'int', period } },
  { name: 'removeMeterQuota', query: 'mutation($licenseId: ID!, $event: String!) { removeMeterQuota(input: { licenseId: $licenseId, event: $event }) { removed } }', variables: { licenseId: 'id', event: 'string' } },
  { name: 'updateCompanySettings', query: 'mutation($name: String, $keyPrefix: String) { updateCompanySettings(input: { name: $name, keyPrefix: $keyPrefix }) { company { __typename } } }', variables: { name: 'string', keyPrefix: 'string' } },
  { name: 'confirmMfaEnrollment', query: 'mutation($code: String!) { confirmMfaEnrollment(input: { code: $code }) { backupCodes } }', variables: { code: 'string' } },
  { name: 'disableMfa', query: 'mutation($totpCode: String, $backupCode: String) { disableMfa(input: { totpCode: $totpCode, backupCode: $backupCode }) { user { id mfaEnabled } } }', variables: { totpCode: 'string', backupCode: 'string' } },
  { name: 'login', query: 'mutation($email: String!, $password: String!, $totpCode: String) { login(input: { email: $email, password: $password, totpCode: $totpCode }) { __typename } }', variables: { email: 'string', password: 'string', totpCode: 'string' } },
  { name: 'setup', query: 'mutation($companyName: String!, $keyPrefix: String!, $email: String!, $password: String!) { setup(input: { companyName: $companyName, keyPrefix: $keyPrefix, email: $email, password: $password }) { status } }', variables: { companyName: 'string', keyPrefix: 'string', email: 'string', password: 'string' } },
];

describe(`GraphQL mutations under hostile variables (${GRAPHQL_RUNS} per operation)`, () => {
  for (const op of operations) it(op.name, () => fuzzOperation(t, auth, op, () => ids), FUZZ_TIMEOUT_MS);
});
