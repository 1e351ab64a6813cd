import { ConfigError, loadConfig, type Config } from './config.js';
import { DatabaseLockedError, isDatabaseUnavailable, waitForDatabase } from './db/database.js';
import { startJobs } from './jobs/scheduler.js';
import { createLogger, type Logger } from './logger.js';
import { createRuntime, type Runtime } from './runtime.js';

/**
 * Start-up shared by the server and the worker: configuration (a bad value exits with a message naming
 * the variable), logger, runtime and scheduled jobs. Expected failures exit without a stack trace.
 */
export async function bootProcess(label: string, jobsWorker: (config: Config) => boolean) {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  const logger: Logger = createLogger(config.logLevel);
  installLastResort(logger);
  let runtime: Runtime | undefined;
  try {
    if (config.databaseUrl) await waitForDatabase(config.databaseUrl, logger);
    runtime = await createRuntime(config, logger);
    // Scheduled jobs: weekly digest, expiry alerts, email delivery, house-keeping (server/src/jobs).
    const jobs = await startJobs(runtime.deps, { worker: jobsWorker(config) });
    runtime.deps.jobs = jobs;
    return { config, logger, runtime, jobs };
  } catch (error) {
    const known = error instanceof DatabaseLockedError;
    logger.fatal({ err: known ? undefined : error }, known ? (error as Error).message : `${label} startup failed`);
    await runtime?.close().catch(() => undefined);
    process.exit(1);
  }
}

/** SIGTERM/SIGINT run `stop` once; a stop that hangs past 10 s exits anyway. */
export function onShutdown(logger: Logger, stop: (signal: string) => Promise<void> | void) {
  let stopping = false;
  const handle = (signal: string) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      logger.warn('shutdown did not finish within 10 s; exiting');
      process.exit(1);
    }, 10_000).unref();
    void stop(signal);
  };
  process.on('SIGTERM', () => handle('SIGTERM'));
  process.on('SIGINT', () => handle('SIGINT'));
}

/**
 * Last resort: a library that rejects or throws outside a request (a dropped connection surfacing late)
 * must not take the whole process down while the rest of it serves. It is logged and the process carries
 * on; only a failure that is not a lost dependency (a bug) ends it, with a message saying so.
 */
function installLastResort(logger: Logger) {
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason instanceof Error ? { message: reason.message, stack: reason.stack } : String(reason) }, 'unhandled promise rejection (kept running)');
  });
  process.on('uncaughtException', (error) => {
    if (isDatabaseUnavailable(error)) {
      logger.error({ err: error.message }, 'database connection lost outside a request (kept running; it reconnects on its own)');
      return;
    }
    logger.fatal({ err: { message: error.message, stack: error.stack } }, 'uncaught exception: the process cannot safely continue and exits');
    process.exit(1);
  });
}
