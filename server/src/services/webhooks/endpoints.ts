import { randomBytes, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import { diffChanges, lockTenantAudit, recordAudit } from '../audit/audit-log.js';
import { auditActor, requireAdmin } from '../auth/actor.js';
import { requireRecentReauth } from '../auth/recent-reauth.js';
import type { ServiceContext } from '../context.js';
import { CreatedAtIdCursor, cappedCount, countUpTo, createdAtIdWhere, isUuid, keyset, toPage, type PageArgs } from '../listing.js';
import { parseInput } from '../validation.js';
import { deliverWebhookNow, type WebhookDeliveryOptions } from './delivery.js';
import { eventBody, WEBHOOK_EVENT_TYPES } from './events.js';
import { privateTargetWarning } from './ssrf.js';

// Webhook endpoints of a tenant, managed by its admins (CompanyAdmin for every call, reads included: URLs and the
// delivery log are integration details). The signing secret is returned once, by create and rotate.

export const WebhookUrl = z
  .string()
  .trim()
  .max(2000)
  .pipe(z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }));
const EventTypes = z.array(z.enum(WEBHOOK_EVENT_TYPES)).max(WEBHOOK_EVENT_TYPES.length);
const CreateSchema = z.object({ url: WebhookUrl, eventTypes: EventTypes.optional(), enabled: z.boolean().optional() });
const UpdateSchema = z.object({ url: WebhookUrl.optional(), eventTypes: EventTypes.optional(), enabled: z.boolean().optional() });

/** What the API shows of an endpoint: never its signing secret. */
export const ENDPOINT_FIELDS = { id: true, tenantId: true, url: true, eventTypes: true, enabled: true, consecutiveFailures: true, disabledReason: true, createdAt: true, updatedAt: true } as const;
export type WebhookEndpointRow = Prisma.WebhookEndpointGetPayload<{ select: typeof ENDPOINT_FIELDS }>;

/** `whsec_` + base64 of 32 random bytes (Standard Webhooks). */
const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

async function findEndpoint(ctx: Pick<ServiceContext, 'db'>, tenantId: string, id: string) {
  const endpoint = isUuid(id) ? await ctx.db.prisma.webhookEndpoint.findFirst({ where: { id, tenantId }, select: ENDPOINT_FIELDS }) : null;
  if (!endpoint) throw new AppError('NotFound', 'Webhook endpoint not found.');
  return endpoint;
}

/** Every event fans out to each subscribed endpoint: a company gets this many (Stripe allows 16). */
export const MAX_WEBHOOK_ENDPOINTS = 20;

/** WEBHOOK_ALLOW_PRIVATE, for the warning given when a URL is set (ssrf.ts privateTargetWarning). */
interface EndpointTargetOptions {
  allowPrivate: boolean;
}

/** Adds an endpoint; `warning` says when deliveries to its URL will be refused (an internal address). */
export async function createWebhookEndpoint(ctx: ServiceContext, input: { url: string; eventTypes?: string[] | null; enabled?: boolean | null }, target: EndpointTargetOptions) {
  const { tenantId } = requireAdmin(ctx);
  await requireRecentReauth(ctx, 'tenant');
  const data = parseInput(CreateSchema, { url: input.url, eventTypes: input.eventTypes ?? undefined, enabled: input.enabled ?? undefined });
  const secret = newSecret();
  const endpoint = await ctx.db.prisma.$transaction(async (tx) => {
    // The company's activity-log lock, taken first, makes concurrent creations count one after the other. Not a lock
    // on the tenant row: every insert that references the company (an activity-log entry among them) waits for that
    // one, so a writer holding the log's lock and this transaction would each wait for the other (a deadlock).
    await lockTenantAudit(tx, tenantId);
    if ((await tx.webhookEndpoint.count({ where: { tenantId } })) >= MAX_WEBHOOK_ENDPOINTS) {
      throw new AppError('Conflict', `A company can have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints: delete one first (one endpoint can receive every event type).`);
    }
    const created = await tx.webhookEndpoint.create({
      data: { tenantId, url: data.url, eventTypes: [...new Set(data.eventTypes ?? [])], enabled: data.enabled ?? true, secretEncrypted: ctx.secrets.encrypt(secret), createdAt: ctx.now },
      select: ENDPOINT_FIELDS,
    });
    const details = { url: created.url, eventTypes: created.eventTypes, enabled: created.enabled };
    await recordAudit(tx, { tenantId, action: 'CreateWebhookEndpoint', entityType: 'WebhookEndpoint', entityId: created.id, entity: created.url, details }, auditActor(ctx), ctx.now);
    return created;
  });
  return { endpoint, secret, warning: await privateTargetWarning(endpoint.url, target.allowPrivate) };
}

