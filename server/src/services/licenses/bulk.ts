import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { currentServerSecrets } from '../../crypto/secrets.js';
import type { Database } from '../../db/database.js';
import { AppError } from '../../domain/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import type { Logger } from '../../logger.js';
import { requireAdmin, requireMember, type RequestMeta, type ServiceActor } from '../auth/actor.js';
import type { ServiceContext, SystemContext } from '../context.js';
import { keepLease, leaseLapsedSql, leaseOwner, leaseUntil } from '../leases.js';
import { isUuid, type Count } from '../listing.js';
import { parseInput, StorableDate } from '../validation.js';
import { IMPORT_ACTION, runImportRows } from './import.js';
import { reinstateLicense, renewLicense, suspendLicense, transferLicense } from './lifecycle.js';
import { countLicenses, licenseConditions, LicenseFilterSchema, revokeLicense, type LicenseFilter } from './management.js';

// Bulk actions (docs/integrate/management-api.md "Bulk actions"): suspend, reinstate, revoke, renew or transfer a selection of licenses (up
// to MAX_SELECTED ids) or every license matching a filter, as a background job. The selection is fixed when the
// job is queued (bulk_job_items); the bulk-license-jobs job works through it with the single-license service
// functions, as the person who asked, so each change is audited and emitted exactly like a single one.
//
// Crash safety: a worker holds a job by a lease it renews (a held job of services/leases.ts, like the expiry run);
// when its worker dies the lease lapses and another worker goes on with the items still pending. An item whose
// change committed just before the crash is done again, and the single-license functions make that a no-op (their
// update is conditional on the old state: suspending a suspended license writes nothing, revoking twice writes
// nothing, a renewal to the same date is recognised here), so no license is changed, audited or emitted twice.

export const BULK_ACTIONS = ['suspend', 'reinstate', 'revoke', 'renew', 'transfer'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];
/** Licenses a selection by id may name (the console's page); "all matching" has no limit. */
export const MAX_SELECTED = 1_000;
export const BULK_LEASE_MS = 60_000;
const ITEM_BATCH = 100;

const SelectionSchema = z
  .object({
    licenseIds: z.array(z.string().trim().max(100)).min(1).max(MAX_SELECTED).nullish(),
    filter: LicenseFilterSchema.nullish(),
  })
  .refine((selection) => !selection.licenseIds !== !selection.filter, { message: 'give either licenseIds or filter', path: ['licenseIds'] });
export type BulkSelection = { licenseIds?: string[] | null; filter?: LicenseFilter | null };

const StartSchema = z.discriminatedUnion('action', [
  z.object({ action: z.enum(['suspend', 'reinstate', 'revoke']) }),
  z.object({ action: z.literal('renew'), expiresAt: StorableDate }),
  z.object({ action: z.literal('transfer'), customerEmail: z.string().trim().pipe(z.email().max(320)) }),
]);
export type BulkStartInput = BulkSelection & { action: BulkAction; expiresAt?: Date | string | null; customerEmail?: string | null };

/** The licenses of the caller's company the selection names, as SQL over `licenses`. */
async function selectionConditions(ctx: ServiceContext, tenantId: string, selection: z.output<typeof SelectionSchema>): Promise<Prisma.Sql> {
  if (selection.filter) return licenseConditions(ctx, tenantId, selection.filter);
  return idsConditions(tenantId, selection.licenseIds!);
}

const idsConditions = (tenantId: string, licenseIds: string[]) => Prisma.sql`tenant_id = ${tenantId}::uuid AND id = ANY(${licenseIds.filter(isUuid)}::uuid[])`;

/**
 * How many licenses a bulk action on this selection would change (the confirmation states it). Any member.
 * With `cap`, a filter's licenses are counted up to the cap: past it the answer is `{ totalCount: cap,
 * totalCountCapped: true }` — more than `cap` (the console says "more than 10,000"); an exact count of a
 * 500,000-license company's matches costs hundreds of milliseconds. Selected ids (at most 1,000) are always counted exactly.
 */
