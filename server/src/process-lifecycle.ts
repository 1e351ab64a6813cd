import { createServer, type AddressInfo } from 'node:net';
import { ConfigError, loadConfig, type Config } from './config.js';
import { DatabaseLockedError, isDatabaseUnavailable, waitForDatabase } from './db/database.js';
import { startJobs } from './jobs/scheduler.js';
import { JOB_NAMES } from './jobs/index.js';
import { DataDirError, makeFilesPrivate } from './data-dir.js';
import { createLogger, type Logger } from './logger.js';
import { createMetrics, serveMetrics } from './metrics/index.js';
import { openDeps, type OpenDeps } from './deps.js';
import { operatorEmailsWithoutAccount } from './services/system-status.js';

/**
 * The life of a server or worker process: start-up, the port probe, shutdown on a signal, the last-resort handlers.
 */

/**
 * Start-up shared by the server and the worker: configuration (a bad value exits with a message naming
 * the variable), logger, runtime and scheduled jobs. Expected failures exit without a stack trace.
 */
export async function bootProcess(label: string, jobsWorker: (config: Config) => boolean, preflight?: (config: Config) => Promise<string | null>) {
  makeFilesPrivate(); // before anything is written: DATA_DIR, the embedded database, a generated secret, the CLI socket
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  // Before anything is created (data directory, secret, database): a problem found here is one line and exit 1.
  const refusal = await preflight?.(config);
  if (refusal) {
    process.stderr.write(`${refusal}\n`);
    process.exit(1);
  }
  const logger: Logger = createLogger(config.logLevel);
  installLastResort(logger);
  if (config.webhookAllowPrivate) {
    logger.warn('WEBHOOK_ALLOW_PRIVATE=true: the SSRF guard of webhooks is off, deliveries may reach loopback, private and link-local addresses (cloud metadata services included). Keep it only when receivers on your own network are intended.');
  }
  let runtime: OpenDeps | undefined;
  try {
    if (config.databaseUrl) await waitForDatabase(config.databaseUrl, logger);
    // Only a server answers validate: a worker keeps no license cache (and opens no LISTEN session for one).
    runtime = await openDeps(label === 'server' ? config : { ...config, licenseCache: null }, logger);
    const unclaimed = await operatorEmailsWithoutAccount(runtime.deps.db, config.operatorEmails);
    if (unclaimed.length) logger.warn({ operatorEmails: unclaimed }, 'OPERATOR_EMAILS lists addresses without an account: whoever gets an account under one becomes an installation operator; create them now (pnpm cli user:create) or remove them');
    const metrics = config.metrics ? createMetrics({ db: runtime.deps.db, redisReachable: runtime.deps.rateLimits.redisReachable, role: label, jobNames: JOB_NAMES, licenseCache: runtime.deps.licenseCache ? () => runtime!.deps.licenseCache!.stats() : undefined }) : undefined;
    runtime.deps.metrics = metrics;
    // Scheduled jobs: weekly digest, expiry alerts, email delivery, house-keeping (server/src/jobs).
    const jobs = await startJobs(runtime.deps, { worker: jobsWorker(config), onRunFinished: metrics?.jobFinished });
    runtime.deps.jobs = jobs;
    const metricsServer = metrics && config.metrics?.port !== undefined ? await serveMetrics(metrics, { port: config.metrics.port, host: config.metrics.host, token: config.metrics.token }, logger) : undefined;
    if (metricsServer) logger.info({ metricsUrl: `http://${config.metrics!.host}:${(metricsServer.address() as AddressInfo).port}/metrics` }, 'metrics listening');
    return { config, logger, runtime, jobs, metricsServer };
  } catch (error) {
    const known = error instanceof DatabaseLockedError || error instanceof DataDirError;
    logger.fatal({ err: known ? undefined : error }, known ? (error as Error).message : `${label} startup failed`);
    await runtime?.close().catch(() => undefined);
    process.exit(1);
  }
}

/**
 * Why the server could not listen on `port`/`host`, as one line for the operator, or null when it can. Probed
 * before start-up so a port in use does not leave a data directory or a stack trace behind.
 */
export function portProblem(port: number, host: string): Promise<string | null> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(listenProblem(error, port, host)));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

/** The operator's line for a failed listen (also used when the real listen fails after the probe). */
export function listenProblem(error: NodeJS.ErrnoException, port: number, host: string): string {
  if (error.code === 'EADDRINUSE') return `Port ${port} on ${host} is already in use: stop the process using it, or start with PORT=<another port>.`;
  if (error.code === 'EACCES') return `Not allowed to listen on port ${port} on ${host}: use a port above 1023 (PORT=4000), or run with the privilege to bind it.`;
  if (error.code === 'EADDRNOTAVAIL') return `Cannot listen on ${host}: no such address on this machine (check HOST).`;
  return `Cannot listen on ${host}:${port}: ${error.message}`;
}

/** SIGTERM/SIGINT run `stop` once; a stop that hangs past `limitSeconds` exits anyway. */
export function onShutdown(logger: Logger, limitSeconds: number, stop: (signal: string) => Promise<void> | void) {
  let stopping = false;
  const handle = (signal: string) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      logger.warn(`shutdown did not finish within ${limitSeconds} s; exiting`);
      process.exit(1);
    }, limitSeconds * 1000).unref();
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
