import { timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Database } from '../db/database.js';
import { isDatabaseUnavailable } from '../domain/database-unavailable.js';
import { errorCodes, INVALID_INPUT_CODES } from '../domain/errors.js';
import type { Logger } from '../logger.js';
import { systemActor } from '../services/auth/actor.js';
import { systemStatus, type SystemStatus } from '../services/system-status.js';
import type { LicenseCacheStats } from '../services/licenses/license-cache.js';

/**
 * Prometheus metrics of one process (docs/operate/observability.md). Label values are bounded: route templates, methods,
 * status classes, job names, rejection and error codes, limit names — never a key, an email or an id.
 * Request and job counters are bumped by the transports and the job runner; everything read from the database, the
 * pool or Redis is read at scrape time (collect callbacks), so the hot path pays for none of it.
 */

/** From 0.5 ms (a validate on a warm pool) to 10 s (a request stuck behind a dead database). */
export const LATENCY_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const JOB_BUCKETS_SECONDS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600];

/** The licensing endpoints by route template, and the name they carry in `operation`. */
export const LICENSING_OPERATIONS: Record<string, string> = {
  '/api/v1/validate': 'validate',
  '/api/v1/activate': 'activate',
  '/api/v1/deactivate': 'deactivate',
  '/api/v1/float/checkout': 'float_checkout',
  '/api/v1/float/heartbeat': 'float_heartbeat',
  '/api/v1/float/checkin': 'float_checkin',
  '/api/v1/meter': 'meter',
};

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']);
const STATUS_CLASSES = ['1xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

/** What the scrape-time collectors read besides the database. */
export interface MetricsSources {
  db: Database;
  /** ratelimit's getter: true/false, or null without REDIS_URL. */
  redisReachable?: () => boolean | null;
  /** The jobs this process may run: their run counters start at 0 (see keyforge_job_runs_total). */
  jobNames?: readonly string[];
  /** `server` or `worker`, as the `process` label of keyforge_process_info. */
  role: string;
  clock?: () => Date;
  /** The license cache's counters (services/licenses/license-cache.ts), when it is on. */
  licenseCache?: () => LicenseCacheStats;
}

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics(sources: MetricsSources) {
  const registry = new Registry();
  const registers = [registry];
  const clock = sources.clock ?? (() => new Date());
  collectDefaultMetrics({ register: registry });
  // Three of prom-client's defaults are gauges named `…_total`, which Prometheus reserves for counters (`promtool check
  // metrics` fails on them); nodejs_active_handles, _requests and _resources carry the same numbers.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);

  new Gauge({ name: 'keyforge_process_info', help: 'Always 1; the role of this process (server or worker).', labelNames: ['role'], registers }).set({ role: sources.role }, 1);

  const httpRequests = new Counter({ name: 'keyforge_http_requests_total', help: 'HTTP requests answered, by route template, method and status class.', labelNames: ['route', 'method', 'status_class'], registers });
  const httpDuration = new Histogram({ name: 'keyforge_http_request_duration_seconds', help: 'Time to answer an HTTP request, by route template and method.', labelNames: ['route', 'method'], buckets: LATENCY_BUCKETS_SECONDS, registers });
  const licensing = new Counter({ name: 'keyforge_licensing_requests_total', help: 'Licensing calls by operation and result (valid, rejected with a rejection code, or error with an error code).', labelNames: ['operation', 'result', 'code'], registers });
  const rateLimited = new Counter({ name: 'keyforge_rate_limit_refusals_total', help: 'Requests refused by a rate limit, by limit.', labelNames: ['limit'], registers });
  const databaseErrors = new Counter({ name: 'keyforge_database_errors_total', help: 'Database errors met by requests, by kind (unavailable: answered 503; invalid_input; query).', labelNames: ['kind'], registers });

  const jobRuns = new Counter({ name: 'keyforge_job_runs_total', help: 'Job runs in this process, by job and outcome.', labelNames: ['job', 'outcome'], registers });
  // Every known job's series exist from the start at 0: a counter that first appears at 1 has increased by nothing in
  // Prometheus's eyes, so KeyforgeJobFailing would miss a job's first failure in a process.
  for (const job of sources.jobNames ?? []) for (const outcome of ['success', 'failure']) jobRuns.inc({ job, outcome }, 0);
  const jobDuration = new Histogram({ name: 'keyforge_job_duration_seconds', help: 'Duration of job runs in this process.', labelNames: ['job'], buckets: JOB_BUCKETS_SECONDS, registers });
  const jobLastSuccess = new Gauge({ name: 'keyforge_job_last_success_timestamp_seconds', help: 'When a run of the job last finished successfully in this process (Unix time).', labelNames: ['job'], registers });
  const emailAttempts = new Counter({ name: 'keyforge_email_delivery_attempts_total', help: 'Email delivery attempts by outcome (sent, retrying, failed, reconciled).', labelNames: ['outcome'], registers });
  const webhookAttempts = new Counter({ name: 'keyforge_webhook_delivery_attempts_total', help: 'Webhook delivery attempts by outcome (succeeded, retrying, failed).', labelNames: ['outcome'], registers });
  const endpointsDisabledTotal = new Counter({ name: 'keyforge_webhook_endpoints_disabled_total', help: 'Webhook endpoints disabled for failing, by this process.', registers });

  // Pool gauges read the pool at scrape time.
  new Gauge({
    name: 'keyforge_database_pool_connections',
    help: 'PostgreSQL pool connections by state (in_use, idle, waiting: requests waiting for a connection).',
    labelNames: ['state'],
    registers,
    collect() {
      const stats = sources.db.poolStats?.();
      if (!stats) return;
      this.set({ state: 'in_use' }, stats.total - stats.idle);
      this.set({ state: 'idle' }, stats.idle);
      this.set({ state: 'waiting' }, stats.waiting);
    },
  });
  new Gauge({
    name: 'keyforge_database_up',
    help: '1 when the database answers a ping at scrape time, else 0.',
    registers,
    async collect() {
      this.set((await within(() => sources.db.ping().then(() => true), SCRAPE_DB_TIMEOUT_MS, false)) ? 1 : 0);
    },
  });
  if (sources.redisReachable?.() !== null && sources.redisReachable) {
    const reachable = sources.redisReachable;
    new Gauge({
      name: 'keyforge_redis_up',
      help: '1 when Redis (REDIS_URL) is connected; 0: rate limits count per process until it returns.',
      registers,
      collect() {
        this.set(reachable() ? 1 : 0);
      },
    });
  }

  // The database-backed gauges share one reading per scrape (services/system-status.ts, the System page's numbers):
  // a scrape starts every collector in the same tick, so the reading is forgotten at the next one.
  let reading: Promise<SystemStatus | null> | null = null;
  const status = () => {
    if (!reading) {
      reading = within(() => systemStatus({ db: sources.db, actor: systemActor(null, 'metrics') }), SCRAPE_DB_TIMEOUT_MS, null);
      setImmediate(() => (reading = null));
    }
    return reading;
  };
  // A reading that does not exist yet (null) leaves the gauge without a sample, absent to Prometheus: prom-client's
  // reset() puts a label-less gauge back at 0, which would claim, say, a failed verification before the first one.
  const fromStatus = (name: string, help: string, read: (s: SystemStatus, now: Date) => number | null) => {
    let absent = false;
    const gauge = new Gauge({
      name,
      help,
      registers,
      async collect() {
        const s = await status();
        const value = s && read(s, clock());
        absent = value === null || value === undefined;
        if (!absent) this.set(value!);
      },
    });
    const get = gauge.get.bind(gauge);
    gauge.get = async () => {
      const metric = await get();
      return absent ? { ...metric, values: [] } : metric;
    };
    return gauge;
  };
  const ageSeconds = (at: Date | null, now: Date) => (at ? Math.max(0, (now.getTime() - at.getTime()) / 1000) : 0);
  const seconds = (at: Date | null) => (at ? at.getTime() / 1000 : null);
  fromStatus('keyforge_email_outbox_pending', 'Emails waiting in the outbox (pending).', (s) => s.emailsPending);
  fromStatus('keyforge_email_outbox_oldest_pending_age_seconds', 'Age of the oldest pending email (0 when none).', (s, now) => ageSeconds(s.oldestPendingEmailAt, now));
  fromStatus('keyforge_webhook_deliveries_pending', 'Webhook deliveries waiting (pending).', (s) => s.webhookDeliveriesPending);
  fromStatus('keyforge_webhook_oldest_pending_age_seconds', 'Age of the oldest pending webhook delivery (0 when none).', (s, now) => ageSeconds(s.oldestPendingWebhookAt, now));
  fromStatus('keyforge_webhook_endpoints_disabled', 'Webhook endpoints currently disabled.', (s) => s.webhookEndpointsDisabled);
  fromStatus('keyforge_audit_last_checkpoint_timestamp_seconds', 'When the newest activity-log checkpoint of the installation was signed (absent before the first).', (s) => seconds(s.lastAuditCheckpointAt));
  fromStatus('keyforge_audit_last_verification_timestamp_seconds', 'When the newest full activity-log verification ran (absent before the first).', (s) => seconds(s.lastAuditVerificationAt));
  fromStatus('keyforge_audit_verification_ok', '1 when every company\'s newest full verification holds, 0 when one is broken (absent before the first).', (s) => (s.auditVerificationHolds === null ? null : Number(s.auditVerificationHolds)));
  fromStatus('keyforge_signing_key_age_seconds', 'Age of the active signing key.', (s, now) => (s.signingKeyCreatedAt ? ageSeconds(s.signingKeyCreatedAt, now) : null));
  new Gauge({
    name: 'keyforge_job_last_finished_timestamp_seconds',
    help: 'When the latest run of each job finished, on any process (job_last_runs; absent while it runs or after it failed).',
    labelNames: ['job'],
    registers,
    async collect() {
      const s = await status();
      this.reset();
      for (const job of s?.jobs ?? []) if (job.lastFinishedAt) this.set({ job: job.job }, job.lastFinishedAt.getTime() / 1000);
    },
  });
  new Gauge({
    name: 'keyforge_job_run_tenants',
    help: 'Tenants of unfinished per-tenant runs (expiry, digest), by job and state (pending, failed).',
    labelNames: ['job', 'state'],
    registers,
    async collect() {
      const s = await status();
      this.reset();
      for (const run of s?.runs ?? []) {
        this.inc({ job: run.job, state: 'pending' }, run.tenantsPending);
        this.inc({ job: run.job, state: 'failed' }, run.tenantsFailed);
      }
    },
  });

  // The license cache counts in plain numbers on the hot path; the counters catch up with them at scrape time.
  if (sources.licenseCache) {
    const read = sources.licenseCache;
    const counter = (name: string, help: string, pick: (stats: LicenseCacheStats) => number) => {
      let reported = 0;
      new Counter({
        name,
        help,
        registers,
        collect() {
          const value = pick(read());
          if (value > reported) this.inc(value - reported);
          reported = Math.max(reported, value);
        },
      });
    };
    counter('keyforge_license_cache_hits_total', 'Validate lookups answered from the license cache.', (s) => s.hits);
    counter('keyforge_license_cache_misses_total', 'Validate lookups the license cache did not hold (read from the database, then kept).', (s) => s.misses);
    counter('keyforge_license_cache_invalidations_total', 'License cache entries forgotten because the database recorded a change (or the change feed failed).', (s) => s.invalidations);
    counter('keyforge_license_cache_resyncs_total', 'Times the license cache emptied itself because its change feed failed or restarted (poll error or timeout, connection lost, another database server, the log pruned past it).', (s) => s.resyncs);
    counter('keyforge_license_cache_expirations_total', 'License cache entries read again because they reached LICENSE_CACHE_MAX_AGE_MS (also counted as misses).', (s) => s.expirations);
    counter('keyforge_license_cache_bypassed_total', 'Validate lookups sent to the database because the license cache could not prove itself current.', (s) => s.bypassed);
    counter('keyforge_license_cache_bypass_seconds_total', 'Time the license cache could not prove itself current (change feed down, or no poll answered within LICENSE_CACHE_STALENESS_MS) and was bypassed.', (s) => s.bypassSeconds);
    new Gauge({ name: 'keyforge_license_cache_entries', help: 'Licenses held by the license cache.', registers, collect() { this.set(read().entries); } });
    new Gauge({ name: 'keyforge_license_cache_bytes', help: 'Estimated memory held by the license cache.', registers, collect() { this.set(read().bytes); } });
  }

  // Hot path: one child per (route, method) and per status class, looked up in a Map rather than hashing labels.
  const children = new Map<string, { duration: Histogram.Internal<string>; byClass: Counter.Internal[] }>();
  function childrenOf(route: string, method: string) {
    const key = `${method} ${route}`;
    let found = children.get(key);
    if (!found) {
      found = { duration: httpDuration.labels(route, method), byClass: STATUS_CLASSES.map((statusClass) => httpRequests.labels(route, method, statusClass)) };
      children.set(key, found);
    }
    return found;
  }

  return {
    registry,
    /** One answered request: `route` is its template (or `unmatched`), never the path. */
    observeRequest(route: string, rawMethod: string, status: number, seconds: number) {
      const method = METHODS.has(rawMethod) ? rawMethod : 'other';
      const child = childrenOf(route, method);
      child.duration.observe(seconds);
      child.byClass[Math.min(5, Math.max(1, Math.floor(status / 100)))].inc();
    },
    /** A licensing call's result: valid, rejected (code = the rejection code) or error (code = the error code). */
    licensingOutcome(operation: string, result: 'valid' | 'rejected' | 'error', code: string) {
      licensing.inc({ operation, result, code });
    },
    rateLimited(limit: string) {
      rateLimited.inc({ limit });
    },
    /** A request met a database error (called with what was thrown); anything that is not one is ignored. */
    databaseError(error: unknown) {
      const kind = databaseErrorKind(error);
      if (kind) databaseErrors.inc({ kind });
    },
    /** The job runner's hook: one finished run (`result` is what the job returned, its counts become counters). */
    jobFinished(job: string, outcome: 'success' | 'failure', durationSeconds: number, result?: Record<string, unknown>) {
      jobRuns.inc({ job, outcome });
      jobDuration.observe({ job }, durationSeconds);
      if (outcome === 'success') jobLastSuccess.set({ job }, clock().getTime() / 1000);
      if (!result) return;
      const count = (key: string) => (typeof result[key] === 'number' ? (result[key] as number) : 0);
      if (job === 'email-delivery') for (const outcome of ['sent', 'retrying', 'failed', 'reconciled']) emailAttempts.inc({ outcome }, count(outcome));
      if (job === 'webhook-delivery') {
        for (const outcome of ['succeeded', 'retrying', 'failed']) webhookAttempts.inc({ outcome }, count(outcome));
        endpointsDisabledTotal.inc(count('endpointsDisabled'));
      }
    },
  };
}

/** unavailable (the request was answered 503), invalid_input, query (another SQLSTATE or Prisma code), or null. */
export function databaseErrorKind(error: unknown): 'unavailable' | 'invalid_input' | 'query' | null {
  if (isDatabaseUnavailable(error)) return 'unavailable';
  if (errorCodes(error).some((code) => INVALID_INPUT_CODES.has(code))) return 'invalid_input';
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return null;
  return /^P\d{4}$|^[0-9A-Z]{5}$/.test(code) ? 'query' : null;
}

/** How long a scrape waits for the database before it reports it down (and the status gauges absent). */
const SCRAPE_DB_TIMEOUT_MS = 2_000;

/**
 * The answer of `work`, or `fallback` when it fails or takes longer than `timeoutMs`: a database that hangs (a full
 * pool, a black-holed host) must not hang the scrape, or `keyforge_database_up 0` would never reach Prometheus.
 */
async function within<T>(work: () => Promise<T>, timeoutMs: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work(),
      new Promise<T>((resolve) => {
        timer = setTimeout(() => resolve(fallback), timeoutMs);
      }),
    ]);
  } catch {
    return fallback;
  } finally {
    clearTimeout(timer);
  }
}

