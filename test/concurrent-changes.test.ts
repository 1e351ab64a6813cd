// The same change sent several times at once (a double click, two admins, a retrying script), over real HTTP on real
// PostgreSQL. A delete: one request deletes and writes one activity-log entry, every other answers NotFound, never an
// InternalError; a change racing a delete answers NotFound too (every service finds its row before writing it, so a
// row gone at write time is a concurrent delete, which the error mapping, toAppError, answers as NotFound). A state
// change or an edit (a license's attributes or owner, suspend, reinstate, revoke, free a device, revoke an API key,
// edit or deactivate a member, edit a product or a plan, publish, yank, resend a webhook delivery, set or remove a
// quota, end a floating session, confirm two-factor enrollment, unlock a member or reset their MFA): it happens once,
// with one activity-log entry and one webhook event, and no request answers an InternalError.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentTotp } from '../server/src/services/auth/mfa.js';
import { createWebhookEndpoint } from '../server/src/services/webhooks/endpoints.js';
import { WEBHOOK_EVENT_TYPES } from '../server/src/services/webhooks/events.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { adminContext, PASSWORD, seedTwoTenants, type SeededTenant } from './support/tenants.js';

let t: TestApp;
let A: SeededTenant;
const AT_ONCE = 6;
/** Rounds per kind: the race needs the requests' existence checks to overlap, which most rounds do. */
const ROUNDS = 4;

type Answer = { errors?: { extensions?: { code?: string } }[]; data?: Record<string, unknown> | null };
const codes = (answers: Answer[]) => answers.map((answer) => answer.errors?.[0]?.extensions?.code ?? 'ok');
const sendMutation = (mutation: string, input: Record<string, unknown>): Promise<Answer> =>
  t.gql(`mutation($input: ${mutation.charAt(0).toUpperCase()}${mutation.slice(1)}Input!) { ${mutation}(input: $input) { __typename } }`, { input }, { token: A.admin.token });
const auditCount = (entityId: string, action: string) => t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId, entityId, action } });

/** Sends AT_ONCE identical deletes together; exactly one succeeds, the rest are NotFound, one activity entry. */
async function deleteAtOnce(mutation: string, id: string, audit: { entityId: string; action: string }) {
  const answers = await Promise.all(Array.from({ length: AT_ONCE }, () => sendMutation(mutation, { id })));
  const seen = codes(answers);
  expect(seen.filter((code) => code === 'ok'), `${mutation}: ${seen.join(', ')}`).toHaveLength(1);
  expect(seen.filter((code) => code !== 'ok'), `${mutation}: ${seen.join(', ')}`).toEqual(Array(AT_ONCE - 1).fill('NotFound'));
  expect(await auditCount(audit.entityId, audit.action)).toBe(1);
}

