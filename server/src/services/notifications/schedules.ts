import { AppError } from '../../domain/errors.js';

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

/** Reads schedules from the job store (jobs/scheduler.ts implements it). */
export interface JobScheduleSource {
  schedules(): Promise<JobSchedule[]>;
}

/** Every scheduled job with its last and next run. */
export async function listJobSchedules(ctx: { jobs?: JobScheduleSource | null }): Promise<JobSchedule[]> {
  if (!ctx.jobs) throw new AppError('ServiceUnavailable', 'The job store is not open in this process.');
  return ctx.jobs.schedules();
}
