import http from 'node:http';
import https from 'node:https';
import { Webhook } from 'standardwebhooks';
import { Prisma } from '../../generated/prisma/client.js';
import type { ServerSecrets } from '../../crypto/secrets.js';
import { renderWebhookDisabledEmail } from '../../email/webhook-disabled.js';
import type { Logger } from '../../logger.js';
import type { SecretsContext, SystemContext } from '../context.js';
import { claimDue, drainOutbox, fenced, nextAttempt, type Claim, type OutboxPolicy } from '../leases.js';
import { recordAudit } from '../audit/audit-log.js';
import { enqueueEmails } from '../notifications/outbox.js';
import { checkLiteralHost, ForbiddenTargetError, guardedLookup } from './ssrf.js';

/**
 * Delivery of webhook events, at least once, on the outbox of leases.ts (as emails are):
 * - a worker claims due deliveries under a lease (WEBHOOK_OUTBOX), `attempts` fencing every outcome, so a worker whose
 *   lease lapsed cannot overwrite a newer outcome;
 * - a crash after the receiver answered and before the outcome was recorded sends the event again after the lease:
 *   receivers deduplicate on `webhook-id` (the event id, the same on every attempt and every resend);
 * - 2xx: succeeded. 4xx other than 408 and 429, and a refused (internal) address: failed at once. Anything else
 *   (5xx, 408, 429, 3xx, timeout, network error) is retried after RETRY_DELAYS_MS, 8 attempts in all (~24 h);
 * - an event failed for good counts against its endpoint; DISABLE_AFTER failed events in a row (no success between)
 *   disable it and email the tenant's admins. A success resets the count.
 * Requests: POST, JSON, signed by the `standardwebhooks` package (the Standard Webhooks headers), 10 s timeout,
 * redirects not followed, the response's first 1 KB kept for the delivery log. The secret and signature are never logged.
 */

export const REQUEST_TIMEOUT_MS = 10_000;
/** Wait after failed attempt n (1-based): 1 min, 5 min, 30 min, 2 h, 5 h, 8 h, 8 h; the 8th attempt is the last (~23.6 h). */
export const RETRY_DELAYS_MS = [60_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 28_800_000, 28_800_000] as const;
/** The webhook outbox's policy (leases.ts): batches are sent concurrently, for up to 45 s of each minute's run. */
export const WEBHOOK_OUTBOX: OutboxPolicy = {
  table: 'webhook_deliveries',
  leaseMs: 60_000,
  maxAttempts: RETRY_DELAYS_MS.length + 1,
  retryDelayMs: (attempts) => RETRY_DELAYS_MS[attempts - 1],
  batch: 10,
  budgetMs: 45_000,
};
export const DISABLE_AFTER = 5;
export const EXCERPT_BYTES = 1024;
const SYSTEM = { id: null, label: 'system', ip: null };

export interface WebhookDeliveryOptions {
  /** WEBHOOK_ALLOW_PRIVATE: let endpoints resolve to loopback/private/link-local addresses. */
  allowPrivate: boolean;
  /** For the link in the "endpoint disabled" email. */
  publicUrl: string;
  maxBatches?: number;
  logger?: Pick<Logger, 'warn' | 'info'>;
}

export interface WebhookDeliveryReport {
  succeeded: number;
  retrying: number;
  failed: number;
  endpointsDisabled: number;
}

interface Claimed extends Claim {
  tenantId: string;
  endpointId: string;
  eventId: string;
}

const COLUMNS = Prisma.sql`id, tenant_id AS "tenantId", endpoint_id AS "endpointId", event_id AS "eventId", attempts`;

/** Claims due deliveries (every tenant's, or only `onlyId`), each for a lease. */
export function claimDueWebhooks(ctx: SystemContext, limit = WEBHOOK_OUTBOX.batch, leaseFrom = ctx.now, onlyId?: string): Promise<Claimed[]> {
  return claimDue<Claimed>(ctx, WEBHOOK_OUTBOX, COLUMNS, { limit, leaseFrom, only: onlyId ? Prisma.sql`AND id = ${onlyId}::uuid` : undefined });
}

/** Delivers every due webhook (batches sent concurrently, for up to the policy's budget) and records each outcome. */
export async function deliverDueWebhooks(ctx: SecretsContext, options: WebhookDeliveryOptions): Promise<WebhookDeliveryReport> {
  const report: WebhookDeliveryReport = { succeeded: 0, retrying: 0, failed: 0, endpointsDisabled: 0 };
  await drainOutbox(ctx, WEBHOOK_OUTBOX, (leaseFrom) => claimDueWebhooks(ctx, WEBHOOK_OUTBOX.batch, leaseFrom), (claimed) => deliverClaimed(ctx, claimed, options, report), options.maxBatches);
  return report;
}