const data = async (query: string, input: Record<string, unknown>) => {
  const answer = await t.gqlData(query, { input }, { token: A.admin.token });
  return Object.values(answer)[0] as Record<string, { id: string }>;
};
const newProduct = async (name: string) => (await data('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id } } }', { name })).product.id;
const newPlan = async (name: string) => (await data('mutation($input: CreatePlanInput!) { createPlan(input: $input) { plan { id } } }', { productId: A.product!.id, name, maxActivations: 1 })).plan.id;
const newIntegration = async () => (await data('mutation($input: CreatePaymentIntegrationInput!) { createPaymentIntegration(input: $input) { paymentIntegration { id } } }', { provider: 'STRIPE', signingSecret: 'whsec_concurrent_delete_0001' })).paymentIntegration.id;
const newDraft = async (version: string) => (await data('mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { id } } }', { productId: A.product!.id, version })).release.id;
async function upload(releaseId: string, filename: string) {
  const response = await fetch(`${t.baseUrl}/api/releases/${releaseId}/artifacts?${new URLSearchParams({ filename, platform: 'linux', arch: 'x64' })}`, {
    method: 'PUT',
    body: new Uint8Array(Buffer.from(`ELF ${filename}`)),
    headers: { 'x-api-key': A.adminKey.key, 'content-type': 'application/octet-stream' },
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

beforeAll(async () => {
  t = await startTestApp();
  ({ A } = await seedTwoTenants(t));
  // Events are stored only for a subscriber: one subscribed to everything (no delivery job runs in the test app).
  await createWebhookEndpoint(adminContext(t, A), { url: 'https://hooks.acme.test/everything', eventTypes: [...WEBHOOK_EVENT_TYPES] }, { allowPrivate: true });
});
afterAll(() => t?.close());

describe('one thing deleted several times at once', () => {
  it('products and plans', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const product = await newProduct(`Doomed ${round}`);
      await deleteAtOnce('deleteProduct', product, { entityId: product, action: 'DeleteProduct' });
      const plan = await newPlan(`Doomed plan ${round}`);
      await deleteAtOnce('deletePlan', plan, { entityId: plan, action: 'DeletePlan' });
    }
  });

  it('payment integrations and their price mappings', async () => {
    const planId = await newPlan('Sold');
    for (let round = 0; round < ROUNDS; round++) {
      const integration = await newIntegration();
      const mapping = (await data('mutation($input: MapPaymentPriceInput!) { mapPaymentPrice(input: $input) { paymentPriceMapping { id } } }', { integrationId: integration, priceId: `price_${round}`, planId })).paymentPriceMapping.id;
      const unmapped = codes(await Promise.all(Array.from({ length: AT_ONCE }, () => sendMutation('unmapPaymentPrice', { id: mapping }))));
      expect(unmapped.sort()).toEqual(['NotFound', 'NotFound', 'NotFound', 'NotFound', 'NotFound', 'ok']);
      expect(await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId, entityId: integration, action: 'UnmapPaymentPrice' } })).toBe(1);
      await deleteAtOnce('deletePaymentIntegration', integration, { entityId: integration, action: 'DeletePaymentConnection' });
    }
  });

  it('draft releases and their artifacts', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const release = await newDraft(`9.${round}.0`);
      const artifact = await upload(release, `app-${round}.tar.gz`);
      await upload(release, `app-${round}.zip`);
      const removed = codes(await Promise.all(Array.from({ length: AT_ONCE }, () => sendMutation('deleteArtifact', { id: artifact }))));
      expect(removed.sort()).toEqual(['NotFound', 'NotFound', 'NotFound', 'NotFound', 'NotFound', 'ok']);
      expect(await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId, entityId: release, action: 'DeleteArtifact' } })).toBe(1);
      await deleteAtOnce('deleteRelease', release, { entityId: release, action: 'DeleteRelease' });
      expect(await t.prisma.releaseArtifact.count({ where: { releaseId: release } })).toBe(0);
    }
  });

  it('webhook endpoints', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { endpoint } = await createWebhookEndpoint(adminContext(t, A), { url: `https://hooks.acme.test/${round}`, eventTypes: ['license.created'] }, { allowPrivate: true });
      await deleteAtOnce('deleteWebhookEndpoint', endpoint.id, { entityId: endpoint.id, action: 'DeleteWebhookEndpoint' });
    }
  });

  // Two deadlocks this once met (PostgreSQL aborted a transaction: InternalError): a license created (its row's
  // triggers update the company's tallies) then waiting for the activity log's lock, held by an edit waiting for those
  // tallies; and an endpoint's delete waiting for that lock while an edit holding it waited to reference the endpoint.
  it('licenses created, edited and activated while a webhook endpoint subscribed to their events is deleted: every write succeeds', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { endpoint } = await createWebhookEndpoint(adminContext(t, A), { url: `https://hooks.acme.test/leaving-${round}`, eventTypes: ['activation.created', 'license.updated', 'license.created'] }, { allowPrivate: true });
      const { createLicense } = await t.gqlData('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key license { id } } }', { input: { productId: A.product!.id, maxActivations: 50 } }, { token: A.admin.token });
      const nonces = await Promise.all(Array.from({ length: 12 }, () => t.nonce()));
      const [activations, edits, others] = await Promise.all([
        Promise.all(nonces.map((nonce, i) => t.post('/api/v1/activate', { licenseKey: createLicense.key, deviceId: `busy-${round}-${i}`, nonce }))),
        Promise.all(Array.from({ length: AT_ONCE }, (_, i) => sendMutation('updateLicense', { id: createLicense.license.id, maxActivations: 50 + i + 1 }))),
        Promise.all([sendMutation('deleteWebhookEndpoint', { id: endpoint.id }), ...Array.from({ length: 4 }, () => sendMutation('createLicense', { productId: A.product!.id, maxActivations: 1 }))]),
      ]);
      expect(activations.map((answer) => `${answer.status} ${answer.json?.errorCode ?? answer.json?.isValid}`)).toEqual(Array(12).fill('200 true'));
      expect(codes([...edits, ...others])).toEqual(Array(AT_ONCE + 5).fill('ok'));
      expect(await t.prisma.activation.count({ where: { licenseId: createLicense.license.id, deactivatedAt: null } })).toBe(12);
      // Gone with every delivery it had (an event written meanwhile either reached it before the delete, which then
      // removed that delivery, or skipped it).
      expect(await t.prisma.webhookEndpoint.count({ where: { id: endpoint.id } })).toBe(0);
      expect(await t.prisma.webhookDelivery.count({ where: { endpointId: endpoint.id } })).toBe(0);
    }
  });

  it('a change racing a delete: the change lands first or answers NotFound, never an InternalError', async () => {
    const answers: string[] = [];
    for (let round = 0; round < ROUNDS * 2; round++) {
      const integration = await newIntegration();
      const [deleted, ...renamed] = await Promise.all([
        sendMutation('deletePaymentIntegration', { id: integration }),
        ...Array.from({ length: AT_ONCE - 1 }, (_, i) => sendMutation('updatePaymentIntegration', { id: integration, name: `Renamed ${i}` })),
      ]);
      expect(codes([deleted])).toEqual(['ok']);
      answers.push(...codes(renamed));
      expect(await t.prisma.paymentConnection.count({ where: { id: integration } })).toBe(0);
    }
    expect(answers.filter((code) => code !== 'ok' && code !== 'NotFound')).toEqual([]);
  });
});