/** Whether a request may read the metrics: no token configured, or `Authorization: Bearer <METRICS_TOKEN>`. */
export function metricsAuthorized(token: string | undefined, authorization: string | undefined | null): boolean {
  if (!token) return true;
  const presented = /^Bearer (.+)$/i.exec(authorization ?? '')?.[1] ?? '';
  // Digests of equal length: the comparison takes the same time whatever was sent.
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(presented), digest(token));
}

/** The exposition as an HTTP answer (status, content type, body). */
export async function metricsResponse(metrics: Metrics, token: string | undefined, authorization: string | undefined | null) {
  if (!metricsAuthorized(token, authorization)) return { status: 401, contentType: 'text/plain; charset=utf-8', body: 'Send Authorization: Bearer <METRICS_TOKEN>.\n' };
  return { status: 200, contentType: metrics.registry.contentType, body: await metrics.registry.metrics() };
}

/**
 * The separate metrics listener (METRICS_PORT, on METRICS_HOST): `GET /metrics` only. It is how `pnpm worker`, which
 * serves no HTTP otherwise, is scraped; a server may use it too to keep /metrics off its public port.
 */
export function serveMetrics(metrics: Metrics, options: { port: number; host: string; token?: string }, logger: Logger): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: the metrics are at GET /metrics.\n');
      return;
    }
    metricsResponse(metrics, options.token, request.headers.authorization)
      .then(({ status, contentType, body }) => response.writeHead(status, { 'content-type': contentType }).end(body))
      .catch((error: Error) => {
        logger.warn({ err: error.message }, 'metrics collection failed');
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Metrics collection failed; see the log.\n');
      });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
