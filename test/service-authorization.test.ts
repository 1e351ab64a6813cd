import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyticsWindow, dashboardStats } from '../server/src/services/analytics.js';
import { listActivity } from '../server/src/services/audit/activity.js';
import { exportAuditLog } from '../server/src/services/audit/checkpoints.js';
import { activityLogIntegrity, checkpointAllChains, verifyActivityLog, verifyAllChains } from '../server/src/services/audit/verification.js';
import { NO_META, systemActor, type ServiceActor } from '../server/src/services/auth/actor.js';
import { createApiKey, listApiKeys, revokeApiKey } from '../server/src/services/auth/api-keys.js';
import { disableMfa, startMfaEnrollment } from '../server/src/services/auth/mfa.js';
import { reactivateUserByEmail, resetMemberMfa, resetMfa, resetPassword, sendMemberResetLink, unlockAccount, unlockMember } from '../server/src/services/auth/recovery.js';
import { logout } from '../server/src/services/auth/sessions.js';
import { getCompany, updateCompanySettings } from '../server/src/services/company.js';
import type { ServiceContext } from '../server/src/services/context.js';
import { endFloatingSession, floatingPoolConsumption, listActiveFloatingSessions } from '../server/src/services/floating/management.js';
import { inviteUser, listInvitations, revokeInvitation } from '../server/src/services/invitations.js';
import {
  createLicense,
  deactivateActivation,
  findByKey,
  getLicense,
  listLicenseActivations,
  listLicenses,
  revokeLicense,
  showLicenseByKey,
  updateLicense,
} from '../server/src/services/licenses/management.js';
import { reinstateLicense, renewLicense, suspendLicense, transferLicense } from '../server/src/services/licenses/lifecycle.js';
import { reissueLicenseKey } from '../server/src/services/licenses/reissue.js';
import { countBulkSelection, getBulkJob, startBulkLicenseAction } from '../server/src/services/licenses/bulk.js';
import { checkLicenseImport, getLicenseImportJob, licenseImportFailures, startLicenseImport, takeLicenseImportKeys } from '../server/src/services/licenses/import.js';
import { exportLicensesCsv } from '../server/src/services/licenses/export.js';
import { removeMeterQuota, setMeterQuota, usageTotals } from '../server/src/services/metering/management.js';
import { getOutboxBodies, listOutbox } from '../server/src/services/notifications/outbox.js';
import { runJobNow, type JobSchedule } from '../server/src/services/notifications/schedules.js';
import { sendTestEmail } from '../server/src/services/notifications/test-email.js';
import {
  createRelease,
  deleteArtifact,
  deleteRelease,
  getRelease,
  listProductReleases,
  publishRelease,
  updateRelease,
  uploadArtifact,
  yankRelease,
  type ReleaseStaffContext,
} from '../server/src/services/releases/releases.js';
import { artifactStoreFor } from '../server/src/services/releases/store.js';
import { createProduct, deleteProduct, getProduct, getProductByName, listProducts, updateProduct } from '../server/src/services/products.js';
import {
  changePassword,
  createUser,
  deactivateUser,
  getNotificationPreferences,
  getOwnUser,
  listUsers,
  reactivateUser,
  updateNotificationPreferences,
  updateUser,
} from '../server/src/services/users.js';
import { createTenant, getTenantByPrefix } from '../server/src/services/tenants.js';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  listWebhookDeliveries,
  listWebhookEndpoints,
  resendWebhookDelivery,
  rotateWebhookSecret,
  sendTestWebhookEvent,
  updateWebhookEndpoint,
} from '../server/src/services/webhooks/endpoints.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';

// Services authorize their caller themselves (docs/architecture.md): a GraphQL scope is only a second line. Each
// management service is called directly, with no transport in front, as a read-only user, a read-only API key,
// an admin of another tenant, a system actor without a tenant and nobody, and must refuse — changing nothing.

