import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Prisma } from '../generated/prisma/client.js';
import type { SystemContext } from './context.js';

/**
 * How a worker holds work so that another one takes it over when it dies: one module, with each queue's policy
 * passed in (docs/operate/jobs-and-email.md, "Webhooks"). Two shapes:
 *
 * - An outbox (`email_outbox`, `webhook_deliveries`): rows `pending` until their outcome is recorded. A worker
 *   claims due rows in one statement (`FOR UPDATE SKIP LOCKED`), incrementing `attempts` and moving
 *   `next_attempt_at` a lease ahead, so other workers skip them until the lease lapses. `attempts` is the fencing
 *   token: an outcome (or a lease renewal) is written only while `attempts` is still the one claimed, so a worker
 *   whose lease was taken over changes nothing. A failed attempt waits `retryDelayMs(attempts)`, and the row fails
 *   for good after `maxAttempts`.
 * - A held job (`job_runs`, `bulk_jobs`): one row with `lease_owner` and `leased_until` (the database's clock),
 *   renewed every third of the lease while the job runs and released when it stops.
 */

/** The one lapsed-lease rule, for every lease: a lease that ends at `end` has lapsed at `end`. */
export const leaseLapsed = (end: Date, now: Date) => end.getTime() <= now.getTime();

/** The same rule as SQL over a lease-end column, at `now`, or at the database's clock when `now` is omitted. */
export const leaseLapsedSql = (column: Prisma.Sql, now?: Date) => (now ? Prisma.sql`${column} <= ${now}` : Prisma.sql`${column} <= clock_timestamp()`);

/** The same rule as a Prisma filter on a lease-end field: the lease has not lapsed at `now` (it still holds). */
export const leaseHeldFilter = (now: Date) => ({ gt: now });

// ─── Outboxes ──────────────────────────────────────────────────────────────────────────────────────

/** How often, and how far apart, failed work is tried again (an outbox row, a tenant of a scheduled run). */
export interface RetryPolicy {
  /** Attempts before it fails for good. */
  maxAttempts: number;
  /** The wait after failed attempt `attempts` (1-based). */
  retryDelayMs(attempts: number): number;
}

export interface OutboxPolicy extends RetryPolicy {
  /** The outbox table: its rows have `id`, `status` ('pending' until done), `attempts` and `next_attempt_at`. */
  table: 'email_outbox' | 'webhook_deliveries';
  /** How long a claim holds a row. */
  leaseMs: number;
  /** Rows claimed at once. */
  batch: number;
  /** How long one run keeps claiming batches (the jobs run every minute). */
  budgetMs: number;
}

/** A claimed row: `attempts` is its fencing token. */
export interface Claim {
  id: string;
  attempts: number;
}

/**
 * Claims up to `limit` due rows (pending, `next_attempt_at` reached: never claimed, due a retry, or a lapsed lease),
 * returning `columns` of each; the lease runs from `leaseFrom`. `only` narrows the claim (one row by id).
 */
export function claimDue<Row extends Claim>(ctx: SystemContext, policy: OutboxPolicy, columns: Prisma.Sql, options: { limit?: number; leaseFrom?: Date; only?: Prisma.Sql } = {}): Promise<Row[]> {
  const table = Prisma.raw(policy.table);
  const leaseEnd = new Date((options.leaseFrom ?? ctx.now).getTime() + policy.leaseMs);
  return ctx.db.prisma.$queryRaw<Row[]>`
    UPDATE ${table} SET attempts = attempts + 1, next_attempt_at = ${leaseEnd}
     WHERE id IN (SELECT id FROM ${table} WHERE status = 'pending' AND ${leaseLapsedSql(Prisma.sql`next_attempt_at`, ctx.now)} ${options.only ?? Prisma.empty}
                  ORDER BY next_attempt_at LIMIT ${options.limit ?? policy.batch} FOR UPDATE SKIP LOCKED)
    RETURNING ${columns}`;
}

/** Renews the lease of claimed rows from `from`, fenced by `attempts`; returns the ids still held (only those may go out). */
export async function renewClaims(ctx: SystemContext, policy: OutboxPolicy, claims: Claim[], from: Date): Promise<Set<string>> {
  if (!claims.length) return new Set();
  const held = await ctx.db.prisma.$queryRaw<{ id: string }[]>`
    UPDATE ${Prisma.raw(policy.table)} o SET next_attempt_at = ${new Date(from.getTime() + policy.leaseMs)}
      FROM unnest(${claims.map((row) => row.id)}::uuid[], ${claims.map((row) => row.attempts)}::int[]) AS c(id, attempts)
     WHERE o.id = c.id AND o.attempts = c.attempts AND o.status = 'pending' RETURNING o.id`;
  return new Set(held.map((row) => row.id));
}

/** The Prisma `where` of an outcome: this row, still pending, still under this claim. */
export const fenced = (claim: Claim) => ({ id: claim.id, status: 'pending' as const, attempts: claim.attempts });

/** After failed attempt `attempts`: when to try again, or null when it fails for good (permanent, or out of attempts). */
export function nextAttempt(policy: RetryPolicy, attempts: number, now: Date, permanent = false): Date | null {
  if (permanent || attempts >= policy.maxAttempts) return null;
  return new Date(now.getTime() + policy.retryDelayMs(attempts));
}

/**
 * Claims and handles batches until the outbox has nothing due, for up to the policy's budget (or `maxBatches`).
 * `now` is when the run started; each batch is handed a clock of the run's time plus what has elapsed since, and
 * its lease runs from it, so a later batch's lease is as long as the first one's.
 */
export async function drainOutbox<Row extends Claim>(
  ctx: SystemContext,
  policy: OutboxPolicy,
  claim: (leaseFrom: Date) => Promise<Row[]>,
  handle: (claimed: Row[], clock: () => Date) => Promise<unknown>,
  maxBatches = Infinity,
): Promise<void> {
  const started = Date.now();
  const clock = () => new Date(ctx.now.getTime() + (Date.now() - started));
  for (let batch = 0; batch < maxBatches && Date.now() - started < policy.budgetMs; batch++) {
    const claimed = await claim(clock());
    if (!claimed.length) break;
    await handle(claimed, clock);
    if (claimed.length < policy.batch) break;
  }
}

// ─── Held jobs ─────────────────────────────────────────────────────────────────────────────────────

/** Names the process holding a lease (host, pid, a random suffix per hold). */
export const leaseOwner = () => `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

/** A lease end from the database's clock (so process clocks and test clocks do not matter). */
export const leaseUntil = (leaseMs: number) => Prisma.sql`clock_timestamp() + ${`${leaseMs} milliseconds`}::interval`;

/**
 * Renews a held lease every third of `leaseMs` until the returned stop is called; a failed renewal is logged and
 * retried at the next tick (the lease outlives two missed renewals).
 */
export function keepLease(leaseMs: number, renew: () => Promise<unknown>, onError: (error: Error) => void): () => void {
  const heartbeat = setInterval(() => renew().catch(onError), leaseMs / 3);
  heartbeat.unref();
  return () => clearInterval(heartbeat);
}

