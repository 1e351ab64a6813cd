import { describe, it } from 'vitest';
import { versionOrder } from '../../server/src/services/releases/model.js';
import { armoredText, seedArmoredSamples } from './fuzz-armor.js';
import { FUZZ_TIMEOUT_MS, fuzzOperation, GRAPHQL_RUNS, type Operation, useFuzzTarget, type VarKind } from './fuzz-graphql.js';

// Every mutation with arguments, hostile variables, as an admin. Session-ending mutations
// (logout, refreshSession, changePassword) are left out so the admin stays signed in; login and setup are public.
// runJobNow needs the job store, which this app does not open (it answers 503 ServiceUnavailable here).
// The list runs in two test files (half each), so two workers share the run's longest suite.

const role = ['COMPANY_ADMIN', 'READ_ONLY', 'CompanyAdmin'] as const;
const period = ['DAY', 'MONTH', 'YEAR', 'LIFETIME', 'day'] as const;
const releaseChannel = ['STABLE', 'RC', 'BETA', 'ALPHA', 'DEV', 'stable'] as const;
const licenseFields = { customFields: 'json', customerEmail: 'string', expiresAt: 'date', features: 'json', floatingSeats: 'int', gracePeriodDays: 'int', isTrial: 'bool', maxActivations: 'int', maxVersion: 'string', minVersion: 'string', offlineGraceDays: 'int' } as const;
const { customerEmail: _customer, expiresAt: _expires, ...planFields } = licenseFields;
/** Every mutation takes one `input` (<Name>Input); the fuzzed variable is that whole object. */
const mutation = (name: string, input: Record<string, VarKind>): Operation => ({
  name,
  query: `mutation($input: ${name.charAt(0).toUpperCase()}${name.slice(1)}Input!) { ${name}(input: $input) { __typename } }`,
  variables: { input },
});
export const operations: Operation[] = [
  mutation('revokeApiKey', { id: 'id' }),
  mutation('deactivateUser', { id: 'id' }),
  mutation('reactivateUser', { id: 'id' }),
  mutation('revokeLicense', { id: 'id' }),
  mutation('deactivateActivation', { id: 'id' }),
  mutation('endFloatingSession', { id: 'id' }),
  mutation('revokeInvitation', { id: 'id' }),
  mutation('deleteProduct', { id: 'id' }),
  mutation('updateUser', { id: 'id', name: 'string', role }),
  mutation('inviteUser', { email: 'string', name: 'string', role }),
  mutation('acceptInvitation', { token: 'string', password: 'string', name: 'string' }),
  mutation('createApiKey', { name: 'string', role }),
  mutation('createProduct', { name: 'string', bundleOf: 'json', bundleMemberIds: 'json', licenseFileTtlDays: 'int', renewalUrl: 'string', deviceFreeLimit: 'int', deviceFreeWindowDays: 'int' }),
  mutation('updateProduct', { id: 'id', name: 'string', bundleOf: 'json', bundleMemberIds: 'json', licenseFileTtlDays: 'int', renewalUrl: 'string', deviceFreeLimit: 'int', deviceFreeWindowDays: 'int' }),
  mutation('createLicense', { productId: 'id', planId: 'id', ...licenseFields }),
  mutation('updateLicense', { id: 'id', ...licenseFields }),
  mutation('createPlan', { productId: 'id', name: 'string', duration: 'string', maintenancePeriod: 'string', quotas: 'json', ...planFields }),
  mutation('updatePlan', { id: 'id', name: 'string', duration: 'string', maintenancePeriod: 'string', quotas: 'json', archived: 'bool', ...planFields }),
  mutation('deletePlan', { id: 'id' }),
  mutation('setMeterQuota', { licenseId: 'id', event: 'string', limit: 'int', period }),
  mutation('removeMeterQuota', { licenseId: 'id', event: 'string' }),
  mutation('updateCompanySettings', { name: 'string', keyPrefix: 'string', renewalUrl: 'string', supportEmail: 'string', portalHandle: 'string', portalLogoUrl: 'string', portalAccentColor: 'string' }),
  mutation('updateNotificationPreferences', { digestEmailEnabled: 'bool', expiryEmailEnabled: 'bool' }),
  mutation('confirmMfaEnrollment', { code: 'string' }),
  mutation('disableMfa', { totpCode: 'string', backupCode: 'string' }),
  mutation('login', { email: 'string', password: 'string', totpCode: 'string', backupCode: 'string' }),
  mutation('suspendLicense', { id: 'id' }),
  mutation('reinstateLicense', { id: 'id' }),
  mutation('renewLicense', { id: 'id', expiresAt: 'date' }),
  mutation('transferLicense', { id: 'id', customerEmail: 'string' }),
  mutation('reissueLicenseKey', { id: 'id', overlapHours: 'int' }),
  mutation('createWebhookEndpoint', { url: 'string', eventTypes: 'json', enabled: 'bool' }),
  mutation('updateWebhookEndpoint', { id: 'id', url: 'string', eventTypes: 'json', enabled: 'bool' }),
  mutation('deleteWebhookEndpoint', { id: 'id' }),
  mutation('rotateWebhookSecret', { id: 'id' }),
  mutation('sendTestWebhookEvent', { endpointId: 'id' }),
  mutation('resendWebhookDelivery', { id: 'id' }),
  mutation('unlockUser', { id: 'id' }),
  mutation('resetUserMfa', { id: 'id' }),
  mutation('sendPasswordResetLink', { id: 'id' }),
  mutation('resetPassword', { token: 'string', password: 'string' }),
  mutation('checkLicenseImport', { csv: 'string' }),
  mutation('startLicenseImport', { csv: 'string' }),
  mutation('takeLicenseImportKeys', { jobId: 'id' }),
  mutation('startBulkLicenseAction', { action: ['SUSPEND', 'RENEW', 'TRANSFER', 'REVOKE', 'suspend'], licenseIds: 'json', filter: 'json', expiresAt: 'date', customerEmail: 'string' }),
  mutation('createPaymentIntegration', { provider: ['STRIPE', 'PADDLE', 'LEMONSQUEEZY', 'stripe'], name: 'string', signingSecret: 'string', refundAction: ['SUSPEND', 'REVOKE', 'revoke'] }),
  mutation('updatePaymentIntegration', { id: 'id', name: 'string', signingSecret: 'string', refundAction: ['SUSPEND', 'REVOKE', 'revoke'], enabled: 'bool' }),
  mutation('deletePaymentIntegration', { id: 'id' }),
  mutation('mapPaymentPrice', { integrationId: 'id', priceId: 'string', planId: 'id' }),
  mutation('unmapPaymentPrice', { id: 'id' }),
  mutation('issueLicenseFile', { licenseId: 'id', deviceId: 'string', ttlDays: 'int', licenseKey: 'string' }),
  mutation('activateOffline', { licenseId: 'id', request: armoredText, licenseKey: 'string' }),
  mutation('deactivateOffline', { licenseId: 'id', proof: armoredText }),
  mutation('createRelease', { productId: 'id', version: 'string', channel: releaseChannel, notes: 'string', requiredFeatures: 'json', requiresMaintenance: 'bool' }),
  mutation('updateRelease', { id: 'id', channel: releaseChannel, notes: 'string', requiredFeatures: 'json', requiresMaintenance: 'bool' }),
  mutation('publishRelease', { id: 'id' }),
  mutation('yankRelease', { id: 'id' }),
  mutation('deleteRelease', { id: 'id' }),
  mutation('deleteArtifact', { id: 'id' }),
  mutation('setArtifactTauriSignature', { artifactId: 'id', tauriSignature: 'string' }),
  mutation('setup', { companyName: 'string', keyPrefix: 'string', email: 'string', password: 'string', name: 'string' }),
];