let t: TestApp;
const clock = new TestClock();
type Fixture = Record<'tenantId' | 'otherTenantId' | 'productId' | 'licenseId' | 'licenseKey' | 'activationId' | 'sessionId' | 'apiKeyId' | 'invitationId' | 'userId' | 'leaverId' | 'emailId' | 'webhookEndpointId' | 'webhookDeliveryId' | 'draftReleaseId' | 'publishedReleaseId' | 'artifactId', string>;
const f = {} as Fixture;
let admin: ServiceActor;
let readOnlyUser: ServiceActor;
const jobRuns: string[] = [];
const sent: unknown[] = [];

const as = (actor: ServiceActor | null): ServiceContext => ({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor, meta: NO_META });
const userActor = (user: { id: string; tenantId: string; email: string }, role: 'CompanyAdmin' | 'ReadOnly'): ServiceActor =>
  ({ kind: 'user', userId: user.id, tenantId: user.tenantId, role, email: user.email, sessionFamilyId: null });
const keyActor = (tenantId: string, role: 'CompanyAdmin' | 'ReadOnly'): ServiceActor => ({ kind: 'apiKey', apiKeyId: randomUUID(), tenantId, role, label: 'api-key ci (kf_…abcd)' });
const jobs = {
  schedules: async (): Promise<JobSchedule[]> => [{ name: 'weekly-digest', description: '', schedule: '0 8 * * 1', timezone: 'UTC', lastRunAt: null, lastFinishedAt: null, nextRunAt: null, lastFailedAt: null, lastFailReason: null, running: false }],
  runNow: async (name: string) => void jobRuns.push(name),
};
/** The release staff context (artifact store, signer, limits) around a caller, as the upload route builds it. */
const staff = (ctx: ServiceContext): ReleaseStaffContext => ({ ...ctx, store: artifactStoreFor(t.deps.config), signer: t.deps.signer, issuer: t.deps.config.publicUrl, maxUploadBytes: t.deps.config.releases.maxUploadBytes });
const artifactBody = () => Readable.from([Buffer.from('MZ sneaky')]);
const transport = { name: 'development' as const, send: async (messages: unknown[]) => (sent.push(...messages), []), findDelivered: async () => null };

