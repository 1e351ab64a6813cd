import { builder, screamingEnumValues } from '../builder.js';
import { serviceCtx, type GraphQLContext } from '../context.js';
import { keysetPage, pageConnection } from '../connections.js';
import { queryFromInfo } from '@pothos/plugin-prisma';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../services/webhooks/events.js';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  listWebhookDeliveries,
  listWebhookEndpoints,
  resendWebhookDelivery,
  rotateWebhookSecret,
  sendTestWebhookEvent,
  updateWebhookEndpoint,
  DELIVERY_COLUMNS,
  ENDPOINT_FIELDS,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
} from '../../services/webhooks/endpoints.js';

const WebhookEventTypeEnum = builder.enumType('WebhookEventType', {
  description: 'Event types; in payloads they are written in lower case with dots (LICENSE_SEATS_EXHAUSTED is `license.seats_exhausted`).',
  values: screamingEnumValues(WEBHOOK_EVENT_TYPES),
});
const WebhookDeliveryStatusEnum = builder.enumType('WebhookDeliveryStatus', {
  description: 'PENDING: queued or being retried; SUCCEEDED: the endpoint answered 2xx; FAILED: given up (a 4xx other than 408/429, an internal address, or every retry spent).',
  values: screamingEnumValues(['pending', 'succeeded', 'failed'] as const),
});

