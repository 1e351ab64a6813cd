import { Prisma } from '../../generated/prisma/client.js';
import type { NotificationContext, SystemContext } from '../context.js';
import { keepLease, leaseLapsedSql, leaseOwner, leaseUntil, nextAttempt, type RetryPolicy } from '../leases.js';
import { DAY_MS } from '../../domain/countdown.js';

/**
 * Progress of the scheduled per-tenant jobs (expiry: one run per UTC day, digest: one per ISO week), so a run
 * that dies midway is finished by another worker the same period. Agenda cannot do it: it moves a repeating
 * job's next run forward when the run starts, and frees a lapsed lock without running it again.
 *
 * - `job_runs` (job, period): the run, held by a lease (`leased_until`, database time: a held job of leases.ts)
 *   that the running process renews every third of RUN_LEASE_MS. `finished_at` is set once every tenant is done
 *   (or out of attempts).
 * - `job_run_tenants` (job, period, tenant): done, or failed with attempts and the next retry (backoff).
 * A start (the schedule, a manual run) processes every tenant. A resume (resumeRuns, called by the
 * every-minute email-delivery job) takes over an unfinished run of the current period whose lease lapsed,
 * and processes only the tenants without a done record, plus failed ones whose retry is due.
 * Exactly once does not rest on these records: expiry notices and outbox idempotency keys dedupe any overlap.
 */

export const RUN_LEASE_MS = 90_000;
/** A failed tenant is retried 1, 2, 4, 8 min later (all within the period for the daily run), 5 attempts in all. */
export const TENANT_RETRY: RetryPolicy = { maxAttempts: 5, retryDelayMs: (attempts) => Math.min(60_000 * 2 ** (attempts - 1), 60 * 60_000) };
const TENANT_PAGE = 200;
const NO_TENANT = '00000000-0000-0000-0000-000000000000';

export interface TenantRef {
  id: string;
  name: string;
}

export interface PeriodicJob<R> {
  name: string;
  period(now: Date): string;
  /** One tenant's work. Throws to fail the tenant (logged, retried later); other tenants go on. */
  runTenant(ctx: NotificationContext, tenant: TenantRef, report: R): Promise<void>;
}

export interface RunSummary {
  period: string;
  mode: 'start' | 'resume';
  tenants: number;
  failedTenants: string[];
  finished: boolean;
}

/** A fresh run of the period (the schedule or a manual run): every tenant, whatever its record says. */
export async function startRun<R>(ctx: NotificationContext, job: PeriodicJob<R>, report: R): Promise<RunSummary> {
  const period = job.period(ctx.now);
  const owner = leaseOwner();
  const lease = leaseUntil(RUN_LEASE_MS);
  await ctx.db.prisma.$executeRaw`
    INSERT INTO job_runs (job, period, started_at, lease_owner, leased_until, next_attempt_at)
    VALUES (${job.name}, ${period}, ${ctx.now}, ${owner}, ${lease}, ${ctx.now})
    ON CONFLICT (job, period) DO UPDATE SET lease_owner = EXCLUDED.lease_owner, leased_until = EXCLUDED.leased_until,
      finished_at = NULL, next_attempt_at = EXCLUDED.next_attempt_at, passes = job_runs.passes + 1`;
  return pass(ctx, job, period, owner, 'start', report);
}

/**
 * Finishes the current period's run of each job if it is unfinished and nobody holds it (its worker died, or
 * tenants failed and their retry is due). Returns what each resumed run did.
 */
export async function resumeRuns(ctx: NotificationContext, jobs: { job: PeriodicJob<any>; report: () => object }[]) {
  const resumed: (RunSummary & { job: string })[] = [];
  for (const { job, report } of jobs) {
    const period = job.period(ctx.now);
    const owner = leaseOwner();
    const claimed = await ctx.db.prisma.$executeRaw`
      UPDATE job_runs SET lease_owner = ${owner}, leased_until = ${leaseUntil(RUN_LEASE_MS)}, passes = passes + 1
       WHERE job = ${job.name} AND period = ${period} AND finished_at IS NULL
         AND ${leaseLapsedSql(Prisma.sql`leased_until`)} AND next_attempt_at <= ${ctx.now}`;
    if (!claimed) continue;
    ctx.logger?.warn({ job: job.name, period }, 'resuming an unfinished run (its worker stopped, or tenants are due for a retry)');
    const result = report();
    const summary = await pass(ctx, job, period, owner, 'resume', result);
    resumed.push({ job: job.name, ...summary, ...result });
  }
  return resumed;
}

