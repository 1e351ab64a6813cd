import { bootProcess, onShutdown } from './boot.js';

/**
 * `pnpm worker`: processes scheduled jobs without serving HTTP. Run any number beside the servers (set
 * JOBS_WORKER=false on those to keep them out of job processing); they share the job store, and Agenda's
 * locks run each due job once. On the embedded database the server is the only process, so it does the jobs.
 */
async function main() {
  const { logger, runtime, jobs, metricsServer } = await bootProcess('worker', () => true);
  logger.info({ database: runtime.deps.db.kind }, 'job worker started');
  onShutdown(logger, async (signal) => {
    logger.info({ signal }, 'worker shutting down: waiting for running jobs');
    metricsServer?.close();
    await jobs.stop();
    await runtime.close();
    logger.info('worker stopped');
    process.exit(0);
  });
}

void main();