/** Sends AT_ONCE identical changes together: none is an InternalError; one activity entry, and `event` emitted once. */
async function changeAtOnce(mutation: string, id: string, audit: { entityId: string; action: string }, event?: string, fields: Record<string, unknown> = {}) {
  const seen = codes(await Promise.all(Array.from({ length: AT_ONCE }, () => sendMutation(mutation, { id, ...fields }))));
  expect(seen.filter((code) => code === 'InternalError'), `${mutation}: ${seen.join(', ')}`).toEqual([]);
  expect(seen, `${mutation}: ${seen.join(', ')}`).toContain('ok');
  expect(await auditCount(audit.entityId, audit.action), mutation).toBe(1);
  if (event) expect(await t.prisma.webhookEvent.count({ where: { tenantId: A.tenantId, type: event, body: { contains: id } } }), mutation).toBe(1);
}

describe('one state change sent several times at once', () => {
  it('licenses: suspend, reinstate, revoke; a device freed', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { createLicense } = await t.gqlData('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key license { id } } }', { input: { productId: A.product!.id, maxActivations: 2 } }, { token: A.admin.token });
      const license = createLicense.license.id as string;
      const activated = await t.activate({ licenseKey: createLicense.key, deviceId: `device-${round}` });
      expect(activated.status, activated.text).toBe(200);
      const activation = (await t.prisma.activation.findFirstOrThrow({ where: { licenseId: license } })).id;
      await changeAtOnce('deactivateActivation', activation, { entityId: activation, action: 'DeactivateActivation' }, 'activation.deactivated');
      await changeAtOnce('updateLicense', license, { entityId: license, action: 'UpdateLicense' }, 'license.updated', { maxActivations: 5, features: ['export'] });
      await changeAtOnce('transferLicense', license, { entityId: license, action: 'TransferLicense' }, 'license.transferred', { customerEmail: `new-owner-${round}@example.com` });
      await changeAtOnce('suspendLicense', license, { entityId: license, action: 'SuspendLicense' }, 'license.suspended');
      await changeAtOnce('reinstateLicense', license, { entityId: license, action: 'ReinstateLicense' }, 'license.reinstated');
      await changeAtOnce('revokeLicense', license, { entityId: license, action: 'RevokeLicense' }, 'license.revoked');
    }
  });

  it('two-factor enrollment confirmed several times at once: enabled once, and the backup codes shown are the ones stored', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const member = await t.seedUser(A.tenantId, { email: `enrolling-${round}@acme.test`, password: PASSWORD, role: 'CompanyAdmin' });
      const { token } = await t.login(member.email, PASSWORD);
      const { startMfaEnrollment } = await t.gqlData('mutation { startMfaEnrollment { secret } }', {}, { token });
      const code = currentTotp(startMfaEnrollment.secret, t.clock.now());
      const answers = await Promise.all(Array.from({ length: AT_ONCE }, () => t.gql('mutation($code: String!) { confirmMfaEnrollment(input: { code: $code }) { backupCodes } }', { code }, { token })));
      const seen = codes(answers);
      expect(seen.filter((answer) => answer === 'ok'), seen.join(', ')).toHaveLength(1);
      expect(seen.filter((answer) => answer !== 'ok' && answer !== 'Conflict'), seen.join(', ')).toEqual([]);
      expect(await auditCount(member.id, 'EnableMfa')).toBe(1);
      // The winner's codes are the stored ones: one of them turns MFA off again.
      const shown = answers.find((answer) => !answer.errors)!.data!.confirmMfaEnrollment as { backupCodes: string[] };
      expect(codes([await t.gql('mutation($code: String!) { disableMfa(input: { backupCode: $code }) { __typename } }', { code: shown.backupCodes[0] }, { token })])).toEqual(['ok']);
    }
  });

  it("a member's sign-in lock lifted and MFA reset by an admin, several times at once: each once", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const member = await t.seedUser(A.tenantId, { email: `locked-out-${round}@acme.test`, password: PASSWORD, role: 'ReadOnly' });
      const now = t.clock.now();
      await t.prisma.loginFailure.create({ data: { email: member.email, failedCount: 5, firstFailedAt: now, lockedUntil: new Date(now.getTime() + 15 * 60_000), updatedAt: now } });
      const unlocked = await Promise.all(Array.from({ length: AT_ONCE }, () => t.gql('mutation($id: ID!) { unlockUser(input: { id: $id }) { wasLocked } }', { id: member.id }, { token: A.admin.token })));
      expect(unlocked.map((answer) => answer.errors?.[0]?.extensions?.code ?? (answer.data?.unlockUser as { wasLocked: boolean }).wasLocked).sort()).toEqual([...Array(AT_ONCE - 1).fill(false), true]);
      expect(await auditCount(member.id, 'UnlockAccount')).toBe(1);
      await t.prisma.user.update({ where: { id: member.id }, data: { mfaSecretEncrypted: t.deps.secrets.encrypt('JBSWY3DPEHPK3PXP') } });
      await changeAtOnce('resetUserMfa', member.id, { entityId: member.id, action: 'DisableMfa' });
    }
  });

  it("a license's quotas set and removed; a floating session ended", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { createLicense } = await t.gqlData('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key license { id } } }', { input: { productId: A.product!.id, maxActivations: 1, floatingSeats: 2 } }, { token: A.admin.token });
      const license = createLicense.license.id as string;
      const quota = { licenseId: license, event: 'api.calls', period: 'DAY', limit: 10 + round };
      expect(codes(await Promise.all(Array.from({ length: AT_ONCE }, () => sendMutation('setMeterQuota', quota))))).toEqual(Array(AT_ONCE).fill('ok'));
      expect(await auditCount(license, 'SetMeterQuota')).toBe(1);
      const removed = codes(await Promise.all(Array.from({ length: AT_ONCE }, () => sendMutation('removeMeterQuota', { licenseId: license, event: 'api.calls' }))));
      expect(removed.sort()).toEqual([...Array(AT_ONCE - 1).fill('NotFound'), 'ok']);
      expect(await auditCount(license, 'RemoveMeterQuota')).toBe(1);
      const checkout = await t.post('/api/v1/float/checkout', { licenseKey: createLicense.key, deviceId: `station-${round}` });
      expect(checkout.json.isValid, checkout.text).toBe(true);
      await changeAtOnce('endFloatingSession', checkout.json.sessionId, { entityId: checkout.json.sessionId, action: 'EndFloatingSession' });
    }
  });

  it('API keys revoked, members deactivated; releases published and yanked', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { createApiKey } = await t.gqlData('mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { apiKey { id } } }', { input: { name: `script ${round}`, role: 'READ_ONLY' } }, { token: A.admin.token });
      await changeAtOnce('revokeApiKey', createApiKey.apiKey.id, { entityId: createApiKey.apiKey.id, action: 'RevokeApiKey' }, 'api_key.removed');
      const member = await t.seedUser(A.tenantId, { email: `leaver-${round}@acme.test`, password: PASSWORD, role: 'ReadOnly' });
      await changeAtOnce('updateUser', member.id, { entityId: member.id, action: 'UpdateUser' }, 'user.updated', { name: `Leaver ${round}` });
      // The same edit once more changes nothing: the row is not written (its updatedAt stays), nothing is logged.
      const edited = await t.prisma.user.findUniqueOrThrow({ where: { id: member.id } });
      expect(codes([await sendMutation('updateUser', { id: member.id, name: `Leaver ${round}` })])).toEqual(['ok']);
      expect((await t.prisma.user.findUniqueOrThrow({ where: { id: member.id } })).updatedAt).toEqual(edited.updatedAt);
      expect(await auditCount(member.id, 'UpdateUser')).toBe(1);
      await changeAtOnce('deactivateUser', member.id, { entityId: member.id, action: 'DeactivateUser' }, 'user.removed');
      const product = await newProduct(`Renamed ${round}`);
      await changeAtOnce('updateProduct', product, { entityId: product, action: 'UpdateProduct' }, undefined, { name: `Renamed again ${round}` });
      const plan = await newPlan(`Edited ${round}`);
      await changeAtOnce('updatePlan', plan, { entityId: plan, action: 'UpdatePlan' }, undefined, { maxActivations: 3 });
      const release = await newDraft(`8.${round}.0`);
      await upload(release, `app-${round}.msi`);
      await changeAtOnce('publishRelease', release, { entityId: release, action: 'PublishRelease' }, 'release.published');
      await changeAtOnce('yankRelease', release, { entityId: release, action: 'YankRelease' }, 'release.yanked');
    }
  });

  it('settings: a webhook endpoint, a payment integration, a release, the company', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { endpoint } = await createWebhookEndpoint(adminContext(t, A), { url: `https://hooks.acme.test/settings-${round}`, eventTypes: ['license.created'] }, { allowPrivate: true });
      await changeAtOnce('updateWebhookEndpoint', endpoint.id, { entityId: endpoint.id, action: 'UpdateWebhookEndpoint' }, undefined, { enabled: false });
      const integration = await newIntegration();
      await changeAtOnce('updatePaymentIntegration', integration, { entityId: integration, action: 'UpdatePaymentConnection' }, undefined, { name: `Stripe EU ${round}` });
      const release = await newDraft(`7.${round}.0`);
      await changeAtOnce('updateRelease', release, { entityId: release, action: 'UpdateRelease' }, undefined, { notes: `Fixes ${round}.` });
      // A delivery that failed for good, resent: queued once from the start, logged once.
      const delivery = await t.prisma.webhookDelivery.findFirstOrThrow({ where: { tenantId: A.tenantId, status: 'pending' }, orderBy: { createdAt: 'desc' } });
      await t.prisma.webhookDelivery.update({ where: { id: delivery.id }, data: { status: 'failed', attempts: 8, lastError: 'HTTP 503' } });
      await changeAtOnce('resendWebhookDelivery', delivery.id, { entityId: delivery.id, action: 'ResendWebhookDelivery' });
      expect(await t.prisma.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id } })).toMatchObject({ status: 'pending', attempts: 0 });
      const settings = codes(await Promise.all(Array.from({ length: AT_ONCE }, () => sendMutation('updateCompanySettings', { supportEmail: `help-${round}@acme.test` }))));
      expect(settings).toEqual(Array(AT_ONCE).fill('ok'));
      expect(await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId, action: 'UpdateCompanySettings', details: { path: ['after', 'supportEmail'], equals: `help-${round}@acme.test` } } })).toBe(1);
    }
  });

  it('edits of a product, a plan and a member while licenses of them are sold and the member signs in: every request succeeds', async () => {
    const product = await newProduct('Busy');
    const plan = (await data('mutation($input: CreatePlanInput!) { createPlan(input: $input) { plan { id } } }', { productId: product, name: 'Busy plan', maxActivations: 1 })).plan.id;
    const member = await t.seedUser(A.tenantId, { email: 'busy@acme.test', password: PASSWORD, role: 'ReadOnly' });
    const answers = await Promise.all([
      ...Array.from({ length: AT_ONCE }, (_, i) => sendMutation('updateProduct', { id: product, name: `Busy ${i}` })),
      ...Array.from({ length: AT_ONCE }, (_, i) => sendMutation('updatePlan', { id: plan, maxActivations: i + 2 })),
      ...Array.from({ length: AT_ONCE }, (_, i) => sendMutation('updateUser', { id: member.id, name: `Busy ${i}` })),
      ...Array.from({ length: AT_ONCE * 2 }, () => t.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key } }', { input: { planId: plan } }, { token: A.admin.token })),
      ...Array.from({ length: 2 }, () => t.login(member.email, PASSWORD).then(() => ({}) as Answer)),
    ]);
    expect(codes(answers).filter((code) => code !== 'ok')).toEqual([]);
    expect(await t.prisma.license.count({ where: { planId: plan } })).toBe(AT_ONCE * 2);
    expect(await auditCount(product, 'UpdateProduct')).toBe(AT_ONCE);
  });

  it("the company's portal handle and key prefix changed while products and plans are created: every request succeeds", async () => {
    for (let round = 0; round < ROUNDS * 2; round++) {
      const settings = round % 2 ? { portalHandle: `acme-busy-${round}` } : { keyPrefix: `AC${round}` };
      const answers = await Promise.all([
        sendMutation('updateCompanySettings', settings),
        ...Array.from({ length: AT_ONCE }, (_, i) => sendMutation('createProduct', { name: `Settings race ${round}.${i}` })),
        ...Array.from({ length: AT_ONCE }, (_, i) => sendMutation('createPlan', { productId: A.product!.id, name: `Settings race ${round}.${i}`, maxActivations: 1 })),
      ]);
      expect(codes(answers).filter((code) => code !== 'ok'), `round ${round}`).toEqual([]);
    }
  });
});