beforeAll(async () => {
  t = await startTestApp({ clock });
  const tenant = await t.seedTenant();
  f.tenantId = tenant.id;
  f.otherTenantId = (await t.seedTenant({ name: 'Globex', keyPrefix: 'GLOBEX' })).id;
  const owner = await t.seedUser(tenant.id, { email: 'admin@acme.test' });
  // The admin's session re-authenticated (services/auth/reauth.ts): account-security actions are open to it.
  const family = randomUUID();
  await t.prisma.sessionReauthentication.create({ data: { familyId: family, userId: owner.id, reauthenticatedAt: clock.now() } });
  admin = { ...(userActor(owner, 'CompanyAdmin') as Extract<ServiceActor, { kind: 'user' }>), sessionFamilyId: family };
  readOnlyUser = userActor(await t.seedUser(tenant.id, { email: 'viewer@acme.test', role: 'ReadOnly' }), 'ReadOnly');
  f.userId = (await t.seedUser(tenant.id, { email: 'member@acme.test' })).id;
  f.leaverId = (await t.seedUser(tenant.id, { email: 'leaver@acme.test' })).id;
  await deactivateUser(as(admin), f.leaverId);
  f.productId = (await createProduct(as(admin), { name: 'Studio' })).id;
  const { key, license } = await createLicense(as(admin), { productId: f.productId, maxActivations: 3, floatingSeats: 2 });
  [f.licenseId, f.licenseKey] = [license.id, key];
  expect((await t.activate({ licenseKey: key, deviceId: 'device-1' })).json.isValid).toBe(true);
  f.activationId = (await t.prisma.activation.findFirstOrThrow({ where: { licenseId: license.id } })).id;
  f.sessionId = (await t.post('/api/v1/float/checkout', { licenseKey: key })).json.sessionId;
  await setMeterQuota(as(admin), license.id, { event: 'api.calls', period: 'day', limit: 5 });
  f.apiKeyId = (await createApiKey(as(admin), { name: 'ci', role: 'CompanyAdmin' })).apiKey.id;
  f.invitationId = (await inviteUser({ ...as(admin), publicUrl: 'http://localhost', transport: null }, { email: 'new@acme.test', role: 'ReadOnly' })).id;
  f.emailId = (await t.prisma.emailOutbox.findFirstOrThrow({ where: { tenantId: tenant.id } })).id;
  f.webhookEndpointId = (await createWebhookEndpoint(as(admin), { url: 'https://hooks.acme.test/keyforge' }, { allowPrivate: false })).endpoint.id;
  f.webhookDeliveryId = (await sendTestWebhookEvent(as(admin), f.webhookEndpointId, { allowPrivate: false, publicUrl: 'http://keyforge.test' })).id;
  // A draft with an artifact, and a published release (for yank).
  f.draftReleaseId = (await createRelease(as(admin), { productId: f.productId, version: '1.0.0' })).id;
  f.artifactId = (await uploadArtifact(staff(as(admin)), f.draftReleaseId, { filename: 'studio.exe', platform: 'win32', arch: 'x64' }, Readable.from([Buffer.from('MZ studio')]))).id;
  f.publishedReleaseId = (await createRelease(as(admin), { productId: f.productId, version: '0.9.0' })).id;
  await uploadArtifact(staff(as(admin)), f.publishedReleaseId, { filename: 'studio-0.9.exe', platform: 'win32', arch: 'x64' }, Readable.from([Buffer.from('MZ old')]));
  await publishRelease(as(admin), f.publishedReleaseId);
  expect(Object.values(f).every(Boolean)).toBe(true);
});
afterAll(async () => {
  await t?.close();
});

/** Every row a refused call could have touched, and the activity log. */
const snapshot = async () => {
  const p = t.prisma;
  return JSON.stringify(
    await Promise.all([
      p.product.findMany({ orderBy: { id: 'asc' } }),
      p.license.findMany({ orderBy: { id: 'asc' } }),
      p.retiredLicenseKey.count(),
      p.activation.findMany({ orderBy: { id: 'asc' } }),
      p.user.findMany({ orderBy: { id: 'asc' } }),
      p.apiKey.findMany({ orderBy: { id: 'asc' } }),
      p.invitation.findMany({ orderBy: { id: 'asc' } }),
      p.floatingSession.findMany({ orderBy: { id: 'asc' } }),
      p.meterQuota.findMany({ orderBy: [{ licenseId: 'asc' }, { event: 'asc' }] }),
      p.tenant.findMany({ orderBy: { id: 'asc' } }),
      p.emailOutbox.count(),
      p.auditLogEntry.count(),
      p.webhookEndpoint.findMany({ orderBy: { id: 'asc' } }),
      p.webhookDelivery.findMany({ orderBy: { id: 'asc' } }),
      p.bulkJob.count(),
      p.webhookEvent.count(),
      p.release.findMany({ orderBy: { id: 'asc' } }),
      p.releaseArtifact.findMany({ orderBy: { id: 'asc' }, select: { id: true, releaseId: true, filename: true, storageKey: true, downloadCount: true } }),
    ]),
  );
};