/**
 * Delivers one due delivery now, in the caller's request (the console's "Send test event"), claimed and recorded
 * exactly as a run would; false when a run got to it first (it is then that run's to send).
 */
export async function deliverWebhookNow(ctx: SecretsContext, deliveryId: string, options: WebhookDeliveryOptions): Promise<boolean> {
  const claimed = await claimDueWebhooks(ctx, 1, ctx.now, deliveryId);
  if (!claimed.length) return false;
  await deliverClaimed(ctx, claimed, options, { succeeded: 0, retrying: 0, failed: 0, endpointsDisabled: 0 });
  return true;
}

type Outcome =
  | { kind: 'succeeded'; code: number; timeMs: number; excerpt: string }
  | { kind: 'retry' | 'failed'; code: number | null; timeMs: number | null; excerpt: string | null; error: string };

async function deliverClaimed(ctx: SecretsContext, claimed: Claimed[], options: WebhookDeliveryOptions, report: WebhookDeliveryReport) {
  const prisma = ctx.db.prisma;
  const [events, endpoints] = await Promise.all([
    prisma.webhookEvent.findMany({ where: { id: { in: [...new Set(claimed.map((row) => row.eventId))] } }, select: { id: true, body: true } }),
    prisma.webhookEndpoint.findMany({ where: { id: { in: [...new Set(claimed.map((row) => row.endpointId))] } } }),
  ]);
  const eventById = new Map(events.map((event) => [event.id, event]));
  const endpointById = new Map(endpoints.map((endpoint) => [endpoint.id, endpoint]));
  await Promise.all(
    claimed.map(async (row) => {
      const event = eventById.get(row.eventId);
      const endpoint = endpointById.get(row.endpointId);
      let outcome: Outcome;
      if (!event || !endpoint) return; // deleted meanwhile (cascade): nothing left to record
      if (!endpoint.enabled) outcome = { kind: 'failed', code: null, timeMs: null, excerpt: null, error: 'endpoint disabled' };
      else outcome = await send(endpoint.url, decryptSecret(ctx.secrets, endpoint.secretEncrypted), event.id, event.body, options.allowPrivate);
      await record(ctx, row, outcome, options, report);
    }),
  );
}

const decryptSecret = (secrets: ServerSecrets, sealed: string) => secrets.decrypt(sealed);

/** One POST. Never throws: every failure becomes an outcome. */
export async function send(url: string, secret: string, id: string, body: string, allowPrivate: boolean): Promise<Outcome> {
  let target: URL;
  try {
    target = new URL(url);
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error('not an http(s) URL');
    checkLiteralHost(target.hostname, allowPrivate);
  } catch (error) {
    return { kind: 'failed', code: null, timeMs: null, excerpt: null, error: (error as Error).message };
  }
  // The timestamp is the moment of sending (receivers compare it with their clock to refuse replays).
  const timestamp = new Date();
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'Keyforge-Webhooks/1',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    // `v1,` + base64 HMAC-SHA256 over `id.timestamp.body` under the base64 key after `whsec_`.
    'webhook-signature': new Webhook(secret).sign(id, timestamp, body),
    'content-length': String(Buffer.byteLength(body)),
  };
  const started = performance.now();
  return new Promise<Outcome>((resolve) => {
    const client = target.protocol === 'https:' ? https : http;
    let settled = false;
    const done = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const request = client.request(target, { method: 'POST', headers, lookup: guardedLookup(allowPrivate), agent: false }, (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = () => {
        const code = response.statusCode ?? 0;
        const timeMs = Math.round(performance.now() - started);
        const excerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
        if (code >= 200 && code < 300) done({ kind: 'succeeded', code, timeMs, excerpt });
        else done({ kind: code >= 400 && code < 500 && code !== 408 && code !== 429 ? 'failed' : 'retry', code, timeMs, excerpt, error: `HTTP ${code}` });
        response.destroy();
      };
      response.on('data', (chunk: Buffer) => {
        if (size < EXCERPT_BYTES) chunks.push(chunk);
        size += chunk.length;
        if (size >= EXCERPT_BYTES) finish();
      });
      response.on('end', finish);
      response.on('error', finish);
    });
    const timer = setTimeout(() => {
      request.destroy(new Error(`timed out after ${REQUEST_TIMEOUT_MS / 1000} s`));
    }, REQUEST_TIMEOUT_MS);
    request.on('error', (error) => {
      const refused = error instanceof ForbiddenTargetError;
      done({ kind: refused ? 'failed' : 'retry', code: null, timeMs: refused ? null : Math.round(performance.now() - started), excerpt: null, error: error.message.slice(0, 500) });
    });
    request.end(body);
  });
}

