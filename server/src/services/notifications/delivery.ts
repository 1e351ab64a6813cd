import { Prisma } from '../../generated/prisma/client.js';
import { currentServerSecrets, type ServerSecrets } from '../../crypto/secrets.js';
import type { SystemContext } from '../context.js';
import { redactSingleUseTokens, renderToken, unsealEmailToken } from './sealed-token.js';
import { claimDue, drainOutbox, fenced, nextAttempt, renewClaims, type Claim, type OutboxPolicy } from '../leases.js';

/**
 * Delivery of the outbox, exactly once.
 *
 * 1. Nothing is lost: an email exists only as an outbox row, committed with or before the record that it was
 *    decided (the expiry notice, the tenant's run record: runs.ts). Until a provider has accepted it, the row
 *    stays `pending`, so any crash leaves it for the next run.
 * 2. Nothing is sent twice by two workers: a worker *claims* due rows under a lease, `attempts` fencing
 *    every outcome (the outbox of leases.ts), and right before sending it renews the lease of its rows
 *    (fenced the same way) and sends only those it still holds.
 * 3. Nothing is sent twice after a crash between the provider's acceptance and our `sent` update: every
 *    message carries the outbox id as provider metadata, and a row that was claimed before (attempts > 1)
 *    is first looked up at the provider (`findDelivered`). Found: it is marked sent with that message id,
 *    not sent again. The lease (60 s, renewed just before the send) is twice the longest a send may take
 *    (30 s client timeout), so the provider has indexed the first attempt by the time a retry looks for it;
 *    and it matches the email-delivery job's lock, so rows a dead worker held are due again by the time
 *    another worker takes the job over (within about 2 minutes of the death).
 * Errors: permanent ones (invalid or inactive recipient, malformed message) mark the row `failed` at once;
 * the rest (5xx, 429, network, account or sender problems) retry with exponential backoff — 1 min, 2, 4 …
 * capped at 6 h — and fail after `maxAttempts` (EMAIL_OUTBOX).
 */

export interface OutboxMessage {
  id: string;
  kind: string;
  to: string;
  subject: string;
  html: string;
  text: string;
}

export type SendOutcome = { ok: true; messageId: string } | { ok: false; permanent: boolean; error: string };

/** A mail provider. Holds no policy: it sends, reports per message, and finds earlier deliveries. */
export interface MailTransport {
  readonly name: 'postmark' | 'development';
  /** One outcome per message, in order. */
  send(messages: OutboxMessage[]): Promise<SendOutcome[]>;
  /** The provider's message id of an earlier delivery of this outbox row, or null if it has none. */
  findDelivered(outboxId: string): Promise<string | null>;
}

/** The email outbox's policy (see leases.ts for how claims, leases and fencing work). */
export const EMAIL_OUTBOX: OutboxPolicy = {
  table: 'email_outbox',
  leaseMs: 60_000,
  maxAttempts: 10,
  retryDelayMs: (attempts) => Math.min(60_000 * 2 ** (attempts - 1), 6 * 3600_000),
  batch: 50,
  // The outbox drains at the provider's pace, not 1,000 a minute.
  budgetMs: 45_000,
};

type Claimed = OutboxMessage & Claim & { idempotencyKey: string; sealedToken: string | null };

const COLUMNS = Prisma.sql`id, kind, to_address AS "to", subject, html, text, attempts, idempotency_key AS "idempotencyKey", sealed_token AS "sealedToken"`;

/** Emails that carry a single-use token (sealed-token.ts). */
const TOKEN_KINDS = new Set(['invitation', 'password-reset']);

/** Delivery's context: the server secret opens sealed tokens (the process's own when the caller has none at hand). */
type DeliveryContext = SystemContext & { secrets?: ServerSecrets };

/** Claims up to `limit` due rows for this worker (see 2. above); the lease runs from `leaseFrom` (default now). */
export function claimDueEmails(ctx: SystemContext, limit = EMAIL_OUTBOX.batch, leaseFrom = ctx.now): Promise<Claimed[]> {
  return claimDue<Claimed>(ctx, EMAIL_OUTBOX, COLUMNS, { limit, leaseFrom });
}

export interface DeliveryReport {
  sent: number;
  retrying: number;
  failed: number;
  reconciled: number;
}

/** Delivers every due email (claimed in batches, for up to the policy's budget) and records each outcome. */
export async function deliverDueEmails(ctx: DeliveryContext, transport: MailTransport, options: { maxBatches?: number } = {}): Promise<DeliveryReport> {
  const report: DeliveryReport = { sent: 0, retrying: 0, failed: 0, reconciled: 0 };
  await drainOutbox(ctx, EMAIL_OUTBOX, (leaseFrom) => claimDueEmails(ctx, EMAIL_OUTBOX.batch, leaseFrom), (claimed, clock) => deliverClaimed(ctx, transport, claimed, report, clock), options.maxBatches);
  return report;
}