/** Calls that change tenant data: CompanyAdmin only. */
const mutations: [string, (ctx: ServiceContext) => Promise<unknown>][] = [
  ['createProduct', (ctx) => createProduct(ctx, { name: 'Sneaky' })],
  ['updateProduct', (ctx) => updateProduct(ctx, f.productId, { name: 'Renamed' })],
  ['deleteProduct', (ctx) => deleteProduct(ctx, f.productId)],
  ['createLicense', (ctx) => createLicense(ctx, { productId: f.productId, maxActivations: 1 })],
  ['updateLicense', (ctx) => updateLicense(ctx, f.licenseId, { maxActivations: 99 })],
  ['revokeLicense', (ctx) => revokeLicense(ctx, f.licenseId)],
  ['suspendLicense', (ctx) => suspendLicense(ctx, { id: f.licenseId })],
  ['reinstateLicense', (ctx) => reinstateLicense(ctx, { id: f.licenseId })],
  ['renewLicense', (ctx) => renewLicense(ctx, { id: f.licenseId, expiresAt: new Date(clock.now().getTime() + 400 * 86_400_000) })],
  ['transferLicense', (ctx) => transferLicense(ctx, { id: f.licenseId, customerEmail: 'thief@evil.test' })],
  ['reissueLicenseKey', (ctx) => reissueLicenseKey(ctx, { id: f.licenseId, overlapHours: 24 })],
  ['startBulkLicenseAction', (ctx) => startBulkLicenseAction(ctx, { action: 'revoke', licenseIds: [f.licenseId] })],
  ['checkLicenseImport', (ctx) => checkLicenseImport(ctx, 'product,seats\nStudio,1\n')],
  ['startLicenseImport', (ctx) => startLicenseImport(ctx, 'product,seats\nStudio,1\n')],
  ['takeLicenseImportKeys', (ctx) => takeLicenseImportKeys(ctx, randomUUID())],
  ['deactivateActivation', (ctx) => deactivateActivation(ctx, f.activationId)],
  ['createUser', (ctx) => createUser(ctx, { email: 'sneaky@acme.test', password: 'correct horse battery', role: 'CompanyAdmin' })],
  ['updateUser', (ctx) => updateUser(ctx, f.userId, { role: 'ReadOnly' })],
  ['deactivateUser', (ctx) => deactivateUser(ctx, f.userId)],
  ['unlockMember', (ctx) => unlockMember(ctx, f.userId)],
  ['resetMemberMfa', (ctx) => resetMemberMfa(ctx, f.userId)],
  ['sendMemberResetLink', (ctx) => sendMemberResetLink({ ...ctx, publicUrl: 'http://licensing.test', transport: null }, f.userId)],
  ['reactivateUser', (ctx) => reactivateUser(ctx, f.leaverId)],
  ['createApiKey', (ctx) => createApiKey(ctx, { name: 'sneaky', role: 'CompanyAdmin' })],
  ['revokeApiKey', (ctx) => revokeApiKey(ctx, f.apiKeyId)],
  ['inviteUser', (ctx) => inviteUser({ ...ctx, publicUrl: 'http://localhost', transport: null }, { email: 'sneaky@acme.test', role: 'CompanyAdmin' })],
  ['revokeInvitation', (ctx) => revokeInvitation(ctx, f.invitationId)],
  ['endFloatingSession', (ctx) => endFloatingSession(ctx, f.sessionId)],
  ['setMeterQuota', (ctx) => setMeterQuota(ctx, f.licenseId, { event: 'api.calls', period: 'day', limit: 1000 })],
  ['removeMeterQuota', (ctx) => removeMeterQuota(ctx, f.licenseId, 'api.calls')],
  ['updateCompanySettings', (ctx) => updateCompanySettings(ctx, { name: 'Hijacked' })],
  ['runJobNow', (ctx) => runJobNow({ jobs, actor: ctx.actor }, 'weekly-digest')],
  ['sendTestEmail', (ctx) => sendTestEmail({ ...ctx, publicUrl: 'http://localhost', transport })],
  ['listOutbox', (ctx) => listOutbox(ctx, {})], // email bodies name customers: admins only
  ['getOutboxBodies', (ctx) => getOutboxBodies(ctx, f.emailId)],
  ['createWebhookEndpoint', (ctx) => createWebhookEndpoint(ctx, { url: 'https://sneaky.test/hook' }, { allowPrivate: false })],
  ['updateWebhookEndpoint', (ctx) => updateWebhookEndpoint(ctx, f.webhookEndpointId, { url: 'https://sneaky.test/hook' }, { allowPrivate: false })],
  ['deleteWebhookEndpoint', (ctx) => deleteWebhookEndpoint(ctx, f.webhookEndpointId)],
  ['rotateWebhookSecret', (ctx) => rotateWebhookSecret(ctx, f.webhookEndpointId)],
  ['sendTestWebhookEvent', (ctx) => sendTestWebhookEvent(ctx, f.webhookEndpointId, { allowPrivate: false, publicUrl: 'http://keyforge.test' })],
  ['resendWebhookDelivery', (ctx) => resendWebhookDelivery(ctx, f.webhookDeliveryId)],
  ['listWebhookEndpoints', (ctx) => listWebhookEndpoints(ctx, {})], // integration details: admins only
  ['listWebhookDeliveries', (ctx) => listWebhookDeliveries(ctx, f.webhookEndpointId, {})],
  ['createRelease', (ctx) => createRelease(ctx, { productId: f.productId, version: '6.6.6' })],
  ['updateRelease', (ctx) => updateRelease(ctx, f.draftReleaseId, { notes: 'sneaky' })],
  ['publishRelease', (ctx) => publishRelease(ctx, f.draftReleaseId)],
  ['yankRelease', (ctx) => yankRelease(ctx, f.publishedReleaseId)],
  ['deleteRelease', (ctx) => deleteRelease(staff(ctx), f.draftReleaseId)],
  ['deleteArtifact', (ctx) => deleteArtifact(staff(ctx), f.artifactId)],
  ['uploadArtifact', (ctx) => uploadArtifact(staff(ctx), f.draftReleaseId, { filename: 'sneaky.exe', platform: 'win32', arch: 'x64' }, artifactBody())],
];