async function record(ctx: SecretsContext, row: Claimed, outcome: Outcome, options: WebhookDeliveryOptions, report: WebhookDeliveryReport) {
  const prisma = ctx.db.prisma;
  const where = fenced(row);
  const response = { lastAttemptAt: ctx.now, responseCode: outcome.code, responseTimeMs: outcome.timeMs, responseBodyExcerpt: outcome.excerpt };
  if (outcome.kind === 'succeeded') {
    const { count } = await prisma.webhookDelivery.updateMany({ where, data: { ...response, status: 'succeeded', deliveredAt: ctx.now, lastError: null } });
    if (count) {
      report.succeeded++;
      await prisma.webhookEndpoint.updateMany({ where: { id: row.endpointId, consecutiveFailures: { gt: 0 } }, data: { consecutiveFailures: 0 } });
    }
    return;
  }
  const next = nextAttempt(WEBHOOK_OUTBOX, row.attempts, ctx.now, outcome.kind === 'failed');
  if (next) {
    const { count } = await prisma.webhookDelivery.updateMany({ where, data: { ...response, nextAttemptAt: next, lastError: outcome.error } });
    if (count) report.retrying++;
    return;
  }
  const { count } = await prisma.webhookDelivery.updateMany({ where, data: { ...response, status: 'failed', lastError: outcome.error } });
  if (!count) return;
  report.failed++;
  if (outcome.error === 'endpoint disabled') return;
  await countFailure(ctx, row, outcome.error, options, report);
}

/** One more event failed for good: at DISABLE_AFTER in a row, disable the endpoint and email the tenant's admins. */
async function countFailure(ctx: SecretsContext, row: Claimed, lastError: string, options: WebhookDeliveryOptions, report: WebhookDeliveryReport) {
  const prisma = ctx.db.prisma;
  const [endpoint] = await prisma.$queryRaw<{ id: string; url: string; consecutive_failures: number }[]>`
    UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1 WHERE id = ${row.endpointId}::uuid
    RETURNING id, url, consecutive_failures`;
  if (!endpoint || endpoint.consecutive_failures < DISABLE_AFTER) return;
  const reason = `${endpoint.consecutive_failures} events in a row failed; last: ${lastError}`.slice(0, 1000);
  const tenant = await prisma.tenant.findUniqueOrThrow({ where: { id: row.tenantId }, select: { name: true } });
  const admins = await prisma.user.findMany({ where: { tenantId: row.tenantId, role: 'CompanyAdmin', deactivatedAt: null }, select: { email: true } });
  const settingsUrl = `${options.publicUrl}/settings/webhooks`;
  const emails = await Promise.all(
    admins.map(async (admin) => {
      const rendered = await renderWebhookDisabledEmail({ tenantName: tenant.name, to: admin.email, url: endpoint.url, failedEvents: endpoint.consecutive_failures, lastError, now: ctx.now, settingsUrl });
      return { tenantId: row.tenantId, kind: 'webhook-disabled' as const, idempotencyKey: `webhook-disabled:${endpoint.id}:${ctx.now.getTime()}:${admin.email}`, to: admin.email, ...rendered };
    }),
  );
  // Disabling and the emails commit together; only the worker that flips `enabled` writes them.
  const disabled = await prisma.$transaction(async (tx) => {
    const { count } = await tx.webhookEndpoint.updateMany({ where: { id: endpoint.id, enabled: true }, data: { enabled: false, disabledReason: reason } });
    if (!count) return false;
    const details = { url: endpoint.url, failedEvents: endpoint.consecutive_failures };
    await recordAudit(tx, { tenantId: row.tenantId, action: 'DisableWebhookEndpoint', entityType: 'WebhookEndpoint', entityId: endpoint.id, entity: endpoint.url, details }, SYSTEM, ctx.now);
    await enqueueEmails(tx, emails, ctx.now);
    return true;
  });
  if (disabled) {
    report.endpointsDisabled++;
    options.logger?.warn({ endpointId: endpoint.id, tenantId: row.tenantId, failedEvents: endpoint.consecutive_failures }, 'webhook endpoint disabled after repeated failures');
  }
}

/**
 * Deletes events (with their deliveries) older than `keepDays` that have nothing pending, at most `limit` per call
 * (the housekeeping job runs every 10 minutes). The delivery log therefore covers the last 35 days.
 */
export async function purgeWebhookEvents(ctx: SystemContext, keepDays = 35, limit = 5_000): Promise<number> {
  const before = new Date(ctx.now.getTime() - keepDays * 86_400_000);
  return ctx.db.prisma.$executeRaw`
    DELETE FROM webhook_events WHERE id IN (
      SELECT e.id FROM webhook_events e
       WHERE e.created_at < ${before}
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending')
       LIMIT ${limit})`;
}
