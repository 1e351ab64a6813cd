import { builder, screamingEnumValues } from '../builder.js';
import { arrayConnection, keysetPage, pageConnection } from '../connections.js';
import { serviceCtx, type GraphQLContext } from '../context.js';
import {
  createPaymentConnection,
  deletePaymentConnection,
  listPaymentConnections,
  listPaymentEvents,
  listPaymentPrices,
  mapPaymentPrice,
  paymentWebhookPath,
  unmapPaymentPrice,
  updatePaymentConnection,
} from '../../services/payments/connections.js';
import { PAYMENT_PROVIDERS, type PaymentProvider } from '../../services/payments/model.js';
import { PlanRefType } from './plans.js';

// Payment integrations (the services' payment connections: Stripe, Paddle Billing, Lemon Squeezy): thin resolvers over services/payments. The signing
// secret goes in and never comes out (only its last characters). Named integrations here: a GraphQL type named
// …Connection would read as a Relay connection.

const PaymentProviderEnum = builder.enumType('PaymentProvider', { values: screamingEnumValues(PAYMENT_PROVIDERS) });
const RefundActionEnum = builder.enumType('PaymentRefundAction', {
  description: 'What a refund or a lost dispute does to the license: SUSPEND (reversible) or REVOKE (final).',
  values: screamingEnumValues(['suspend', 'revoke'] as const),
});
const PaymentEventOutcomeEnum = builder.enumType('PaymentEventOutcome', {
  description: 'APPLIED; IGNORED: not an event Keyforge acts on; PENDING: waits for the purchase it refers to; FAILED: not applied (its price is mapped to no plan), the provider retries it.',
  values: screamingEnumValues(['applied', 'ignored', 'pending', 'failed'] as const),
});

const webhookUrl = (ctx: GraphQLContext, id: string) => `${ctx.deps.config.publicUrl}${paymentWebhookPath(id)}`;