/** Calls that read tenant data: any member of the tenant. */
const reads: [string, (ctx: ServiceContext) => Promise<unknown>][] = [
  ['listProducts', (ctx) => listProducts(ctx)],
  ['getProduct', (ctx) => getProduct(ctx, f.productId)],
  ['getProductByName', (ctx) => getProductByName(ctx, 'Studio')],
  ['listLicenses', (ctx) => listLicenses(ctx, {})],
  ['getLicense', (ctx) => getLicense(ctx, f.licenseId)],
  ['listLicenseActivations', (ctx) => listLicenseActivations(ctx, [{ id: f.licenseId, tenantId: f.tenantId }])],
  ['exportLicensesCsv', async (ctx) => (await exportLicensesCsv(ctx).next()).value],
  ['countBulkSelection', (ctx) => countBulkSelection(ctx, { licenseIds: [f.licenseId] })],
  ['getBulkJob', (ctx) => getBulkJob(ctx, randomUUID())],
  ['getLicenseImportJob', (ctx) => getLicenseImportJob(ctx, randomUUID())],
  ['licenseImportFailures', (ctx) => licenseImportFailures(ctx, { id: randomUUID(), tenantId: f.tenantId })],
  ['listUsers', (ctx) => listUsers(ctx)],
  ['listApiKeys', (ctx) => listApiKeys(ctx)],
  ['listInvitations', (ctx) => listInvitations(ctx)],
  ['getCompany', (ctx) => getCompany(ctx)],
  ['listActiveFloatingSessions', (ctx) => listActiveFloatingSessions(ctx, f.licenseId)],
  ['floatingPoolConsumption', (ctx) => floatingPoolConsumption(ctx, { from: new Date(clock.now().getTime() - 3_600_000), to: clock.now(), bucket: 'hour' })],
  ['usageTotals', (ctx) => usageTotals(ctx, f.licenseId, { period: 'day' })],
  ['dashboardStats', (ctx) => dashboardStats(ctx)],
  ['analyticsWindow', async (ctx) => analyticsWindow(ctx, 'LAST_7_DAYS')],
  ['listActivity', (ctx) => listActivity(ctx, {})],
  ['activityLogIntegrity', (ctx) => activityLogIntegrity(ctx, null)],
  ['listProductReleases', (ctx) => listProductReleases(ctx, f.productId)],
  ['getRelease', (ctx) => getRelease(ctx, f.draftReleaseId)],
  ['verifyActivityLog', (ctx) => verifyActivityLog(ctx, { checkpoints: 'eyJhbGciOiJFZERTQSJ9.eyJraW5kIjoia2V5Zm9yZ2UtYXVkaXQtY2hlY2twb2ludCIsInRpZCI6IngiLCJzZXEiOjF9.c2lnbmF0dXJlc2lnbmF0dXJl' })],
];

