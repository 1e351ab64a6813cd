import { randomUUID } from 'node:crypto';
import { Prisma } from '../../generated/prisma/client.js';

/**
 * Webhook events: written by `emitEvent` inside the transaction of the change they report (so a change that rolls
 * back leaves no event, and a committed one always has its event), with one delivery row per enabled endpoint of
 * the tenant whose filter matches. The delivery job (delivery.ts) sends them afterwards.
 */

export const WEBHOOK_EVENT_TYPES = [
  'license.created',
  'license.updated',
  'license.suspended',
  'license.reinstated',
  'license.renewed',
  'license.transferred',
  'license.key_reissued',
  'license.revoked',
  'license.expiring',
  'license.expired',
  'license.seats_exhausted',
  'license.seats_kept',
  'activation.created',
  'activation.deactivated',
  'floating.checkout_denied',
  'meter.quota_reached',
  'user.created',
  'user.updated',
  'user.removed',
  'api_key.created',
  'api_key.removed',
  'release.published',
  'release.yanked',
  'audit.checkpoint',
  'webhook.test',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Repeated signals (seats exhausted, checkout denied, quota reached) give at most one event per license and window. */
export const THROTTLE_WINDOW_MS = 3600_000;

type Tx = Pick<Prisma.TransactionClient, '$executeRaw' | '$queryRaw'>;

export interface EmitOptions {
  /** Emit at most one event with this key per THROTTLE_WINDOW_MS (the window's start is appended). */
  throttleKey?: string;
}

/** The body every receiver gets; the same bytes on every attempt. */
export function eventBody(event: { id: string; type: string; createdAt: Date; tenantId: string; data: unknown }): string {
  return JSON.stringify({ id: event.id, type: event.type, createdAt: event.createdAt.toISOString(), tenantId: event.tenantId, data: event.data });
}

/** The enabled endpoints of a tenant subscribed to `type`: the SQL function webhook_subscribers (an empty filter: every type except tests). */
const subscribers = (tenantId: string, type: string) => Prisma.sql`SELECT s.id FROM webhook_subscribers(${tenantId}::uuid, ${type}) AS s(id)`;

/**
 * Writes one event and its deliveries in `tx` (the transaction of the change), in one statement (the SQL function
 * webhook_emit, which the activation's statement also calls). Nothing is written when no enabled endpoint of the
 * tenant subscribes to the type (most tenants have none: an index probe), nor when a throttled event was already
 * written in this window.
 */
export async function emitEvent(tx: Tx, tenantId: string, type: WebhookEventType, data: unknown, now: Date, options: EmitOptions = {}): Promise<void> {
  const id = randomUUID();
  const dedupeKey = options.throttleKey ? `${type}:${options.throttleKey}:${Math.floor(now.getTime() / THROTTLE_WINDOW_MS)}` : null;
  const body = eventBody({ id, type, createdAt: now, tenantId, data });
  await tx.$executeRaw`SELECT webhook_emit(${tenantId}::uuid, ${type}, ${id}::uuid, ${body}, ${dedupeKey}::text, ${now}::timestamptz)`;
}

/**
 * Many events of one type in one statement (the expiry job's pages): `dedupeKey` (optional, per item) makes a rerun
 * add nothing. Returns how many events were new (0 when no endpoint subscribes).
 */
export async function emitEvents(tx: Tx, tenantId: string, type: WebhookEventType, items: { data: unknown; dedupeKey?: string }[], now: Date): Promise<number> {
  if (!items.length) return 0;
  const ids = items.map(() => randomUUID());
  const bodies = items.map((item, index) => eventBody({ id: ids[index], type, createdAt: now, tenantId, data: item.data }));
  const keys = items.map((item) => (item.dedupeKey ? `${type}:${item.dedupeKey}` : null));
  const [row] = await tx.$queryRaw<{ n: number }[]>`
    WITH targets AS (${subscribers(tenantId, type)}),
    events AS (
      INSERT INTO webhook_events (id, tenant_id, type, body, dedupe_key, created_at)
      SELECT e.id, ${tenantId}::uuid, ${type}, e.body, e.dedupe_key, ${now}
        FROM unnest(${ids}::uuid[], ${bodies}::text[], ${keys}::text[]) AS e(id, body, dedupe_key)
       WHERE EXISTS (SELECT 1 FROM targets)
      ON CONFLICT (dedupe_key) DO NOTHING RETURNING id
    ),
    deliveries AS (
      INSERT INTO webhook_deliveries (id, tenant_id, event_id, endpoint_id, next_attempt_at, created_at)
      SELECT gen_random_uuid(), ${tenantId}::uuid, events.id, targets.id, ${now}, ${now} FROM events CROSS JOIN targets
      ON CONFLICT (event_id, endpoint_id) DO NOTHING
    )
    SELECT count(*)::int AS n FROM events`;
  return row.n;
}

// Payload shapes: the field names of the REST API and GraphQL (camelCase, ISO dates, never a key or secret).

export function licenseData(license: {
  id: string;
  productId: string;
  keyHint: string;
  status: string;
  maxActivations: number;
  currentActivations: number;
  expiresAt: Date | null;
  isTrial: boolean;
  customerEmail: string | null;
  floatingSeats?: number | null;
}) {
  return {
    licenseId: license.id,
    productId: license.productId,
    keyHint: license.keyHint,
    status: license.status,
    maxActivations: license.maxActivations,
    currentActivations: license.currentActivations,
    expiresAt: license.expiresAt?.toISOString() ?? null,
    isTrial: license.isTrial,
    customerEmail: license.customerEmail,
    floatingSeats: license.floatingSeats ?? null,
  };
}

export function activationData(activation: { id: string; licenseId: string; deviceId: string | null; deviceName: string | null; createdAt: Date; deactivatedAt?: Date | null }) {
  return {
    activationId: activation.id,
    licenseId: activation.licenseId,
    deviceId: activation.deviceId,
    deviceName: activation.deviceName,
    createdAt: activation.createdAt.toISOString(),
    deactivatedAt: activation.deactivatedAt?.toISOString() ?? null,
  };
}