/**
 * Changes the URL, the event filter or the enabled flag; enabling again clears the failure count. `warning` as for
 * createWebhookEndpoint when the URL changed.
 */
export async function updateWebhookEndpoint(ctx: ServiceContext, id: string, input: { url?: string | null; eventTypes?: string[] | null; enabled?: boolean | null }, target: EndpointTargetOptions) {
  const { tenantId } = requireAdmin(ctx);
  const data = parseInput(UpdateSchema, { url: input.url ?? undefined, eventTypes: input.eventTypes ?? undefined, enabled: input.enabled ?? undefined });
  const endpoint = await findEndpoint(ctx, tenantId, id);
  const next = { ...data, ...(data.eventTypes && { eventTypes: [...new Set(data.eventTypes)] }) };
  const changesFrom = (stored: typeof endpoint) => diffChanges({ url: stored.url, eventTypes: stored.eventTypes, enabled: stored.enabled }, next);
  if (!changesFrom(endpoint)) return { endpoint, warning: null };
  const { updated, changes } = await ctx.db.prisma.$transaction(async (tx) => {
    // The row first, as deleteWebhookEndpoint takes it: the same edit sent twice at once waits here, then is
    // measured against what the first one stored, and is logged once.
    // FOR NO KEY UPDATE: the lock the update takes anyway; rows inserted that reference this one do not wait for it.
    await tx.$executeRaw`SELECT 1 FROM webhook_endpoints WHERE id = ${endpoint.id}::uuid FOR NO KEY UPDATE`;
    const stored = await tx.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id }, select: ENDPOINT_FIELDS });
    const changes = changesFrom(stored);
    if (!changes) return { updated: stored, changes };
    const reenabled = next.enabled === true && !stored.enabled;
    const updated = await tx.webhookEndpoint.update({
      where: { id: endpoint.id },
      data: { ...next, ...(reenabled && { consecutiveFailures: 0, disabledReason: null }) },
      select: ENDPOINT_FIELDS,
    });
    await recordAudit(tx, { tenantId, action: 'UpdateWebhookEndpoint', entityType: 'WebhookEndpoint', entityId: endpoint.id, entity: updated.url, details: changes }, auditActor(ctx), ctx.now);
    return { updated, changes };
  });
  return { endpoint: updated, warning: changes && 'url' in changes.after ? await privateTargetWarning(updated.url, target.allowPrivate) : null };
}

/**
 * Deletes an endpoint (its deliveries go with it) and answers the row as it was, read by the DELETE itself with the
 * caller's planned selection (`query`, the GraphQL layer's `queryFromInfo`): nothing can read it afterwards.
 */
