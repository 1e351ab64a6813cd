import { Prisma } from '../../generated/prisma/client.js';
import type { ServiceContext } from '../context.js';

/**
 * Delivery of the outbox, exactly once.
 *
 * 1. Nothing is lost: an email exists only as an outbox row, committed with or before the record that it was
 *    decided (the expiry notice, the tenant's run record: runs.ts). Until a provider has accepted it, the row
 *    stays `pending`, so any crash leaves it for the next run.
 * 2. Nothing is sent twice by two workers: a worker *claims* due rows in one statement
 *    (`FOR UPDATE SKIP LOCKED`), incrementing `attempts` and moving `nextAttemptAt` a lease into the future.
 *    Other workers skip claimed rows until the lease ends; `attempts` is the fencing token, so a worker
 *    whose lease was taken over cannot overwrite the newer outcome, and right before sending it renews the
 *    lease of its rows (fenced the same way) and sends only those it still holds.
 * 3. Nothing is sent twice after a crash between the provider's acceptance and our `sent` update: every
 *    message carries the outbox id as provider metadata, and a row that was claimed before (attempts > 1)
 *    is first looked up at the provider (`findDelivered`). Found: it is marked sent with that message id,
 *    not sent again. The lease (60 s, renewed just before the send) is twice the longest a send may take
 *    (30 s client timeout), so the provider has indexed the first attempt by the time a retry looks for it;
 *    and it matches the email-delivery job's lock, so rows a dead worker held are due again by the time
 *    another worker takes the job over (within about 2 minutes of the death).
 * Errors: permanent ones (invalid or inactive recipient, malformed message) mark the row `failed` at once;
 * the rest (5xx, 429, network, account or sender problems) retry with exponential backoff — 1 min, 2, 4 …
 * capped at 6 h — and fail after MAX_ATTEMPTS.
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

export const LEASE_MS = 60_000;
export const MAX_ATTEMPTS = 10;
const BATCH = 50;

export const retryDelayMs = (attempts: number) => Math.min(60_000 * 2 ** (attempts - 1), 6 * 3600_000);

type Ctx = Pick<ServiceContext, 'db' | 'now'>;
type Claimed = OutboxMessage & { attempts: number };

/** Claims up to `limit` due rows for this worker (see 2. above); the lease runs from `leaseFrom` (default now). */
export async function claimDueEmails(ctx: Ctx, limit = BATCH, leaseFrom = ctx.now): Promise<Claimed[]> {
  const rows = await ctx.db.prisma.$queryRaw<{ id: string; kind: string; to_address: string; subject: string; html: string; text: string; attempts: number }[]>(
    Prisma.sql`UPDATE email_outbox SET attempts = attempts + 1, next_attempt_at = ${new Date(leaseFrom.getTime() + LEASE_MS)}
      WHERE id IN (SELECT id FROM email_outbox WHERE status = 'pending' AND next_attempt_at <= ${ctx.now}
                   ORDER BY next_attempt_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING id, kind, to_address, subject, html, text, attempts`,
  );
  return rows.map((row) => ({ id: row.id, kind: row.kind, to: row.to_address, subject: row.subject, html: row.html, text: row.text, attempts: row.attempts }));
}

export interface DeliveryReport {
  sent: number;
  retrying: number;
  failed: number;
  reconciled: number;
}

/** How long one delivery run keeps claiming batches: the outbox drains at the provider's pace, not 1,000 a minute. */
export const DELIVERY_BUDGET_MS = 45_000;

/** Delivers every due email (claimed in batches, for up to DELIVERY_BUDGET_MS) and records each outcome. */
export async function deliverDueEmails(ctx: Ctx, transport: MailTransport, options: { maxBatches?: number } = {}): Promise<DeliveryReport> {
  const report: DeliveryReport = { sent: 0, retrying: 0, failed: 0, reconciled: 0 };
  // `now` is when the run started; leases run from the run's time plus what has elapsed since, so a later
  // batch's lease is as long as the first one's.
  const started = Date.now();
  const elapsed = () => new Date(ctx.now.getTime() + (Date.now() - started));
  for (let batch = 0; batch < (options.maxBatches ?? Infinity) && Date.now() - started < DELIVERY_BUDGET_MS; batch++) {
    const claimed = await claimDueEmails(ctx, BATCH, elapsed());
    if (!claimed.length) break;
    await deliverClaimed(ctx, transport, claimed, report, elapsed);
    if (claimed.length < BATCH) break;
  }
  return report;
}

/** Sends claimed rows: earlier attempts are reconciled with the provider first (see 3. above). */
export async function deliverClaimed(ctx: Ctx, transport: MailTransport, claimed: Claimed[], report: DeliveryReport = { sent: 0, retrying: 0, failed: 0, reconciled: 0 }, clock = () => ctx.now) {
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
      await record(ctx, row, { ok: true, messageId: earlier }, report);
    } else toSend.push(row);
  }
  if (!toSend.length) return report;
  // Lookups may have been slow: renew the lease of the rows still ours, and send only those.
  const held = await ctx.db.prisma.$queryRaw<{ id: string }[]>(
    Prisma.sql`UPDATE email_outbox o SET next_attempt_at = ${new Date(clock().getTime() + LEASE_MS)}
      FROM unnest(${toSend.map((row) => row.id)}::uuid[], ${toSend.map((row) => row.attempts)}::int[]) AS c(id, attempts)
      WHERE o.id = c.id AND o.attempts = c.attempts AND o.status = 'pending' RETURNING o.id`,
  );
  const ours = new Set(held.map((row) => row.id));
  toSend = toSend.filter((row) => ours.has(row.id));
  if (!toSend.length) return report;
  let outcomes: SendOutcome[];
  try {
    outcomes = await transport.send(toSend);
  } catch (error) {
    outcomes = toSend.map(() => ({ ok: false, permanent: false, error: (error as Error).message }));
  }
  for (const [index, row] of toSend.entries()) await record(ctx, row, outcomes[index], report);
  return report;
}

async function record(ctx: Ctx, row: Claimed, outcome: SendOutcome, report: DeliveryReport) {
  // `attempts` fences the update: a worker whose lease was taken over changes nothing.
  const where = { id: row.id, status: 'pending' as const, attempts: row.attempts };
  if (outcome.ok) {
    report.sent++;
    await ctx.db.prisma.emailOutbox.updateMany({ where, data: { status: 'sent', sentAt: ctx.now, providerMessageId: outcome.messageId, lastError: null } });
    return;
  }
  const error = outcome.error.slice(0, 1000);
  if (outcome.permanent || row.attempts >= MAX_ATTEMPTS) {
    report.failed++;
    await ctx.db.prisma.emailOutbox.updateMany({ where, data: { status: 'failed', lastError: error } });
    return;
  }
  report.retrying++;
  await ctx.db.prisma.emailOutbox.updateMany({ where, data: { nextAttemptAt: new Date(ctx.now.getTime() + retryDelayMs(row.attempts)), lastError: error } });
}
