import type { Database } from '../../db/database.js';
import { AppError } from '../../domain/errors.js';
import { requireAdmin, type ServiceActor } from '../auth/actor.js';

/** Who started a run: the schedule (Agenda), the operator CLI, or "Run now" in the console. */
export type JobRunSource = 'schedule' | 'cli' | 'console';

/** A scheduled job as operators see it: its schedule (UTC) and its last/next run in the job store. */
export interface JobSchedule {
  name: string;
  description: string;
  /** Cron expression, evaluated in UTC. */
  schedule: string;
  timezone: 'UTC';
  lastRunAt: Date | null;
  lastFinishedAt: Date | null;
  nextRunAt: Date | null;
  lastFailedAt: Date | null;
  lastFailReason: string | null;
  /** A worker holds it right now. */
  running: boolean;
}

/** The job store as services see it (jobs/scheduler.ts implements it). */
export interface JobScheduleSource {
  schedules(): Promise<JobSchedule[]>;
  /** Queues a run for any worker to pick up at once. */
  runNow(name: string, now?: Date, source?: JobRunSource): Promise<void>;
}

/** Jobs a company admin may start from the console: each is idempotent, so an extra run sends nothing twice. */
export const RUNNABLE_JOBS = ['expiry-notifications', 'weekly-digest', 'email-delivery'] as const;

/** "Run now" (CompanyAdmin): queues the job for the next free worker; refused while it runs. */
export async function runJobNow(ctx: { jobs?: JobScheduleSource | null; actor: ServiceActor | null }, name: string): Promise<JobSchedule> {
  requireAdmin(ctx);
  if (!(RUNNABLE_JOBS as readonly string[]).includes(name)) throw new AppError('InvalidRequest', `Only these jobs can be started by hand: ${RUNNABLE_JOBS.join(', ')}.`, { fields: { name: 'not a job that can be started by hand' } });
  const schedules = await listJobSchedules(ctx);
  const schedule = schedules.find((candidate) => candidate.name === name)!;
  if (schedule.running) throw new AppError('Conflict', `${name} is running right now; it finishes on its own.`);
  await ctx.jobs!.runNow(name, undefined, 'console');
  return schedule;
}

/** Every scheduled job with its last and next run. */
export async function listJobSchedules(ctx: { jobs?: JobScheduleSource | null }): Promise<JobSchedule[]> {
  if (!ctx.jobs) throw new AppError('ServiceUnavailable', 'The job store is not open in this process.');
  return ctx.jobs.schedules();
}

/**
 * Runs a job and keeps its latest run in `job_last_runs`, whoever started it, so "last run" is right after a
 * run from the CLI too (Agenda only knows its own). The job's own failure is recorded and rethrown.
 */
export async function recordedRun<T>(db: Database, job: string, source: JobRunSource, now: () => Date, run: () => Promise<T>): Promise<T> {
  const startedAt = now();
  await db.prisma.jobLastRun.upsert({
    where: { job },
    create: { job, startedAt, source },
    update: { startedAt, source, finishedAt: null, failedAt: null, failReason: null },
  });
  try {
    const result = await run();
    await db.prisma.jobLastRun.updateMany({ where: { job, startedAt }, data: { finishedAt: now() } });
    return result;
  } catch (error) {
    const failReason = (error instanceof Error ? error.message : String(error)).slice(0, 500);
    await db.prisma.jobLastRun.updateMany({ where: { job, startedAt }, data: { failedAt: now(), failReason } }).catch(() => undefined);
    throw error;
  }
}

type LastRun = Pick<JobSchedule, 'lastRunAt' | 'lastFinishedAt' | 'lastFailedAt' | 'lastFailReason'>;
const later = (a: Date | null, b: Date | null) => (a && b ? (a > b ? a : b) : (a ?? b));

/** A schedule's last run: the newer of what the job store and `job_last_runs` know. */
export async function withRecordedRuns(db: Database, schedules: JobSchedule[]): Promise<JobSchedule[]> {
  const recorded = new Map((await db.prisma.jobLastRun.findMany()).map((row) => [row.job, row]));
  return schedules.map((schedule) => {
    const row = recorded.get(schedule.name);
    if (!row) return schedule;
    const merged: LastRun = {
      lastRunAt: later(schedule.lastRunAt, row.startedAt),
      lastFinishedAt: later(schedule.lastFinishedAt, row.finishedAt),
      lastFailedAt: later(schedule.lastFailedAt, row.failedAt),
      lastFailReason: row.failedAt && (!schedule.lastFailedAt || row.failedAt >= schedule.lastFailedAt) ? row.failReason : schedule.lastFailReason,
    };
    return { ...schedule, ...merged };
  });
}