/** Operator-wide calls (the CLI): the system actor only, whatever the caller's role. */
const operatorOnly: [string, (ctx: ServiceContext) => Promise<unknown>][] = [
  ['findByKey', (ctx) => findByKey(ctx, f.licenseKey)],
  ['showLicenseByKey', (ctx) => showLicenseByKey(ctx, f.licenseKey)],
  ['resetPassword', (ctx) => resetPassword(ctx, 'member@acme.test', 'a new long password')],
  ['unlockAccount', (ctx) => unlockAccount(ctx, 'member@acme.test')],
  ['resetMfa', (ctx) => resetMfa(ctx, 'member@acme.test')],
  ['reactivateUserByEmail', (ctx) => reactivateUserByEmail(ctx, 'leaver@acme.test')],
  ['createTenant', (ctx) => createTenant(ctx, { name: 'Sneaky', keyPrefix: 'SNEAKY' })],
  ['getTenantByPrefix', (ctx) => getTenantByPrefix(ctx, 'ACME')],
  // Every entry of a tenant's log, and the audit jobs over every tenant: the operator's and the server's own.
  ['exportAuditLog', (ctx) => exportAuditLog(ctx, f.tenantId)],
  ['verifyAllChains', (ctx) => verifyAllChains(ctx)],
  ['checkpointAllChains', (ctx) => checkpointAllChains(ctx, { kid: 'unused', sign: async () => 'unused', signPayload: async () => 'unused' })],
];

/** Self-service calls: a signed-in user acting on themself, never an API key or the system. */
const selfService: [string, (ctx: ServiceContext) => Promise<unknown>][] = [
  ['changePassword', (ctx) => changePassword(ctx, { currentPassword: 'correct horse battery', newPassword: 'another horse battery' })],
  ['getNotificationPreferences', (ctx) => getNotificationPreferences(ctx)],
  ['getOwnUser', (ctx) => getOwnUser(ctx)],
  ['updateNotificationPreferences', (ctx) => updateNotificationPreferences(ctx, { digestEmailEnabled: false })],
  ['startMfaEnrollment', (ctx) => startMfaEnrollment(ctx)],
  ['disableMfa', (ctx) => disableMfa(ctx, { totpCode: '000000' })],
  ['logout', (ctx) => logout(ctx)],
];

async function expectRefused(calls: [string, (ctx: ServiceContext) => Promise<unknown>][], actor: ServiceActor | null, code: string) {
  const before = await snapshot();
  const outcomes: Record<string, unknown> = {};
  for (const [name, call] of calls) outcomes[name] = await call(as(actor)).then(() => 'allowed', (error: { code?: string }) => error.code ?? String(error));
  expect(outcomes).toEqual(Object.fromEntries(calls.map(([name]) => [name, code])));
  expect(await snapshot()).toBe(before);
  expect(jobRuns).toEqual([]);
  expect(sent).toEqual([]);
}

