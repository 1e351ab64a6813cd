import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REAUTH_WINDOW_MS } from '../server/src/services/auth/recent-reauth.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { seedTwoTenants, type SeededTenant } from './support/tenants.js';

// Payment integrations over GraphQL: the webhook URL, the secret never shown again (only its hint), price mappings,
// the event log; re-authentication for the secret, roles, and another company's integration answering not found.

const clock = new TestClock(Date.parse('2026-06-01T12:00:00.000Z'));
let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;
let planId: string;
type Auth = { token?: string; apiKey?: string };
const gql = (query: string, variables: Record<string, unknown>, auth: Auth) => t.gql(query, variables, auth);
const code = async (query: string, variables: Record<string, unknown>, auth: Auth) => (await gql(query, variables, auth)).errors?.[0]?.extensions?.code;

const INTEGRATION = 'id provider name webhookUrl secretHint refundAction enabled';
const CREATE = `mutation($input: CreatePaymentIntegrationInput!) { createPaymentIntegration(input: $input) { paymentIntegration { ${INTEGRATION} } } }`;
const UPDATE = `mutation($input: UpdatePaymentIntegrationInput!) { updatePaymentIntegration(input: $input) { paymentIntegration { ${INTEGRATION} } } }`;
const DELETE = 'mutation($input: DeletePaymentIntegrationInput!) { deletePaymentIntegration(input: $input) { deletedPaymentIntegrationId } }';
const MAP = 'mutation($input: MapPaymentPriceInput!) { mapPaymentPrice(input: $input) { paymentPriceMapping { id priceId plan { id name } } } }';
const UNMAP = 'mutation($input: UnmapPaymentPriceInput!) { unmapPaymentPrice(input: $input) { deletedPaymentPriceMappingId } }';
const LIST = `query { paymentIntegrations { totalCount nodes { ${INTEGRATION} } } }`;
const PRICES = 'query($id: ID!) { paymentPrices(integrationId: $id) { totalCount nodes { id priceId plan { id } } } }';
const EVENTS = 'query($id: ID!) { paymentEvents(integrationId: $id) { totalCount nodes { providerEventId type outcome detail subject licenseId } } }';

beforeAll(async () => {
  t = await startTestApp({ clock });
  ({ A, B } = await seedTwoTenants(t));
  const created = await t.gqlData('mutation($input: CreatePlanInput!) { createPlan(input: $input) { plan { id } } }', { input: { productId: A.product!.id, name: 'Pro', maxActivations: 1, duration: 'P1Y' } }, { token: A.admin.token });
  planId = created.createPlan.plan.id;
});
afterAll(() => t?.close());

