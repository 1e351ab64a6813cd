import { loadConfig } from '../config.js';
import { AppError } from '../domain/errors.js';
import { createLogger } from '../logger.js';
import { EMAIL_KINDS, EMAIL_STATUSES, listOutbox, type EmailKind, type EmailStatus } from '../services/notifications/outbox.js';
import { listJobSchedules, recordedRun } from '../services/notifications/schedules.js';
import { getTenantByPrefix } from '../services/tenants.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../services/listing.js';
import { operatorIn } from '../services/auth/actor.js';
import { createTransport } from '../jobs/email/transport.js';
import { JOB_NAMES, findJob } from '../jobs/index.js';
import { jobContext, startJobs } from '../jobs/scheduler.js';
import type { CliCommand } from './command.js';

// Operator commands for the scheduled jobs and the email outbox, merged into `pnpm cli` (cli/commands.ts). They run
// the jobs of server/src/jobs; the jobs themselves know nothing of the CLI.

/** Logs go to stderr so that `--json` output stays one JSON object on stdout. */
const stderrLogger = () => {
  const config = loadConfig();
  return { config, logger: createLogger(process.env.LOG_LEVEL ? config.logLevel : 'warn', process.stderr) };
};

function parseNow(value: unknown, fallback: Date): Date {
  if (value === undefined) return fallback;
  const date = new Date(String(value));
  if (Number.isNaN(date.getTime())) throw new AppError('InvalidRequest', '--now must be an ISO 8601 date-time, e.g. 2026-06-01T08:00:00Z');
  return date;
}

export const jobCommands: Record<string, CliCommand> = {
  'jobs:run': {
    usage: `jobs:run <${JOB_NAMES.join('|')}> [--now ISO]`,
    argument: '[name]',
    options: ['--name <job>', '--now <ISO>'],
    async run(ctx, flags) {
      const job = findJob(String(flags.name ?? ''));
      if (!job) throw new AppError('InvalidRequest', `name one job: ${JOB_NAMES.join(', ')}`);
      const now = parseNow(flags.now, ctx.now);
      const { config, logger } = stderrLogger();
      const context = jobContext({ config, db: ctx.db, logger, clock: () => now }, createTransport(config, logger), now);
      const result = await recordedRun(ctx.db, job.name, 'cli', () => new Date(), () => job.run(context));
      return { job: job.name, now: now.toISOString(), result };
    },
  },
  'jobs:list': {
    usage: 'jobs:list',
    options: [],
    async run(ctx) {
      const { config, logger } = stderrLogger();
      const jobs = await startJobs({ config, db: ctx.db, logger, clock: () => ctx.now }, { worker: false });
      try {
        return { store: jobs.store, jobs: await listJobSchedules({ jobs }) };
      } finally {
        await jobs.stop();
      }
    },
  },
  'outbox:list': {
    usage: `outbox:list [--status ${EMAIL_STATUSES.join('|')}] [--kind ${EMAIL_KINDS.join('|')}] [--tenant PREFIX] [--limit 1-${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}] [--body]   (newest first; each email's address is \`to\`, as in GraphQL)`,
    options: ['--status <status>', '--kind <kind>', '--tenant <PREFIX>', '--limit <N>', '--body'],
    async run(ctx, flags) {
      const status = flags.status as EmailStatus | undefined;
      const kind = flags.kind as EmailKind | undefined;
      if (status && !EMAIL_STATUSES.includes(status)) throw new AppError('InvalidRequest', `--status must be one of ${EMAIL_STATUSES.join(', ')}`);
      if (kind && !EMAIL_KINDS.includes(kind)) throw new AppError('InvalidRequest', `--kind must be one of ${EMAIL_KINDS.join(', ')}`);
      const first = flags.limit === undefined ? DEFAULT_PAGE_SIZE : Number(flags.limit);
      // Refused rather than cut down: a list silently shorter than asked for reads as all there is.
      if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) throw new AppError('InvalidRequest', `--limit must be a whole number from 1 to ${MAX_PAGE_SIZE}`);
      const scoped = typeof flags.tenant === 'string' ? operatorIn(ctx, (await getTenantByPrefix(ctx, flags.tenant)).id) : ctx;
      const page = await listOutbox(scoped, { status, kind, first, includeBody: flags.body === true });
      // Named as the GraphQL Email type names them (`to`, not the column's toAddress).
      const emails = page.nodes.map(({ id, tenantId, kind, toAddress, ...email }) => ({ id, tenantId, kind, to: toAddress, ...email }));
      return { emails, totalCount: page.totalCount };
    },
  },
};