describe('services authorize their caller', () => {
  it('a read-only user and a read-only API key are refused every change (Forbidden), changing nothing', async () => {
    await expectRefused(mutations, readOnlyUser, 'Forbidden');
    await expectRefused(mutations, keyActor(f.tenantId, 'ReadOnly'), 'Forbidden');
  });

  it('a read-only member reads its own tenant (so the refusals above are about the role, not the call)', async () => {
    for (const [name, read] of reads) await expect(read(as(readOnlyUser)), name).resolves.toBeDefined();
  });

  it("an admin of another tenant finds none of this tenant's records (NotFound), changing nothing", async () => {
    const outsider = keyActor(f.otherTenantId, 'CompanyAdmin');
    const byId = ['updateProduct', 'deleteProduct', 'createLicense', 'updateLicense', 'revokeLicense', 'suspendLicense', 'reinstateLicense', 'renewLicense', 'transferLicense', 'reissueLicenseKey', 'deactivateActivation', 'updateUser', 'deactivateUser', 'reactivateUser', 'unlockMember', 'resetMemberMfa', 'sendMemberResetLink', 'revokeApiKey', 'revokeInvitation', 'endFloatingSession', 'setMeterQuota', 'removeMeterQuota',
      'updateWebhookEndpoint', 'deleteWebhookEndpoint', 'rotateWebhookSecret', 'sendTestWebhookEvent', 'resendWebhookDelivery', 'listWebhookDeliveries',
      'createRelease', 'updateRelease', 'publishRelease', 'yankRelease', 'deleteRelease', 'deleteArtifact', 'uploadArtifact'];
    await expectRefused(mutations.filter(([name]) => byId.includes(name)), outsider, 'NotFound');
    const readsById = ['getProduct', 'getProductByName', 'getLicense', 'listLicenseActivations', 'listActiveFloatingSessions', 'usageTotals', 'listProductReleases', 'getRelease'];
    await expectRefused(reads.filter(([name]) => readsById.includes(name)), outsider, 'NotFound');
    expect((await getOutboxBodies(as(outsider), f.emailId))).toBeNull();
  });

  it('a system actor without a tenant is refused tenant data (Forbidden); nobody is Unauthorized', async () => {
    await expectRefused([...mutations.filter(([name]) => name !== 'listOutbox'), ...reads], systemActor(null), 'Forbidden');
    await expectRefused([...mutations, ...reads], null, 'Unauthorized');
  });

  it('operator-wide calls are for the system actor only, even against an admin', async () => {
    await expectRefused(operatorOnly, admin, 'Forbidden');
    await expectRefused(operatorOnly, keyActor(f.tenantId, 'CompanyAdmin'), 'Forbidden');
    await expect(findByKey(as(systemActor(null, 'system (cli)')), f.licenseKey)).resolves.toMatchObject({ id: f.licenseId });
    await expectRefused(operatorOnly, readOnlyUser, 'Forbidden');
    await expectRefused(operatorOnly, null, 'Forbidden');
    // The system actor is let through (so the refusals are about the caller).
    await expect(exportAuditLog(as(systemActor(null, 'system (cli)')), f.tenantId)).resolves.toMatchObject({ tenantId: f.tenantId, entries: expect.any(Array) });
    await expect(verifyAllChains(as(systemActor(null, 'system (audit-verify)')))).resolves.toMatchObject({ broken: [] });
    // A member with a chosen password is the operator's tool too (companies invite): refused to an admin and an admin key.
    const createUserCall = mutations.filter(([name]) => name === 'createUser');
    await expectRefused(createUserCall, admin, 'Forbidden');
    await expectRefused(createUserCall, keyActor(f.tenantId, 'CompanyAdmin'), 'Forbidden');
  });

  it('self-service calls need a signed-in user: an admin API key or the system is refused', async () => {
    await expectRefused(selfService, keyActor(f.tenantId, 'CompanyAdmin'), 'Forbidden');
    await expectRefused(selfService, systemActor(f.tenantId), 'Forbidden');
    await expectRefused([['sendTestEmail', mutations.find(([name]) => name === 'sendTestEmail')![1]]], keyActor(f.tenantId, 'CompanyAdmin'), 'Forbidden');
  });
});