const PaymentPriceMappingType = builder.prismaObject('PaymentPriceMapping', {
  description: "A provider's price (Stripe price id, Paddle price id, Lemon Squeezy variant id) sold as a plan.",
  fields: (t) => ({
    id: t.exposeID('id'),
    priceId: t.exposeString('priceId'),
    plan: t.relation('plan', { type: PlanRefType }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

// Select mode: never the encrypted secret.
const PaymentConnectionType = builder.prismaObject('PaymentConnection', {
  name: 'PaymentIntegration',
  select: { id: true, provider: true, name: true, secretHint: true, refundAction: true, enabled: true, createdAt: true, updatedAt: true },
  description: 'A payment provider connected to your company: its webhooks create, renew and end licenses.',
  fields: (t) => ({
    id: t.exposeID('id'),
    provider: t.field({ type: PaymentProviderEnum, resolve: (connection) => connection.provider as PaymentProvider }),
    name: t.exposeString('name'),
    webhookUrl: t.string({ description: "The URL to paste into the provider's webhook settings.", resolve: (connection, _args, ctx) => webhookUrl(ctx, connection.id) }),
    secretHint: t.exposeString('secretHint', { description: "The signing secret's last characters (the secret is never shown)." }),
    refundAction: t.field({ type: RefundActionEnum, resolve: (connection) => connection.refundAction as 'suspend' | 'revoke' }),
    enabled: t.exposeBoolean('enabled'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const PaymentEventType = builder.prismaObject('PaymentEvent', {
  select: { id: true, providerEventId: true, type: true, outcome: true, detail: true, subject: true, licenseId: true, occurredAt: true, receivedAt: true },
  description: 'One event a payment provider delivered (each provider event id once), with what it did.',
  fields: (t) => ({
    id: t.exposeID('id'),
    providerEventId: t.exposeString('providerEventId'),
    type: t.exposeString('type', { description: "The provider's event type (invoice.paid, transaction.completed, order_created, …)." }),
    outcome: t.field({ type: PaymentEventOutcomeEnum, resolve: (event) => event.outcome as 'applied' | 'ignored' | 'pending' | 'failed' }),
    detail: t.exposeString('detail', { nullable: true }),
    subject: t.exposeString('subject', { nullable: true, description: 'The subscription (or one-time order) it is about.' }),
    licenseId: t.exposeID('licenseId', { nullable: true }),
    occurredAt: t.expose('occurredAt', { type: 'DateTime', nullable: true }),
    receivedAt: t.expose('receivedAt', { type: 'DateTime' }),
  }),
});

builder.queryFields((t) => ({
  paymentIntegrations: t.connection(
    {
      type: PaymentConnectionType,
      description: "Your company's payment connections, oldest first. first/last: 0–100 (default 100).",
      resolve: async (_root, args, ctx) => arrayConnection(args, await listPaymentConnections(serviceCtx(ctx))),
    },
    { name: 'PaymentIntegrationConnection' },
    { name: 'PaymentIntegrationEdge' },
  ),
  paymentPrices: t.connection(
    {
      type: PaymentPriceMappingType,
      description: "One connection's price mappings, oldest first. first/last: 0–100 (default 100).",
      args: { integrationId: t.arg.id({ required: true }) },
      resolve: async (_root, args, ctx) => arrayConnection(args, await listPaymentPrices(serviceCtx(ctx), String(args.integrationId))),
    },
    { name: 'PaymentPriceMappingConnection' },
    { name: 'PaymentPriceMappingEdge' },
  ),
  paymentEvents: t.connection(
    {
      type: PaymentEventType,
      description: 'The events one connection received, newest first. first/last: 1–100 (default 20).',
      args: { integrationId: t.arg.id({ required: true }) },
      resolve: async (_root, args, ctx) => pageConnection(await listPaymentEvents(serviceCtx(ctx), String(args.integrationId), keysetPage(args))),
    },
    { name: 'PaymentEventConnection' },
    { name: 'PaymentEventEdge' },
  ),
}));

const CreatePaymentConnectionInput = builder.inputType('CreatePaymentIntegrationInput', {
  fields: (t) => ({
    provider: t.field({ type: PaymentProviderEnum, required: true }),
    name: t.string({ description: "Default: the provider's name." }),
    signingSecret: t.string({ required: true, description: "The provider's webhook signing secret (Stripe `whsec_…`, Paddle's secret key, Lemon Squeezy's signing secret)." }),
    refundAction: t.field({ type: RefundActionEnum, description: 'Default: SUSPEND.' }),
  }),
});
const UpdatePaymentConnectionInput = builder.inputType('UpdatePaymentIntegrationInput', {
  description: 'Omitted fields stay unchanged. A new signing secret needs a recent re-authentication.',
  fields: (t) => ({
    id: t.id({ required: true }),
    name: t.string(),
    signingSecret: t.string(),
    refundAction: t.field({ type: RefundActionEnum }),
    enabled: t.boolean({ description: 'false: deliveries are answered 404 (the provider retries them, then gives up).' }),
  }),
});
const DeletePaymentConnectionInput = builder.inputType('DeletePaymentIntegrationInput', { fields: (t) => ({ id: t.id({ required: true }) }) });
const MapPaymentPriceInput = builder.inputType('MapPaymentPriceInput', {
  fields: (t) => ({
    integrationId: t.id({ required: true }),
    priceId: t.string({ required: true, description: 'Stripe price id (price_…), Paddle price id (pri_…) or Lemon Squeezy variant id.' }),
    planId: t.id({ required: true }),
  }),
});
const UnmapPaymentPriceInput = builder.inputType('UnmapPaymentPriceInput', { fields: (t) => ({ id: t.id({ required: true }) }) });

type ConnectionRow = Awaited<ReturnType<typeof createPaymentConnection>>;
const connectionPayload = (name: string) =>
  builder.objectRef<ConnectionRow>(name).implement({ fields: (t) => ({ paymentIntegration: t.field({ type: PaymentConnectionType, resolve: (row) => row }) }) });
const CreatePaymentConnectionPayload = connectionPayload('CreatePaymentIntegrationPayload');
const UpdatePaymentConnectionPayload = connectionPayload('UpdatePaymentIntegrationPayload');
const DeletePaymentConnectionPayload = builder.objectRef<{ id: string }>('DeletePaymentIntegrationPayload').implement({ fields: (t) => ({ deletedPaymentIntegrationId: t.exposeID('id') }) });
type MappingRow = Awaited<ReturnType<typeof mapPaymentPrice>>;
const MapPaymentPricePayload = builder.objectRef<MappingRow>('MapPaymentPricePayload').implement({ fields: (t) => ({ paymentPriceMapping: t.field({ type: PaymentPriceMappingType, resolve: (row) => row }) }) });
const UnmapPaymentPricePayload = builder.objectRef<{ id: string }>('UnmapPaymentPricePayload').implement({ fields: (t) => ({ deletedPaymentPriceMappingId: t.exposeID('id') }) });

const lower = <T extends string>(value: T | null | undefined) => (value ? (value.toLowerCase() as Lowercase<T>) : undefined);

builder.mutationFields((t) => ({
  createPaymentIntegration: t.field({
    type: CreatePaymentConnectionPayload,
    authScopes: { admin: true },
    description: "Connects a payment provider (COMPANY_ADMIN, recently re-authenticated). Paste the answer's webhookUrl into the provider.",
    args: { input: t.arg({ type: CreatePaymentConnectionInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      createPaymentConnection(serviceCtx(ctx), { provider: input.provider as PaymentProvider, name: input.name ?? undefined, signingSecret: input.signingSecret, refundAction: lower(input.refundAction) }),
  }),
  updatePaymentIntegration: t.field({
    type: UpdatePaymentConnectionPayload,
    authScopes: { admin: true },
    description: 'Renames, enables or disables a connection, changes its refund action or its signing secret (COMPANY_ADMIN).',
    args: { input: t.arg({ type: UpdatePaymentConnectionInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      updatePaymentConnection(serviceCtx(ctx), String(input.id), { name: input.name ?? undefined, signingSecret: input.signingSecret ?? undefined, refundAction: lower(input.refundAction), enabled: input.enabled ?? undefined }),
  }),
  deletePaymentIntegration: t.field({
    type: DeletePaymentConnectionPayload,
    authScopes: { admin: true },
    description: 'Disconnects a provider, with its price mappings and event log; licenses stay (COMPANY_ADMIN, recently re-authenticated).',
    args: { input: t.arg({ type: DeletePaymentConnectionInput, required: true }) },
    resolve: async (_root, { input }, ctx) => ({ id: (await deletePaymentConnection(serviceCtx(ctx), String(input.id))).id }),
  }),
  mapPaymentPrice: t.field({
    type: MapPaymentPricePayload,
    authScopes: { admin: true },
    description: "Sells a provider's price as a plan: a purchase of it creates a license from the plan, its seats times the quantity (COMPANY_ADMIN). Mapping a price again moves it.",
    args: { input: t.arg({ type: MapPaymentPriceInput, required: true }) },
    resolve: (_root, { input }, ctx) => mapPaymentPrice(serviceCtx(ctx), String(input.integrationId), { priceId: input.priceId, planId: String(input.planId) }),
  }),
  unmapPaymentPrice: t.field({
    type: UnmapPaymentPricePayload,
    authScopes: { admin: true },
    description: 'Removes a price mapping; licenses sold stay (COMPANY_ADMIN).',
    args: { input: t.arg({ type: UnmapPaymentPriceInput, required: true }) },
    resolve: async (_root, { input }, ctx) => ({ id: (await unmapPaymentPrice(serviceCtx(ctx), String(input.id))).id }),
  }),
}));
