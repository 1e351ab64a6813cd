// Different changes of one company at the same time, as a busy vendor makes them (admins, a storefront, scripts,
// customers' applications), over real HTTP on real PostgreSQL. Batches of operations drawn by fast-check run all at
// once: license sales, edits and lifecycle changes, activations and deactivations, product and plan renames, quotas,
// webhook endpoints created, edited and deleted, member and company edits. Whatever the mix, no request may answer an
// InternalError or a 5xx (a deadlock PostgreSQL breaks by aborting one transaction is one), and afterwards the
// company's books hold: each license's seat counter equals its active activations, and the activity log's chain
// verifies.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyAuditChain } from '../server/src/services/audit/audit-log.js';
import { createWebhookEndpoint } from '../server/src/services/webhooks/endpoints.js';
import { WEBHOOK_EVENT_TYPES } from '../server/src/services/webhooks/events.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { adminContext, PASSWORD, seedTwoTenants, type SeededTenant } from './support/tenants.js';

let t: TestApp;
let A: SeededTenant;
/** What the operations pick from; grows as licenses, plans and endpoints are made. */
const made = { licenses: [] as { id: string; key: string }[], plans: [] as string[], endpoints: [] as string[], members: [] as string[] };
let round = 0;

type Answer = { status: number; code: string };
const gql = async (mutation: string, input: Record<string, unknown>, pick = '__typename'): Promise<Answer & { data?: Record<string, unknown> }> => {
  const name = `${mutation.charAt(0).toUpperCase()}${mutation.slice(1)}Input`;
  const answer = await t.gql(`mutation($input: ${name}!) { ${mutation}(input: $input) { ${pick} } }`, { input }, { token: A.admin.token });
  return { status: 200, code: answer.errors?.[0]?.extensions?.code ?? 'ok', data: answer.data?.[mutation] };
};
const rest = async (path: string, body: Record<string, unknown>): Promise<Answer> => {
  const answer = await t.post(path, body);
  return { status: answer.status, code: answer.json?.errorCode ?? String(answer.json?.isValid ?? answer.json?.deactivated ?? answer.status) };
};
const pick = <T>(items: readonly T[], n: number): T | undefined => (items.length ? items[n % items.length] : undefined);