describe('payment integrations over GraphQL', () => {
  it('shows no characters of a short signing secret (a vendor-chosen one): the hint would give a large part away', async () => {
    const created = (await t.gqlData(CREATE, { input: { provider: 'LEMONSQUEEZY', signingSecret: 'short-secret' } }, { token: B.admin.token })).createPaymentIntegration.paymentIntegration;
    expect(created.secretHint).toBe('… (short secret)');
    await t.prisma.paymentConnection.delete({ where: { id: created.id } });
  });

  it('connects, shows the webhook URL and a hint of the secret (never the secret), maps a price and lists events', async () => {
    const created = (await t.gqlData(CREATE, { input: { provider: 'STRIPE', signingSecret: 'whsec_graphql_secret_9876', refundAction: 'REVOKE' } }, { token: A.admin.token })).createPaymentIntegration.paymentIntegration;
    expect(created).toMatchObject({ provider: 'STRIPE', name: 'Stripe', secretHint: '…9876', refundAction: 'REVOKE', enabled: true, webhookUrl: `http://licensing.test/api/v1/payments/${created.id}/webhook` });
    const stored = await t.prisma.paymentConnection.findUniqueOrThrow({ where: { id: created.id } });
    expect(stored.secretEncrypted).not.toContain('whsec_graphql_secret_9876');
    expect(JSON.stringify(await t.prisma.auditLogEntry.findMany({ where: { entityId: created.id } }))).not.toContain('whsec_graphql');
    const mapping = (await t.gqlData(MAP, { input: { integrationId: created.id, priceId: 'price_1', planId } }, { token: A.admin.token })).mapPaymentPrice.paymentPriceMapping;
    expect(mapping).toMatchObject({ priceId: 'price_1', plan: { id: planId, name: 'Pro' } });
    expect((await t.gqlData(PRICES, { id: created.id }, { token: A.readOnly.token })).paymentPrices.totalCount).toBe(1);
    expect((await t.gqlData(LIST, {}, { token: A.readOnly.token })).paymentIntegrations.nodes.map((node: { id: string }) => node.id)).toContain(created.id);
    expect((await t.gqlData(EVENTS, { id: created.id }, { token: A.admin.token })).paymentEvents.totalCount).toBe(0);
    expect((await t.gqlData(UNMAP, { input: { id: mapping.id } }, { token: A.admin.token })).unmapPaymentPrice.deletedPaymentPriceMappingId).toBe(mapping.id);
  });

  it('needs a recent re-authentication to add an integration or change its secret; read-only members change nothing', async () => {
    const created = (await t.gqlData(CREATE, { input: { provider: 'PADDLE', signingSecret: 'pdl_secret_0000000001' } }, { token: A.admin.token })).createPaymentIntegration.paymentIntegration;
    clock.advance(REAUTH_WINDOW_MS + 1000);
    expect(await code(CREATE, { input: { provider: 'LEMONSQUEEZY', signingSecret: 'ls_secret_00000001' } }, { token: A.admin.token })).toBe('ReauthenticationRequired');
    expect(await code(UPDATE, { input: { id: created.id, signingSecret: 'pdl_secret_0000000002' } }, { token: A.admin.token })).toBe('ReauthenticationRequired');
    expect(await code(DELETE, { input: { id: created.id } }, { token: A.admin.token })).toBe('ReauthenticationRequired');
    // Renaming or disabling is not a secret change.
    expect((await t.gqlData(UPDATE, { input: { id: created.id, enabled: false, name: 'Paddle EU' } }, { token: A.admin.token })).updatePaymentIntegration.paymentIntegration).toMatchObject({ enabled: false, name: 'Paddle EU' });
    expect(await code(CREATE, { input: { provider: 'STRIPE', signingSecret: 'whsec_readonly_0001' } }, { token: A.readOnly.token })).toBe('Forbidden');
    expect(await code(MAP, { input: { integrationId: created.id, priceId: 'p', planId } }, { apiKey: A.readOnlyKey.key })).toBe('Forbidden');
    await t.reauthenticate(A.admin.token);
    expect(await t.prisma.paymentConnection.count({ where: { tenantId: A.tenantId } })).toBe(2);
  });

  it("answers not found for another company's integration, and never lists it", async () => {
    await t.reauthenticate(B.admin.token);
    const theirs = (await t.gqlData(CREATE, { input: { provider: 'STRIPE', signingSecret: 'whsec_globex_000001' } }, { token: B.admin.token })).createPaymentIntegration.paymentIntegration;
    await t.reauthenticate(A.admin.token);
    for (const [query, input] of [
      [UPDATE, { id: theirs.id, name: 'mine now' }],
      [DELETE, { id: theirs.id }],
      [MAP, { integrationId: theirs.id, priceId: 'price_x', planId }],
    ] as const) {
      expect(await code(query, { input }, { token: A.admin.token })).toBe('NotFound');
    }
    expect(await code(EVENTS, { id: theirs.id }, { token: A.admin.token })).toBe('NotFound');
    expect(await code(PRICES, { id: theirs.id }, { token: A.admin.token })).toBe('NotFound');
    expect((await t.gqlData(LIST, {}, { token: A.admin.token })).paymentIntegrations.nodes.map((node: { id: string }) => node.id)).not.toContain(theirs.id);
    // B cannot sell A's plan through its own integration.
    expect(await code(MAP, { input: { integrationId: theirs.id, priceId: 'price_x', planId } }, { token: B.admin.token })).toBe('NotFound');
    expect(await t.prisma.paymentConnection.findUniqueOrThrow({ where: { id: theirs.id } })).toMatchObject({ name: 'Stripe' });
  });
});
