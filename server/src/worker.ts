import { ConfigError, loadConfig } from './config.js';
import { DatabaseLockedError } from './db/database.js';
import { startJobs } from './jobs/scheduler.js';
import { createLogger } from './logger.js';
import { createRuntime } from './runtime.js';

/**
 * `pnpm worker`: processes scheduled jobs without serving HTTP. Run any number beside the servers (set
 * JOBS_WORKER=false on those to keep them out of job processing); they share the job store, and Agenda's
 * locks run each due job once. On the embedded database the server is the only process, so it does the jobs.
 */
async function main() {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  let runtime;
  let jobs;
  try {
    runtime = await createRuntime(config, logger);
    jobs = await startJobs(runtime.deps, { worker: true });
  } catch (error) {
    const known = error instanceof DatabaseLockedError;
    logger.fatal({ err: known ? undefined : error }, known ? (error as Error).message : 'worker startup failed');
    await runtime?.close().catch(() => undefined);
    process.exit(1);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker shutting down: waiting for running jobs');
    setTimeout(() => {
      logger.warn('running jobs did not finish within 10 s; exiting');
      process.exit(1);
    }, 10_000).unref();
    await jobs.stop();
    await runtime.close();
    logger.info('worker stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

void main();