/** Sends claimed rows: earlier attempts are reconciled with the provider first (see 3. above). */
export async function deliverClaimed(ctx: DeliveryContext, transport: MailTransport, claimed: Claimed[], report: DeliveryReport = { sent: 0, retrying: 0, failed: 0, reconciled: 0 }, clock = () => ctx.now) {
  let toSend: Claimed[] = [];
  for (const row of claimed) {
    if (row.attempts === 1) {
      toSend.push(row);
      continue;
    }
    let earlier: string | null;
    try {
      earlier = await transport.findDelivered(row.id);
    } catch (error) {
      // Unsure whether it went out: never send blind; look again later.
      await record(ctx, row, { ok: false, permanent: false, error: `reconcile: ${(error as Error).message}` }, report);
      continue;
    }
    if (earlier) {
      report.reconciled++;
      await record(ctx, row, { ok: true, messageId: earlier }, report, transport);
    } else toSend.push(row);
  }
  if (!toSend.length) return report;
  // Lookups may have been slow: renew the lease of the rows still ours, and send only those.
  const ours = await renewClaims(ctx, EMAIL_OUTBOX, toSend, clock());
  toSend = toSend.filter((row) => ours.has(row.id));
  if (!toSend.length) return report;
  // The messages as the addressees receive them: a sealed token rendered in (never written back).
  const messages: OutboxMessage[] = [];
  const rendered: Claimed[] = [];
  for (const row of toSend) {
    const message = renderMessage(ctx, row);
    if (message) {
      messages.push(message);
      rendered.push(row);
    } else await record(ctx, row, { ok: false, permanent: true, error: 'the sealed token of this email cannot be opened with this server secret' }, report, transport);
  }
  if (!messages.length) return report;
  let outcomes: SendOutcome[];
  try {
    outcomes = await transport.send(messages);
  } catch (error) {
    outcomes = messages.map(() => ({ ok: false, permanent: false, error: (error as Error).message }));
  }
  for (const [index, row] of rendered.entries()) await record(ctx, row, outcomes[index], report, transport);
  return report;
}

/** The message of a row, its sealed token rendered into the bodies; null when the token cannot be opened. */
function renderMessage(ctx: DeliveryContext, row: Claimed): OutboxMessage | null {
  const message: OutboxMessage = { id: row.id, kind: row.kind, to: row.to, subject: row.subject, html: row.html, text: row.text };
  if (!row.sealedToken) return message;
  try {
    const token = unsealEmailToken(ctx.secrets ?? currentServerSecrets(), { idempotencyKey: row.idempotencyKey, to: row.to, sealedToken: row.sealedToken });
    return { ...message, html: renderToken(row.html, token), text: renderToken(row.text, token) };
  } catch {
    return null;
  }
}

/**
 * What a token email keeps once it is delivered or has failed for good: no sealed token and no token in its bodies
 * (a row written before tokens were sealed carried it in clear). The development outbox is the mailbox when nothing
 * is sent: it keeps the sealed token for the operator's `outbox:list --body` (the token expires by itself).
 */
function scrubbed(row: Claimed, transport: MailTransport | null) {
  if (!TOKEN_KINDS.has(row.kind) || transport?.name === 'development') return {};
  return { sealedToken: null, html: redactSingleUseTokens(row.html), text: redactSingleUseTokens(row.text) };
}

async function record(ctx: SystemContext, row: Claimed, outcome: SendOutcome, report: DeliveryReport, transport: MailTransport | null = null) {
  // Fenced by `attempts`: a worker whose lease was taken over changes nothing.
  const where = fenced(row);
  if (outcome.ok) {
    report.sent++;
    await ctx.db.prisma.emailOutbox.updateMany({ where, data: { status: 'sent', sentAt: ctx.now, providerMessageId: outcome.messageId, lastError: null, ...scrubbed(row, transport) } });
    return;
  }
  const error = outcome.error.slice(0, 1000);
  const retryAt = nextAttempt(EMAIL_OUTBOX, row.attempts, ctx.now, outcome.permanent);
  if (!retryAt) {
    report.failed++;
    await ctx.db.prisma.emailOutbox.updateMany({ where, data: { status: 'failed', lastError: error, ...scrubbed(row, null) } });
    return;
  }
  report.retrying++;
  await ctx.db.prisma.emailOutbox.updateMany({ where, data: { nextAttemptAt: retryAt, lastError: error } });
}
