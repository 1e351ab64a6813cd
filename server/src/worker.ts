import { bootProcess, onShutdown } from './process-lifecycle.js';

/**
 * `pnpm worker`: processes scheduled jobs without serving HTTP. Run any number beside the servers (set
 * JOBS_WORKER=false on those to keep them out of job processing); they share the job store, and Agenda's
 * locks run each due job once. On the embedded database the server is the only process, so it does the jobs.
 */
async function main() {
  const { config, logger, runtime, jobs, metricsServer } = await bootProcess('worker', () => true);
  logger.info({ database: runtime.deps.db.kind }, 'job worker started');
  const timeoutMs = config.shutdownTimeoutSeconds * 1000;
  onShutdown(logger, config.shutdownTimeoutSeconds + 2, async (signal) => {
    logger.info({ signal }, 'worker shutting down: waiting for running jobs');
    // Runs still going at the timeout are handed back through their lock's expiry (docs/operate/jobs-and-email.md).
    metricsServer?.close();
    await jobs.stop(timeoutMs);
    await runtime.close();
    logger.info('worker stopped');
    process.exit(0);
  });
}

void main();