export async function deleteWebhookEndpoint(ctx: ServiceContext, id: string, query: { select?: Prisma.WebhookEndpointSelect } = {}) {
  const { tenantId } = requireAdmin(ctx);
  if (!isUuid(id)) throw new AppError('NotFound', 'Webhook endpoint not found.');
  const select = { ...query.select, ...ENDPOINT_FIELDS } as typeof ENDPOINT_FIELDS;
  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      const endpoint = await tx.webhookEndpoint.delete({ where: { id, tenantId }, select });
      await recordAudit(tx, { tenantId, action: 'DeleteWebhookEndpoint', entityType: 'WebhookEndpoint', entityId: endpoint.id, entity: endpoint.url }, auditActor(ctx), ctx.now);
      return endpoint;
    });
  } catch (error) {
    // Another company's endpoint, or one deleted meanwhile: no row matched.
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2025') throw new AppError('NotFound', 'Webhook endpoint not found.');
    throw error;
  }
}

/** A new signing secret, returned once; deliveries from now on are signed with it. */
export async function rotateWebhookSecret(ctx: ServiceContext, id: string) {
  const { tenantId } = requireAdmin(ctx);
  const endpoint = await findEndpoint(ctx, tenantId, id);
  const secret = newSecret();
  await ctx.db.prisma.$transaction(async (tx) => {
    await tx.webhookEndpoint.update({ where: { id: endpoint.id }, data: { secretEncrypted: ctx.secrets.encrypt(secret) } });
    await recordAudit(tx, { tenantId, action: 'RotateWebhookSecret', entityType: 'WebhookEndpoint', entityId: endpoint.id, entity: endpoint.url }, auditActor(ctx), ctx.now);
  });
  return { endpoint, secret };
}

/** The tenant's endpoints, newest first, paginated both ways. */
export async function listWebhookEndpoints(ctx: ServiceContext, pageArgs: PageArgs = {}) {
  const { tenantId } = requireAdmin(ctx);
  const page = keyset(pageArgs, CreatedAtIdCursor);
  const [rows, totalCount] = await Promise.all([
    ctx.db.prisma.webhookEndpoint.findMany({ where: { AND: [{ tenantId }, createdAtIdWhere(page)] }, select: ENDPOINT_FIELDS, orderBy: [{ createdAt: page.order }, { id: page.order }], take: page.size + 1 }),
    cappedCount(countUpTo(ctx.db, Prisma.sql`webhook_endpoints`, Prisma.sql`tenant_id = ${tenantId}::uuid`)),
  ]);
  return toPage(rows, page, totalCount, (row) => [row.createdAt.toISOString(), row.id]);
}

/** The columns the API shows of a delivery. */
export const DELIVERY_COLUMNS = {
  id: true, tenantId: true, endpointId: true, eventId: true, status: true, attempts: true, nextAttemptAt: true, lastAttemptAt: true,
  responseCode: true, responseTimeMs: true, responseBodyExcerpt: true, lastError: true, createdAt: true, deliveredAt: true,
} as const;
/** A delivery as the API shows it: its columns and its event's type (never the event's body). */
const DELIVERY_FIELDS = { ...DELIVERY_COLUMNS, event: { select: { type: true } } } as const;
export type WebhookDeliveryRow = Prisma.WebhookDeliveryGetPayload<{ select: typeof DELIVERY_FIELDS }>;

/** Relations a caller wants loaded with the delivery rows, in the same query (the GraphQL layer's planned selection). */
export interface DeliveryQuery {
  select?: Prisma.WebhookDeliverySelect;
}

/** The delivery log of one endpoint of the tenant, newest first. */
export async function listWebhookDeliveries(ctx: ServiceContext, endpointId: string, pageArgs: PageArgs = {}, query: DeliveryQuery = {}) {
  const { tenantId } = requireAdmin(ctx);
  const endpoint = await findEndpoint(ctx, tenantId, endpointId);
  const page = keyset(pageArgs, CreatedAtIdCursor);
  const where = { endpointId: endpoint.id, tenantId };
  const [rows, totalCount] = await Promise.all([
    ctx.db.prisma.webhookDelivery.findMany({
      where: { AND: [where, createdAtIdWhere(page)] },
      select: { ...query.select, ...DELIVERY_FIELDS } as typeof DELIVERY_FIELDS,
      orderBy: [{ createdAt: page.order }, { id: page.order }],
      take: page.size + 1,
    }),
    cappedCount(countUpTo(ctx.db, Prisma.sql`webhook_deliveries`, Prisma.sql`endpoint_id = ${endpoint.id}::uuid AND tenant_id = ${tenantId}::uuid`)),
  ]);
  return toPage(rows, page, totalCount, (row) => [row.createdAt.toISOString(), row.id]);
}