export async function countBulkSelection(ctx: ServiceContext, input: BulkSelection, cap?: number): Promise<Count> {
  const tenantId = requireMember(ctx);
  const selection = parseInput(SelectionSchema, input);
  if (selection.filter) return countLicenses(ctx, tenantId, selection.filter, cap);
  const [row] = await ctx.db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM licenses WHERE ${idsConditions(tenantId, selection.licenseIds!)}`;
  return { totalCount: row.n, totalCountCapped: false };
}

/** Who asked, stored with the job: the changes are made, and audited, as theirs. */
interface RequestedBy {
  actor: ServiceActor;
  meta: RequestMeta;
}

/**
 * Queues a bulk action (CompanyAdmin) on the licenses the selection names now; a later license is not part of it.
 * Returns the job (its `total`); the caller wakes a worker. A selection matching nothing is InvalidRequest.
 */
export async function startBulkLicenseAction(ctx: ServiceContext, input: BulkStartInput) {
  const admin = requireAdmin(ctx);
  const selection = parseInput(SelectionSchema, { licenseIds: input.licenseIds, filter: input.filter });
  const action = parseInput(StartSchema, { action: input.action, expiresAt: input.expiresAt ?? undefined, customerEmail: input.customerEmail ?? undefined });
  if (action.action === 'renew' && action.expiresAt.getTime() <= ctx.now.getTime()) {
    throw new AppError('InvalidRequest', 'Invalid input: expiresAt: must be in the future', { fields: { expiresAt: 'must be in the future' } });
  }
  const { action: name, ...params } = action;
  const requestedBy: RequestedBy = { actor: admin, meta: ctx.meta };
  const conditions = await selectionConditions(ctx, admin.tenantId, selection);
  const id = randomUUID();
  const total = await ctx.db.prisma.$transaction(async (tx) => {
    await tx.bulkJob.create({
      data: { id, tenantId: admin.tenantId, action: name, params: params as Prisma.InputJsonObject, requestedBy: requestedBy as unknown as Prisma.InputJsonObject, total: 0, createdAt: ctx.now, leasedUntil: ctx.now },
    });
    const count = await tx.$executeRaw`INSERT INTO bulk_job_items (job_id, license_id) SELECT ${id}::uuid, id FROM licenses WHERE ${conditions}`;
    if (count === 0) throw new AppError('InvalidRequest', 'No license matches this selection.', { fields: { licenseIds: 'matches no license' } });
    await tx.bulkJob.update({ where: { id }, data: { total: count } });
    return count;
  });
  return { ...(await getBulkJob(ctx, id))!, total };
}

/** The columns the API shows of a bulk job: not who asked (the actor and request meta) nor the worker's lease. */
export const BULK_JOB_COLUMNS = { id: true, tenantId: true, action: true, total: true, done: true, failed: true, createdAt: true, finishedAt: true } as const;

/** A bulk job of the caller's company, or null; `query`: what a caller wants loaded with it (the GraphQL layer's planned selection). */
export async function getBulkJob(ctx: ServiceContext, id: string, query: { select?: Prisma.BulkJobSelect } = {}) {
  const tenantId = requireMember(ctx);
  if (!isUuid(id)) return null;
  return ctx.db.prisma.bulkJob.findFirst({ where: { id, tenantId, action: { not: IMPORT_ACTION } }, select: { ...query.select, ...BULK_JOB_COLUMNS } as typeof BULK_JOB_COLUMNS });
}

/** The failed licenses of a bulk job (the reason each), at most `first`. */
export async function bulkJobFailures(ctx: ServiceContext, job: { id: string; tenantId: string }, first = 20) {
  if (requireMember(ctx) !== job.tenantId) return [];
  const rows = await ctx.db.prisma.$queryRaw<{ licenseId: string; keyHint: string; error: string }[]>`
    SELECT i.license_id::text AS "licenseId", l.key_hint AS "keyHint", i.error FROM bulk_job_items i JOIN licenses l ON l.id = i.license_id
     WHERE i.job_id = ${job.id}::uuid AND i.status = 'failed' ORDER BY i.license_id LIMIT ${Math.min(Math.max(first, 1), 100)}`;
  return rows;
}

/** The bulk-license-jobs job's context: system-only (each change is then made as the person who asked). */
export interface BulkRunContext extends SystemContext {
  logger?: Logger;
  /** Tests: called before each license (an import: each row's line) (a throw stands for the worker dying there). */
  failpoint?: (jobId: string, item: string) => void | Promise<void>;
}

/**
 * Works through every bulk job that is unfinished and not held by a live worker (new ones, and those of a worker
 * that died), one at a time. Returns what it did.
 */
/**
 * Runs the due bulk jobs in this process until `jobId` has finished (the operator CLI, which has no worker to wait
 * for); a job another process holds under its lease is waited for, polling every `pollMs`.
 */
export async function runBulkJobUntilFinished(ctx: BulkRunContext, jobId: string, pollMs = 1_000) {
  for (;;) {
    await runBulkJobs({ ...ctx, now: new Date() });
    const job = await ctx.db.prisma.bulkJob.findUnique({ where: { id: jobId }, select: { finishedAt: true } });
    if (!job || job.finishedAt) return;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

export async function runBulkJobs(ctx: BulkRunContext) {
  const report = { jobs: 0, done: 0, failed: 0 };
  const owner = leaseOwner();
  for (;;) {
    const [claimed] = await ctx.db.prisma.$queryRaw<{ id: string }[]>`
      UPDATE bulk_jobs SET lease_owner = ${owner}, leased_until = ${leaseUntil(BULK_LEASE_MS)}
       WHERE id = (SELECT id FROM bulk_jobs WHERE finished_at IS NULL AND ${leaseLapsedSql(Prisma.sql`leased_until`)} ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING id::text`;
    if (!claimed) return report;
    report.jobs++;
    const { done, failed, stopped } = await runJob(ctx, claimed.id, owner);
    report.done += done;
    report.failed += failed;
    // Stopped by an error (the database away): the next run tries again, rather than this one at once.
    if (stopped) return report;
  }
}

async function runJob(ctx: BulkRunContext, jobId: string, owner: string) {
  const prisma = ctx.db.prisma;
  const counts = { done: 0, failed: 0, stopped: false };
  const stopRenewing = keepLease(
    BULK_LEASE_MS,
    () => prisma.$executeRaw`UPDATE bulk_jobs SET leased_until = ${leaseUntil(BULK_LEASE_MS)} WHERE id = ${jobId}::uuid AND lease_owner = ${owner}`,
    (error) => ctx.logger?.warn({ bulkJob: jobId, err: error.message }, 'bulk job lease renewal failed'),
  );
  // Everything after the heartbeat starts is inside the try, so a failing read cannot leave it renewing forever.
  try {
    const job = await prisma.bulkJob.findUniqueOrThrow({ where: { id: jobId } });
    const { actor, meta } = job.requestedBy as unknown as RequestedBy;
    // The job's clock moves on with the wall clock: a long job's activity entries carry the time of each change.
    const started = Date.now();
    const serviceCtx = (): ServiceContext => ({ db: ctx.db, secrets: currentServerSecrets(), now: new Date(ctx.now.getTime() + (Date.now() - started)), actor, meta });
    const refusal = await requesterRefusal(ctx.db, actor, job.tenantId);
    // A CSV import (import.ts) works through its file's rows under the same lease.
    if (job.action === IMPORT_ACTION) {
      await runImportRows(serviceCtx, job, refusal, counts, ctx.failpoint);
    } else {
      for (;;) {
        const items = await prisma.bulkJobItem.findMany({ where: { jobId, status: 'pending' }, orderBy: { licenseId: 'asc' }, take: ITEM_BATCH, select: { licenseId: true } });
        if (items.length === 0) break;
        for (const { licenseId } of items) {
          await ctx.failpoint?.(jobId, licenseId);
          let error: string | null = refusal;
          if (!error) {
            try {
              await applyAction(serviceCtx(), job.action as BulkAction, job.params as { expiresAt?: string; customerEmail?: string }, licenseId);
            } catch (caught) {
              // A refusal about this license (revoked, perpetual, deleted…) fails the item; anything else (the
              // database away) stops the job here, to be resumed.
              if (!(caught instanceof AppError)) throw caught;
              error = caught.message;
            }
          }
          await prisma.$transaction([
            prisma.bulkJobItem.update({ where: { jobId_licenseId: { jobId, licenseId } }, data: { status: error ? 'failed' : 'done', error } }),
            prisma.bulkJob.update({ where: { id: jobId }, data: error ? { failed: { increment: 1 } } : { done: { increment: 1 } } }),
          ]);
          counts[error ? 'failed' : 'done']++;
        }
      }
    }
    await prisma.$executeRaw`UPDATE bulk_jobs SET finished_at = ${serviceCtx().now}, lease_owner = NULL, leased_until = clock_timestamp() WHERE id = ${jobId}::uuid AND lease_owner = ${owner}`;
    ctx.logger?.info({ bulkJob: jobId, action: job.action, tenantId: job.tenantId, done: counts.done, failed: counts.failed }, 'bulk job finished');
  } catch (error) {
    // Released at once: the next run (or another worker) goes on with the pending items.
    await prisma.$executeRaw`UPDATE bulk_jobs SET lease_owner = NULL, leased_until = clock_timestamp() WHERE id = ${jobId}::uuid AND lease_owner = ${owner}`.catch(() => undefined);
    ctx.logger?.warn({ bulkJob: jobId, err: (error as Error).message }, 'bulk job stopped; it resumes on the next run');
    counts.stopped = true;
  } finally {
    stopRenewing();
  }
  return counts;
}

/** A requester who lost the right to change licenses since (deactivated, demoted, key revoked) changes nothing more. */
async function requesterRefusal(db: Database, actor: ServiceActor, tenantId: string): Promise<string | null> {
  const refusal = 'The person who started this bulk action can no longer change licenses.';
  if (actor.kind === 'user') {
    const user = await db.prisma.user.findFirst({ where: { id: actor.userId, tenantId, role: 'CompanyAdmin', deactivatedAt: null }, select: { id: true } });
    return user ? null : refusal;
  }
  if (actor.kind === 'apiKey') {
    const key = await db.prisma.apiKey.findFirst({ where: { id: actor.apiKeyId, tenantId, role: 'CompanyAdmin', revokedAt: null }, select: { id: true } });
    return key ? null : refusal;
  }
  return actor.tenantId === tenantId ? null : refusal;
}

async function applyAction(ctx: ServiceContext, action: BulkAction, params: { expiresAt?: string; customerEmail?: string }, id: string) {
  if (action === 'suspend') return suspendLicense(ctx, { id });
  if (action === 'reinstate') return reinstateLicense(ctx, { id });
  if (action === 'revoke') return revokeLicense(ctx, id);
  if (action === 'transfer') return transferLicense(ctx, { id, customerEmail: params.customerEmail! });
  // Renewed to this date already (this item's change committed before its worker died): nothing to do.
  const license = await ctx.db.prisma.license.findFirst({ where: { id, tenantId: requireMember(ctx) }, select: { expiresAt: true } });
  if (license?.expiresAt?.toISOString() === new Date(params.expiresAt!).toISOString()) return;
  return renewLicense(ctx, { id, expiresAt: params.expiresAt! });
}
