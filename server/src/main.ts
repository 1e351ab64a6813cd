import type { Server } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { ConfigError, loadConfig } from './config.js';
import { DatabaseLockedError } from './db/database.js';
import { createApp } from './http/app.js';
import { createLogger } from './logger.js';
import { createRuntime } from './runtime.js';
import { startJobs } from './jobs/scheduler.js';

const CONSOLE_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../console/dist');

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
    // Scheduled jobs: weekly digest, expiry alerts, email delivery, house-keeping (server/src/jobs).
    jobs = await startJobs(runtime.deps, { worker: config.jobsWorker });
    runtime.deps.jobs = jobs;
  } catch (error) {
    const known = error instanceof DatabaseLockedError;
    logger.fatal({ err: known ? undefined : error }, known ? (error as Error).message : 'startup failed');
    process.exit(1);
  }
  const app = createApp(runtime.deps, { consoleDir: CONSOLE_DIST });

  const server = serve({ fetch: app.fetch, port: config.port, hostname: config.host }, (info) => {
    logger.info({ port: info.port, database: runtime.deps.db.kind, publicUrl: config.publicUrl }, `license service listening on ${config.publicUrl}`);
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    // Running jobs finish (up to 8 s) while in-flight requests drain.
    const jobsStopped = jobs.stop();
    server.close(async () => {
      await jobsStopped;
      await runtime.close();
      logger.info('stopped');
      process.exit(0);
    });
    // Idle keep-alive connections would hold close() open; busy ones get 10 s to finish.
    (server as Server).closeIdleConnections();
    setTimeout(() => {
      logger.warn('in-flight requests did not finish within 10 s; exiting');
      process.exit(1);
    }, 10_000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

void main();