/** One operation: a name, and a number that chooses its target and values. */
const OPERATIONS: Record<string, (n: number) => Promise<Answer>> = {
  async createLicense(n) {
    const plan = n % 2 ? pick(made.plans, n) : undefined;
    const answer = await gql('createLicense', plan ? { planId: plan } : { productId: A.product!.id, maxActivations: 1 + (n % 4), floatingSeats: 2 }, 'key license { id }');
    const created = answer.data as { key: string; license: { id: string } } | undefined;
    if (created) made.licenses.push({ id: created.license.id, key: created.key });
    return answer;
  },
  updateLicense: (n) => gql('updateLicense', { id: pick(made.licenses, n)!.id, maxActivations: 1 + (n % 5), features: n % 3 ? ['export'] : [] }),
  suspendLicense: (n) => gql('suspendLicense', { id: pick(made.licenses, n)!.id }),
  reinstateLicense: (n) => gql('reinstateLicense', { id: pick(made.licenses, n)!.id }),
  // Rarer than the rest: a revocation is final, and a company of revoked licenses exercises little.
  revokeLicense: (n) => (n % 3 ? rest('/api/v1/validate', { licenseKey: pick(made.licenses, n)!.key }) : gql('revokeLicense', { id: pick(made.licenses, n * 7)!.id })),
  transferLicense: (n) => gql('transferLicense', { id: pick(made.licenses, n)!.id, customerEmail: `owner-${n % 3}@customer.test` }),
  activate: async (n) => {
    const nonce = await t.nonce();
    return rest('/api/v1/activate', { licenseKey: pick(made.licenses, n)!.key, deviceId: `device-${n % 6}`, nonce });
  },
  deactivate: (n) => rest('/api/v1/deactivate', { licenseKey: pick(made.licenses, n)!.key, deviceId: `device-${n % 6}` }),
  validate: (n) => rest('/api/v1/validate', { licenseKey: pick(made.licenses, n)!.key }),
  checkout: (n) => rest('/api/v1/float/checkout', { licenseKey: pick(made.licenses, n)!.key, deviceId: `station-${n % 3}` }),
  meter: (n) => rest('/api/v1/meter', { licenseKey: pick(made.licenses, n)!.key, event: 'api.calls', quantity: 1 + (n % 3) }),
  setMeterQuota: (n) => gql('setMeterQuota', { licenseId: pick(made.licenses, n)!.id, event: 'api.calls', period: 'DAY', limit: 10 + (n % 3) }),
  removeMeterQuota: (n) => gql('removeMeterQuota', { licenseId: pick(made.licenses, n)!.id, event: 'api.calls' }),
  renameProduct: (n) => gql('updateProduct', { id: A.product!.id, name: `Studio ${n % 4}` }),
  async createPlan(n) {
    const answer = await gql('createPlan', { productId: A.product!.id, name: `Plan ${round}-${n}`, maxActivations: 1 + (n % 3), floatingSeats: 1 }, 'plan { id }');
    const plan = (answer.data as { plan?: { id: string } } | undefined)?.plan;
    if (plan) made.plans.push(plan.id);
    return answer;
  },
  updatePlan: async (n) => (made.plans.length ? gql('updatePlan', { id: pick(made.plans, n)!, name: `Plan renamed ${n % 5}`, maxActivations: 1 + (n % 4) }) : { status: 200, code: 'ok' }),
  async createWebhookEndpoint(n) {
    if (made.endpoints.length >= 10) return { status: 200, code: 'ok' };
    const { endpoint } = await createWebhookEndpoint(adminContext(t, A), { url: `https://hooks.acme.test/${round}-${n}`, eventTypes: n % 2 ? [] : ['license.created', 'license.updated', 'activation.created'] }, { allowPrivate: true });
    made.endpoints.push(endpoint.id);
    return { status: 200, code: 'ok' };
  },
  updateWebhookEndpoint: async (n) => (made.endpoints.length ? gql('updateWebhookEndpoint', { id: pick(made.endpoints, n)!, enabled: n % 2 === 0 }) : { status: 200, code: 'ok' }),
  async deleteWebhookEndpoint(n) {
    const id = pick(made.endpoints, n);
    if (!id) return { status: 200, code: 'ok' };
    const answer = await gql('deleteWebhookEndpoint', { id });
    made.endpoints = made.endpoints.filter((endpoint) => endpoint !== id);
    return answer;
  },
  updateUser: (n) => gql('updateUser', { id: pick(made.members, n)!, name: `Member ${n % 4}` }),
  async deactivateActivation(n) {
    const activations = await t.prisma.activation.findMany({ where: { tenantId: A.tenantId, deactivatedAt: null }, select: { id: true }, orderBy: { id: 'asc' } });
    return activations.length ? gql('deactivateActivation', { id: pick(activations, n)!.id }) : { status: 200, code: 'ok' };
  },
  async endFloatingSession(n) {
    const sessions = await t.prisma.floatingSession.findMany({ where: { tenantId: A.tenantId, endedAt: null }, select: { id: true }, orderBy: { id: 'asc' } });
    return sessions.length ? gql('endFloatingSession', { id: pick(sessions, n)!.id }) : { status: 200, code: 'ok' };
  },
  async reissueLicenseKey(n) {
    const license = pick(made.licenses, n)!;
    const answer = await gql('reissueLicenseKey', { id: license.id, overlapHours: n % 2 ? 1 : 0 }, 'key');
    const key = (answer.data as { key?: string } | undefined)?.key;
    if (key) license.key = key;
    return answer;
  },
  renewLicense: (n) => gql('renewLicense', { id: pick(made.licenses, n)!.id, expiresAt: new Date(t.clock.now().getTime() + (400 + n) * 86_400_000).toISOString() }),
  issueLicenseFile: (n) => gql('issueLicenseFile', { licenseId: pick(made.licenses, n)!.id }, 'expiresAt'),
  async deletePlan(n) {
    const id = pick(made.plans, n);
    if (!id) return { status: 200, code: 'ok' };
    const answer = await gql('deletePlan', { id });
    if (answer.code === 'ok') made.plans = made.plans.filter((plan) => plan !== id);
    return answer;
  },
  updateCompanySettings: (n) => gql('updateCompanySettings', { supportEmail: `help-${n % 3}@acme.test` }),
};
const NAMES = Object.keys(OPERATIONS);
/** Refusals a mix may rightly meet: a license revoked, suspended or full, a device not there, a deleted target. */
const EXPECTED = new Set(['ok', 'true', 'false', 'Conflict', 'NotFound', 'InvalidRequest', 'LicenseRevoked', 'Suspended', 'SeatsExhausted', 'ActivationNotFound', 'FloatingSeatsExhausted', 'FloatingNotEnabled', 'QuotaExceeded', 'LicenseNotFound']);

beforeAll(async () => {
  t = await startTestApp();
  ({ A } = await seedTwoTenants(t));
  // Events are stored only for a subscriber: one subscribed to everything, so every change also writes deliveries.
  await createWebhookEndpoint(adminContext(t, A), { url: 'https://hooks.acme.test/everything', eventTypes: [...WEBHOOK_EVENT_TYPES] }, { allowPrivate: true });
  for (const name of ['one', 'two']) made.members.push((await t.seedUser(A.tenantId, { email: `${name}@acme.test`, password: PASSWORD, role: 'ReadOnly' })).id);
  for (let n = 0; n < 4; n++) await OPERATIONS.createLicense(n * 2);
});
afterAll(() => t?.close());

it('a dozen different changes at once, many times over: no InternalError, no 5xx, seat counters and the activity log intact', async () => {
  const unexpected: string[] = [];
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom(...NAMES), fc.nat(1_000)), { minLength: 12, maxLength: 16 }), async (batch) => {
      round++;
      const answers = await Promise.all(batch.map(([name, n]) => OPERATIONS[name](n).then((answer) => ({ name, ...answer }))));
      for (const answer of answers) {
        if (answer.status >= 500 || answer.code === 'InternalError' || !EXPECTED.has(answer.code)) unexpected.push(`${answer.name}: ${answer.status} ${answer.code}`);
      }
      return unexpected.length === 0;
    }),
    { numRuns: 40 },
  );
  expect(unexpected).toEqual([]);

  // Every license's seat counter is its active activations; the chain verifies.
  const licenses = await t.prisma.license.findMany({ where: { tenantId: A.tenantId }, select: { id: true, currentActivations: true, _count: { select: { activations: { where: { deactivatedAt: null } } } } } });
  expect(licenses.filter((license) => license.currentActivations !== license._count.activations)).toEqual([]);
  expect(await verifyAuditChain(t.prisma, A.tenantId, t.deps.secrets.auditChainKey)).toMatchObject({ valid: true, brokenAtSeq: null });
}, 600_000);