// Select mode: never the signing secret.
const WebhookEndpointType = builder.prismaObject('WebhookEndpoint', {
  select: ENDPOINT_FIELDS,
  description: 'Where your company receives webhooks. The signing secret is shown only by createWebhookEndpoint and rotateWebhookSecret.',
  fields: (t) => ({
    id: t.exposeID('id'),
    url: t.exposeString('url'),
    eventTypes: t.field({ type: [WebhookEventTypeEnum], description: 'Subscribed types; empty: every type.', resolve: (endpoint) => endpoint.eventTypes as WebhookEventType[] }),
    enabled: t.exposeBoolean('enabled'),
    consecutiveFailures: t.exposeInt('consecutiveFailures', { description: 'Events in a row that failed for good; at 5 the endpoint is disabled.' }),
    disabledReason: t.exposeString('disabledReason', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

// Select mode: the delivery's columns, and of its event (a relation, loaded with the delivery rows) only the type,
// never the signed body.
const WebhookDeliveryType = builder.prismaObject('WebhookDelivery', {
  select: DELIVERY_COLUMNS,
  description: 'One event sent to one endpoint, with its last attempt.',
  fields: (t) => ({
    id: t.exposeID('id'),
    eventId: t.exposeID('eventId', { description: 'The `webhook-id` header and payload `id`: the same on every attempt.' }),
    eventType: t.field({ type: WebhookEventTypeEnum, select: { event: { select: { type: true } } }, resolve: (delivery) => delivery.event.type as WebhookEventType }),
    status: t.field({ type: WebhookDeliveryStatusEnum, resolve: (delivery) => delivery.status }),
    attempts: t.exposeInt('attempts'),
    nextAttemptAt: t.field({ type: 'DateTime', nullable: true, description: 'When a pending delivery is tried next.', resolve: (delivery) => (delivery.status === 'pending' ? delivery.nextAttemptAt : null) }),
    lastAttemptAt: t.expose('lastAttemptAt', { type: 'DateTime', nullable: true }),
    responseCode: t.exposeInt('responseCode', { nullable: true }),
    responseTimeMs: t.exposeInt('responseTimeMs', { nullable: true }),
    responseBodyExcerpt: t.exposeString('responseBodyExcerpt', { nullable: true, description: 'The first 1 KB of the response.' }),
    lastError: t.exposeString('lastError', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    deliveredAt: t.expose('deliveredAt', { type: 'DateTime', nullable: true }),
  }),
});

const PAGING = 'first/last: 1–100 (default 20); after: an endCursor (with first), before: a startCursor (with last); not both directions at once.';

builder.queryFields((t) => ({
  webhookEndpoints: t.connection(
    {
      type: WebhookEndpointType,
      authScopes: { admin: true },
      description: `Your company's webhook endpoints, newest first (COMPANY_ADMIN). ${PAGING}`,
      resolve: async (_root, args, ctx) => pageConnection(await listWebhookEndpoints(serviceCtx(ctx), keysetPage(args))),
    },
    { name: 'WebhookEndpointConnection' },
    { name: 'WebhookEndpointEdge' },
  ),
  webhookDeliveries: t.connection(
    {
      type: WebhookDeliveryType,
      authScopes: { admin: true },
      description: `The delivery log of one endpoint, newest first (COMPANY_ADMIN). ${PAGING}`,
      args: { endpointId: t.arg.id({ required: true }) },
      resolve: async (_root, args, ctx, info) => {
        const query = queryFromInfo({ context: ctx, info, paths: [['nodes'], ['edges', 'node']], typeName: 'WebhookDelivery' });
        return pageConnection(await listWebhookDeliveries(serviceCtx(ctx), String(args.endpointId), keysetPage(args), query));
      },
    },
    { name: 'WebhookDeliveryConnection' },
    { name: 'WebhookDeliveryEdge' },
  ),
}));

const CreateWebhookEndpointInput = builder.inputType('CreateWebhookEndpointInput', {
  fields: (t) => ({
    url: t.string({ required: true, description: 'http:// or https://.' }),
    eventTypes: t.field({ type: [WebhookEventTypeEnum], description: 'Empty or absent: every type.' }),
    enabled: t.boolean(),
  }),
});
const UpdateWebhookEndpointInput = builder.inputType('UpdateWebhookEndpointInput', {
  fields: (t) => ({ id: t.id({ required: true }), url: t.string(), eventTypes: t.field({ type: [WebhookEventTypeEnum] }), enabled: t.boolean({ description: 'true again clears the failure count.' }) }),
});
const idInput = (name: string) => builder.inputType(name, { fields: (t) => ({ id: t.id({ required: true }) }) });
const DeleteWebhookEndpointInput = idInput('DeleteWebhookEndpointInput');
const RotateWebhookSecretInput = idInput('RotateWebhookSecretInput');
const ResendWebhookDeliveryInput = idInput('ResendWebhookDeliveryInput');
const SendTestWebhookEventInput = builder.inputType('SendTestWebhookEventInput', { fields: (t) => ({ endpointId: t.id({ required: true }) }) });

const endpointPayload = (name: string) =>
  builder.objectRef<{ endpoint: WebhookEndpointRow }>(name).implement({ fields: (t) => ({ endpoint: t.field({ type: WebhookEndpointType, resolve: (payload) => payload.endpoint }) }) });
const secretPayload = (name: string) =>
  builder.objectRef<{ endpoint: WebhookEndpointRow; secret: string }>(name).implement({
    fields: (t) => ({
      endpoint: t.field({ type: WebhookEndpointType, resolve: (payload) => payload.endpoint }),
      secret: t.exposeString('secret', { description: 'The signing secret (`whsec_…`), shown this once: verify `webhook-signature` with it.' }),
    }),
  });
const deliveryPayload = (name: string) =>
  builder.objectRef<WebhookDeliveryRow>(name).implement({ fields: (t) => ({ delivery: t.field({ type: WebhookDeliveryType, resolve: (delivery) => delivery }) }) });

const WARNING = {
  nullable: true,
  description: 'Set when deliveries to this URL will be refused: its host is (or resolves to) an internal address and the server does not allow private targets (WEBHOOK_ALLOW_PRIVATE). The endpoint is saved all the same.',
} as const;
const CreateWebhookEndpointPayload = builder.objectRef<{ endpoint: WebhookEndpointRow; secret: string; warning: string | null }>('CreateWebhookEndpointPayload').implement({
  fields: (t) => ({
    endpoint: t.field({ type: WebhookEndpointType, resolve: (payload) => payload.endpoint }),
    secret: t.exposeString('secret', { description: 'The signing secret (`whsec_…`), shown this once: verify `webhook-signature` with it.' }),
    warning: t.exposeString('warning', WARNING),
  }),
});
const UpdateWebhookEndpointPayload = builder.objectRef<{ endpoint: WebhookEndpointRow; warning: string | null }>('UpdateWebhookEndpointPayload').implement({
  fields: (t) => ({ endpoint: t.field({ type: WebhookEndpointType, resolve: (payload) => payload.endpoint }), warning: t.exposeString('warning', WARNING) }),
});
/** What the webhook services need of the server's configuration. */
const deliveryOptions = (ctx: GraphQLContext) => ({ allowPrivate: ctx.deps.config.webhookAllowPrivate, publicUrl: ctx.deps.config.publicUrl, logger: ctx.deps.logger });

builder.mutationFields((t) => ({
  createWebhookEndpoint: t.field({
    type: CreateWebhookEndpointPayload,
    authScopes: { admin: true },
    description: 'Adds a webhook endpoint and answers its signing secret, once (COMPANY_ADMIN).',
    args: { input: t.arg({ type: CreateWebhookEndpointInput, required: true }) },
    resolve: (_root, { input }, ctx) => createWebhookEndpoint(serviceCtx(ctx), input, deliveryOptions(ctx)),
  }),
  updateWebhookEndpoint: t.field({
    type: UpdateWebhookEndpointPayload,
    authScopes: { admin: true },
    description: 'Changes the URL, the event types or the enabled flag (COMPANY_ADMIN).',
    args: { input: t.arg({ type: UpdateWebhookEndpointInput, required: true }) },
    resolve: (_root, { input }, ctx) => updateWebhookEndpoint(serviceCtx(ctx), String(input.id), input, deliveryOptions(ctx)),
  }),
  deleteWebhookEndpoint: t.field({
    type: endpointPayload('DeleteWebhookEndpointPayload'),
    authScopes: { admin: true },
    description: 'Deletes an endpoint and its delivery log (COMPANY_ADMIN).',
    args: { input: t.arg({ type: DeleteWebhookEndpointInput, required: true }) },
    // The row is gone once deleted: the payload answers from what the DELETE returned, read with the planned selection.
    resolve: async (_root, { input }, ctx, info) => ({
      endpoint: await deleteWebhookEndpoint(serviceCtx(ctx), String(input.id), queryFromInfo({ context: ctx, info, paths: [['endpoint']], typeName: 'WebhookEndpoint' })),
    }),
  }),
  rotateWebhookSecret: t.field({
    type: secretPayload('RotateWebhookSecretPayload'),
    authScopes: { admin: true },
    description: 'Replaces the signing secret and answers the new one, once; later deliveries are signed with it (COMPANY_ADMIN).',
    args: { input: t.arg({ type: RotateWebhookSecretInput, required: true }) },
    resolve: (_root, { input }, ctx) => rotateWebhookSecret(serviceCtx(ctx), String(input.id)),
  }),
  resendWebhookDelivery: t.field({
    type: deliveryPayload('ResendWebhookDeliveryPayload'),
    authScopes: { admin: true },
    description: 'Queues a delivery again at once, with the same event id (COMPANY_ADMIN).',
    args: { input: t.arg({ type: ResendWebhookDeliveryInput, required: true }) },
    resolve: (_root, { input }, ctx) => resendWebhookDelivery(serviceCtx(ctx), String(input.id)),
  }),
  sendTestWebhookEvent: t.field({
    type: deliveryPayload('SendTestWebhookEventPayload'),
    authScopes: { admin: true },
    description: 'Sends a `webhook.test` event to this endpoint only, at once, and answers its delivery as it then stands (succeeded, failed, or pending a retry by the delivery runs) (COMPANY_ADMIN).',
    args: { input: t.arg({ type: SendTestWebhookEventInput, required: true }) },
    resolve: (_root, { input }, ctx) => sendTestWebhookEvent(serviceCtx(ctx), String(input.endpointId), deliveryOptions(ctx)),
  }),
}));