/**
 * Not fuzzed, and why: each ends the admin's session, takes no input, or needs the job store (see the top);
 * requestPasswordReset answers no sooner than 400 ms by design (its input is one zod-checked email, as inviteUser's);
 * reauthenticate answers a refusal no sooner than 200 ms and counts it towards the admin's lockout, by design (its
 * input is a zod-checked password and codes, as login's; test/reauthentication.test.ts sends it hostile values).
 */
export const NOT_FUZZED = ['logout', 'refreshSession', 'changePassword', 'startMfaEnrollment', 'sendTestEmail', 'runJobNow', 'requestPasswordReset', 'reauthenticate'];

/** Fuzzes half of the operations (`half` 0 or 1) against an app of its own, seeded with the ids variables mix in. */
export function fuzzMutationsHalf(half: 0 | 1) {
  let ids: string[] = [];
  const fuzz = useFuzzTarget(async (target) => {
    const other = await target.t.seedUser(target.admin.user.tenantId, { email: 'other@acme.test' });
    const plan = await target.t.prisma.plan.create({ data: { tenantId: target.admin.user.tenantId, productId: target.product.id, name: 'Fuzzed plan', maxActivations: 1 } });
    const tenantId = target.admin.user.tenantId;
    const integration = await target.t.prisma.paymentConnection.create({ data: { tenantId, provider: 'stripe', name: 'Stripe', secretEncrypted: target.t.deps.secrets.encrypt('whsec_fuzz_0000'), secretHint: '…0000' } });
    const mapping = await target.t.prisma.paymentPriceMapping.create({ data: { tenantId, connectionId: integration.id, priceId: 'price_fuzz', planId: plan.id } });
    const offlineLicense = await seedArmoredSamples(target.t, target.auth.token, target.admin.user.tenantId, target.product.id);
    const release = await target.t.prisma.release.create({ data: { tenantId, productId: target.product.id, version: '1.0.0', versionOrder: versionOrder('1.0.0'), notes: 'Fuzzed release' } });
    ids = [target.product.id, target.license.id, other.id, plan.id, offlineLicense, integration.id, mapping.id, release.id];
  });
  const middle = Math.ceil(operations.length / 2);
  const mine = half === 0 ? operations.slice(0, middle) : operations.slice(middle);
  describe(`GraphQL mutations under hostile variables (${GRAPHQL_RUNS} per operation, half ${half + 1} of 2)`, () => {
    for (const op of mine) it(op.name, () => fuzzOperation(fuzz.t, fuzz.auth, op, () => ids), FUZZ_TIMEOUT_MS);
  });
}