/** Queues a delivery again, now (the same event id: receivers see a duplicate they can recognise). */
export async function resendWebhookDelivery(ctx: ServiceContext, deliveryId: string) {
  const { tenantId } = requireAdmin(ctx);
  const delivery = isUuid(deliveryId) ? await ctx.db.prisma.webhookDelivery.findFirst({ where: { id: deliveryId, tenantId }, select: { id: true, endpoint: { select: { url: true } } } }) : null;
  if (!delivery) throw new AppError('NotFound', 'Webhook delivery not found.');
  return ctx.db.prisma.$transaction(async (tx) => {
    // Read under the row's lock: a resend sent twice at once (a double click) waits here and then finds the delivery
    // already due, so it changes and logs nothing; and a stale "finished" cannot reset the attempt count of a delivery
    // that a worker claimed meanwhile. "Due" allows a second: the request that won may have started a little later.
    await tx.$executeRaw`SELECT 1 FROM webhook_deliveries WHERE id = ${delivery.id}::uuid FOR NO KEY UPDATE`;
    const stored = await tx.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id }, select: DELIVERY_FIELDS });
    if (stored.status === 'pending' && stored.nextAttemptAt.getTime() <= ctx.now.getTime() + 1000) return stored;
    // A pending delivery keeps its attempt count (the fencing token of a worker that may hold it); a finished one starts over.
    const restart = stored.status === 'pending' ? {} : { attempts: 0 };
    const updated = await tx.webhookDelivery.update({ where: { id: delivery.id }, data: { status: 'pending', nextAttemptAt: ctx.now, ...restart }, select: DELIVERY_FIELDS });
    await recordAudit(tx, { tenantId, action: 'ResendWebhookDelivery', entityType: 'WebhookDelivery', entityId: delivery.id, entity: delivery.endpoint.url, details: { eventId: updated.eventId, eventType: updated.event.type } }, auditActor(ctx), ctx.now);
    return updated;
  });
}

/**
 * A `webhook.test` event for this endpoint only (whatever its filter), sent at once (deliverWebhookNow) and answered
 * with its delivery as it then stands: succeeded, failed, or pending a retry (the runs take it from there).
 */
export async function sendTestWebhookEvent(ctx: ServiceContext, endpointId: string, delivery: WebhookDeliveryOptions) {
  const { tenantId } = requireAdmin(ctx);
  const endpoint = await findEndpoint(ctx, tenantId, endpointId);
  const id = randomUUID();
  const body = eventBody({ id, type: 'webhook.test', createdAt: ctx.now, tenantId, data: { endpointId: endpoint.id, message: 'A test event sent from Keyforge.' } });
  const queued = await ctx.db.prisma.$transaction(async (tx) => {
    await tx.webhookEvent.create({ data: { id, tenantId, type: 'webhook.test', body, createdAt: ctx.now } });
    const row = await tx.webhookDelivery.create({ data: { tenantId, eventId: id, endpointId: endpoint.id, nextAttemptAt: ctx.now, createdAt: ctx.now }, select: { id: true } });
    await recordAudit(tx, { tenantId, action: 'SendTestWebhookEvent', entityType: 'WebhookEndpoint', entityId: endpoint.id, entity: endpoint.url, details: { eventId: id } }, auditActor(ctx), ctx.now);
    return row;
  });
  await deliverWebhookNow(ctx, queued.id, delivery);
  return ctx.db.prisma.webhookDelivery.findUniqueOrThrow({ where: { id: queued.id }, select: DELIVERY_FIELDS });
}
