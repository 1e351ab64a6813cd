import { hostname } from 'node:os';
import { Agenda, type JobWithState } from 'agenda';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { MailTransport } from '../services/notifications/delivery.js';
import { recordedRun, withRecordedRuns, type JobRunSource, type JobSchedule, type JobScheduleSource } from '../services/notifications/schedules.js';
import { createTransport } from './email/transport.js';
import { JOBS, JOB_NAMES, findJob } from './index.js';
import { listenUrl } from './listen-channel.js';
import { openJobStore } from './store.js';
import type { JobContext } from './types.js';

export interface JobDeps {
  config: Config;
  db: Database;
  logger: Logger;
  clock: () => Date;
}

export interface JobsOptions {
  /** Process jobs here (the server by default, and `pnpm worker`); false only opens the store. */
  worker: boolean;
  /** Polling interval in ms (default 5 s); tests go faster. */
  processEvery?: number;
  transport?: MailTransport;
  /** Told of every run of this process as it ends (the metrics: docs/operate/observability.md); must not throw. */
  onRunFinished?: (job: string, outcome: 'success' | 'failure', durationSeconds: number, result?: Record<string, unknown>) => void;
}

export interface Jobs extends JobScheduleSource {
  readonly agenda: Agenda;
  readonly transport: MailTransport;
  readonly store: string;
  /** Queues a run for any worker to pick up at once; `now` sets that run's clock. */
  runNow(name: string, now?: Date, source?: JobRunSource): Promise<void>;
  /** Stops taking jobs, waits up to `timeoutMs` for running ones, closes the store. */
  stop(timeoutMs?: number): Promise<void>;
}

type JobData = { now?: string; source?: JobRunSource } | undefined;

/** The context of one job run, from the process's dependencies. */
export function jobContext(deps: JobDeps, transport: MailTransport, now: Date): JobContext {
  return { db: deps.db, now, publicUrl: deps.config.publicUrl, transport, logger: deps.logger, webhookAllowPrivate: deps.config.webhookAllowPrivate };
}

/**
 * Opens the job store, defines the jobs and registers their schedules (idempotently: every process does it
 * at every start, and one stored schedule per job results), then starts processing if `worker`. Any number
 * of servers and workers can share the store: Agenda locks a job before running it, so each due run
 * happens once; the jobs are also safe to run twice (outbox keys and expiry notices dedupe).
 */
export async function startJobs(deps: JobDeps, options: JobsOptions): Promise<Jobs> {
  const { config, logger } = deps;
  const transport = options.transport ?? createTransport(config, logger);
  const store = await openJobStore({ mongodbUrl: config.mongodbUrl, databaseUrl: config.databaseUrl, listenUrl: listenUrl(config), db: deps.db, logger });
  const agenda = new Agenda({
    backend: store.backend,
    notificationChannel: store.notificationChannel,
    name: `${hostname()}:${process.pid}`,
    processEvery: options.processEvery ?? 5_000,
    defaultConcurrency: 1,
    maxConcurrency: 4,
    removeOnComplete: true,
  });
  for (const job of JOBS) {
    agenda.define<JobData>(
      job.name,
      async (run) => {
        const now = run.attrs.data?.now ? new Date(run.attrs.data.now) : deps.clock();
        // Heartbeat: keeps the lock while this process lives; a killed worker's run is free again soon.
        const heartbeat = setInterval(() => {
          run.touch().catch((error: Error) => logger.warn({ job: job.name, err: error.message }, 'job heartbeat failed'));
        }, job.lockLifetimeMs / 3);
        const started = performance.now();
        const finished = (outcome: 'success' | 'failure', result?: Record<string, unknown>) => options.onRunFinished?.(job.name, outcome, (performance.now() - started) / 1000, result);
        try {
          const result = await recordedRun(deps.db, job.name, run.attrs.data?.source ?? 'schedule', deps.clock, () => job.run(jobContext(deps, transport, now)));
          finished('success', result);
          logger[job.frequent ? 'debug' : 'info']({ job: job.name, now: now.toISOString(), result }, 'job finished');
        } catch (error) {
          finished('failure');
          throw error;
        } finally {
          clearInterval(heartbeat);
        }
      },
      { lockLifetime: job.lockLifetimeMs },
    );
  }
  // Failures of this process's runs only (other processes' arrive as `remote` and are logged there).
  agenda.on('fail', (error: Error | string, job: { attrs?: { name: string } }, remote?: boolean) => {
    if (!remote) logger.error({ job: job.attrs?.name, err: typeof error === 'string' ? error : error.message }, 'job failed');
  });
  agenda.on('error', (error: Error) => logger.warn({ err: error.message }, 'job scheduler error'));
  try {
    await registerSchedules(agenda);
    if (options.worker) await agenda.start();
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  logger.info({ store: store.description, worker: options.worker, mail: transport.name }, options.worker ? 'job worker started' : 'job store opened');
  if (options.worker && transport.name === 'development') {
    logger.info('no POSTMARK_SERVER_TOKEN: emails are kept in the development outbox (see pnpm cli outbox:list)');
  }

  let stopped: Promise<void> | undefined;
  return {
    agenda,
    transport,
    store: store.description,
    async runNow(name, now, source = 'schedule') {
      if (!findJob(name)) throw new Error(`unknown job ${name}`);
      await agenda.now<JobData>(name, { ...(now && { now: now.toISOString() }), source });
    },
    async schedules() {
      const { jobs } = await agenda.queryJobs({ names: [...JOB_NAMES] });
      return withRecordedRuns(deps.db, JOBS.map((job) => toSchedule(job, jobs.find((stored) => stored.name === job.name && stored.type === 'single'))));
    },
    stop(timeoutMs = 8_000) {
      stopped ??= (async () => {
        if (options.worker) {
          const result = await agenda.drain(timeoutMs);
          if (result.timedOut) logger.warn({ running: result.running }, 'jobs still running at shutdown; another worker retries them when their lock expires');
        }
        await store.close();
      })();
      return stopped;
    },
  };
}

/** One stored repeating job per name, UTC cron. An overdue run already stored is kept (it runs at start). */
async function registerSchedules(agenda: Agenda) {
  const { jobs } = await agenda.queryJobs({ names: [...JOB_NAMES] });
  for (const job of JOBS) {
    const stored = jobs.find((candidate) => candidate.name === job.name && candidate.type === 'single');
    if (stored && stored.repeatInterval === job.schedule && stored.repeatTimezone === 'UTC' && stored.nextRunAt && !stored.disabled) continue;
    await agenda.every(job.schedule, job.name, undefined, { timezone: 'UTC' });
  }
}

function toSchedule(job: (typeof JOBS)[number], stored: JobWithState | undefined): JobSchedule {
  return {
    name: job.name,
    description: job.description,
    schedule: job.schedule,
    timezone: 'UTC',
    lastRunAt: stored?.lastRunAt ?? null,
    lastFinishedAt: stored?.lastFinishedAt ?? null,
    nextRunAt: stored?.nextRunAt ?? null,
    lastFailedAt: stored?.failedAt ?? null,
    lastFailReason: stored?.failReason ?? null,
    running: stored?.state === 'running',
  };
}