async function pass<R>(ctx: NotificationContext, job: PeriodicJob<R>, period: string, owner: string, mode: 'start' | 'resume', report: R): Promise<RunSummary> {
  const prisma = ctx.db.prisma;
  const stopRenewing = keepLease(
    RUN_LEASE_MS,
    () => prisma.$executeRaw`UPDATE job_runs SET leased_until = ${leaseUntil(RUN_LEASE_MS)} WHERE job = ${job.name} AND period = ${period} AND lease_owner = ${owner}`,
    (error) => ctx.logger?.warn({ job: job.name, period, err: error.message }, 'run lease renewal failed'),
  );
  const summary: RunSummary = { period, mode, tenants: 0, failedTenants: [], finished: false };
  try {
    for (let after = NO_TENANT; ; ) {
      const tenants = await prisma.$queryRaw<TenantRef[]>`
        SELECT t.id, t.name FROM tenants t
          LEFT JOIN job_run_tenants r ON r.job = ${job.name} AND r.period = ${period} AND r.tenant_id = t.id
         WHERE t.id > ${after}::uuid
           AND (${mode === 'start'} OR r.tenant_id IS NULL
                OR (r.status = 'failed' AND r.attempts < ${TENANT_RETRY.maxAttempts} AND r.next_attempt_at <= ${ctx.now}))
         ORDER BY t.id LIMIT ${TENANT_PAGE}`;
      for (const tenant of tenants) {
        summary.tenants++;
        await runTenant(ctx, job, period, tenant, report, summary);
      }
      if (tenants.length < TENANT_PAGE) break;
      after = tenants[tenants.length - 1].id;
    }
    const retry = await prisma.jobRunTenant.aggregate({
      where: { job: job.name, period, status: 'failed', attempts: { lt: TENANT_RETRY.maxAttempts } },
      _min: { nextAttemptAt: true },
    });
    const next = retry._min.nextAttemptAt;
    summary.finished = next === null;
    // Released either way; a due retry is picked up by resumeRuns.
    await prisma.$executeRaw`
      UPDATE job_runs SET leased_until = clock_timestamp(), lease_owner = NULL,
             finished_at = ${next === null ? ctx.now : null}, next_attempt_at = ${next ?? ctx.now}
       WHERE job = ${job.name} AND period = ${period} AND lease_owner = ${owner}`;
    return summary;
  } finally {
    stopRenewing();
  }
}

async function runTenant<R>(ctx: NotificationContext, job: PeriodicJob<R>, period: string, tenant: TenantRef, report: R, summary: RunSummary) {
  const key = { job_period_tenantId: { job: job.name, period, tenantId: tenant.id } };
  try {
    await ctx.failpoint?.(job.name, tenant.id);
    await job.runTenant(ctx, tenant, report);
  } catch (error) {
    const message = ((error as Error)?.message ?? String(error)).slice(0, 1000);
    const record = await ctx.db.prisma.jobRunTenant.upsert({
      where: key,
      create: { job: job.name, period, tenantId: tenant.id, status: 'failed', attempts: 1, nextAttemptAt: nextAttempt(TENANT_RETRY, 1, ctx.now), lastError: message, updatedAt: ctx.now },
      update: { status: 'failed', attempts: { increment: 1 }, lastError: message, updatedAt: ctx.now },
    });
    const retryAt = nextAttempt(TENANT_RETRY, record.attempts, ctx.now);
    await ctx.db.prisma.jobRunTenant.update({ where: key, data: { nextAttemptAt: retryAt } });
    summary.failedTenants.push(tenant.id);
    ctx.logger?.error({ job: job.name, period, tenantId: tenant.id, attempts: record.attempts, retryAt, err: message }, retryAt ? 'tenant failed in a scheduled run; retried later' : 'tenant failed in a scheduled run; no attempts left');
    return;
  }
  await ctx.db.prisma.jobRunTenant.upsert({
    where: key,
    create: { job: job.name, period, tenantId: tenant.id, status: 'done', attempts: 1, updatedAt: ctx.now },
    update: { status: 'done', attempts: { increment: 1 }, nextAttemptAt: null, lastError: null, updatedAt: ctx.now },
  });
}

/** The UTC day of `now`, e.g. 2026-06-01: the expiry run's period. */
export const dayPeriod = (now: Date) => now.toISOString().slice(0, 10);

/** Run records older than `keepDays` (housekeeping): only the current day's and week's are ever read. */
export async function purgeRunRecords(ctx: SystemContext, keepDays = 35): Promise<number> {
  const before = new Date(ctx.now.getTime() - keepDays * DAY_MS);
  const tenants = await ctx.db.prisma.jobRunTenant.deleteMany({ where: { updatedAt: { lt: before } } });
  const runs = await ctx.db.prisma.jobRun.deleteMany({ where: { startedAt: { lt: before } } });
  return tenants.count + runs.count;
}
