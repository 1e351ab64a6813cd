import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_NAMES } from '../server/src/jobs/index.js';
import { startJobs, type Jobs } from '../server/src/jobs/scheduler.js';
import { systemActor } from '../server/src/services/auth/actor.js';
import { createMetrics } from '../server/src/metrics/index.js';
import { suspendLicense } from '../server/src/services/licenses/lifecycle.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { itWith, needCommands, needRedis } from './support/optional.js';
import { freePort, postJson, startServerProcess, startWorkerProcess, stopAllProcesses, type ServerProcess, type WorkerProcess } from './support/processes.js';
import { promtoolMetricsLint, scrape, valueOf, type Family, type Scrape } from './support/prometheus.js';
import { waitUntil } from './support/wait.js';

/**
 * /metrics on a real server and a real `pnpm worker` (docs/operate/observability.md): scraped after real traffic, parsed
 * with a Prometheus text-format parser, every counter checked to have moved by exactly the traffic sent.
 */
const TOKEN = 'metrics-token-0123456789abcdef';
const redis = await needRedis();
const promtool = needCommands('promtool');
const clock = TestClock.startingNow();

let t: TestApp;
let server: ServerProcess;
let worker: WorkerProcess;
let workerMetricsUrl: string;
let jobs: Jobs;
let keys: { valid: string; suspended: string; limited: string };

beforeAll(async () => {
  t = await startTestApp({ clock });
  const { tenant, product, key } = await t.seedBasic();
  const suspended = await t.seedLicense(tenant.id, product.id);
  await suspendLicense({ ...t.deps, now: clock.now(), actor: systemActor(tenant.id), meta: { ip: null, userAgent: null } }, { id: suspended.license.id });
  const limited = await t.seedLicense(tenant.id, product.id);
  keys = { valid: key, suspended: suspended.key, limited: limited.key };
  const shared = { DATABASE_URL: t.databaseUrl, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, LOG_LEVEL: 'warn' };
  server = await startServerProcess({
    ...shared,
    JOBS_WORKER: 'false',
    METRICS_TOKEN: TOKEN,
    RATE_LIMIT_LICENSE_PER_MINUTE: '3',
    // Nothing answers there: the server counts its limits in memory and says Redis is down.
    REDIS_URL: 'redis://127.0.0.1:1',
  });
  const metricsPort = await freePort();
  workerMetricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  worker = await startWorkerProcess({ ...shared, LOG_LEVEL: 'info', METRICS_PORT: String(metricsPort), ...(redis.missing ? {} : { REDIS_URL: redis.url }) });
  jobs = await startJobs(t.deps, { worker: false });
}, 120_000);

afterAll(async () => {
  await jobs?.stop();
  await stopAllProcesses();
  await t?.close();
});

const activate = async (licenseKey: string, deviceId: string, nonce?: string) => {
  nonce ??= ((await (await fetch(`${server.url}/api/v1/nonce`)).json()) as { nonce: string }).nonce;
  return postJson(`${server.url}/api/v1/activate`, { licenseKey, nonce, deviceId });
};
const delta = (before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}) => valueOf(after, name, labels) - valueOf(before, name, labels);

describe('GET /metrics on the server', () => {
  it('is refused without the bearer token', async () => {
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
    const { families } = await scrape(`${server.url}/metrics`, TOKEN);
    expect(families.get('keyforge_http_requests_total')?.type).toBe('COUNTER');
    expect(families.get('keyforge_licensing_requests_total')?.type).toBe('COUNTER');
    expect(families.get('keyforge_rate_limit_refusals_total')?.type).toBe('COUNTER');
  });

  it('before the first full verification, keyforge_audit_verification_ok is absent (not 0: the critical alert would fire on a fresh install)', async () => {
    expect(await t.prisma.auditVerdict.count()).toBe(0);
    const { families, samples } = await scrape(`${server.url}/metrics`, TOKEN);
    expect(families.get('keyforge_audit_verification_ok')?.metrics ?? []).toEqual([]);
    expect(samples.get('keyforge_audit_verification_ok')?.metrics ?? []).toEqual([]);
    expect(samples.get('keyforge_audit_last_verification_timestamp_seconds')?.metrics ?? []).toEqual([]);
  });

  it('counts requests, licensing outcomes by rejection and error code, and rate-limit refusals by limit', async () => {
    const before = await scrape(`${server.url}/metrics`, TOKEN);

    expect((await activate(keys.valid, 'device-1')).json.isValid).toBe(true);
    expect((await activate(keys.suspended, 'device-2')).json).toMatchObject({ isValid: false, errorCode: 'Suspended' });
    expect((await activate(keys.valid, 'device-3', 'made-up-nonce')).status).toBe(422);
    expect((await postJson(`${server.url}/api/v1/validate`, { licenseKey: keys.valid })).json.isValid).toBe(true);
    expect((await postJson(`${server.url}/api/v1/validate`, { licenseKey: 'ACME-0000-0000-0000-0000' })).json.errorCode).toBe('LicenseNotFound');
    // RATE_LIMIT_LICENSE_PER_MINUTE=3: the fourth call of this license in the minute is refused.
    const limited = [];
    for (let i = 0; i < 4; i++) limited.push((await postJson(`${server.url}/api/v1/validate`, { licenseKey: keys.limited })).status);
    expect(limited).toEqual([200, 200, 200, 429]);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    const after = await scrape(`${server.url}/metrics`, TOKEN);
    const text = after.text;
    const outcome = (operation: string, result: string, code: string) => delta(before, after, 'keyforge_licensing_requests_total', { operation, result, code });
    expect(outcome('activate', 'valid', 'none')).toBe(1);
    expect(outcome('activate', 'rejected', 'Suspended')).toBe(1);
    expect(outcome('activate', 'error', 'NonceInvalid')).toBe(1);
    expect(outcome('validate', 'valid', 'none')).toBe(4);
    expect(outcome('validate', 'rejected', 'LicenseNotFound')).toBe(1);
    expect(outcome('validate', 'error', 'RateLimited')).toBe(1);
    expect(delta(before, after, 'keyforge_rate_limit_refusals_total', { limit: 'license' })).toBe(1);

    const requests = (route: string, method: string, status_class: string) => delta(before, after, 'keyforge_http_requests_total', { route, method, status_class });
    expect(requests('/api/v1/activate', 'POST', '2xx')).toBe(2);
    expect(requests('/api/v1/activate', 'POST', '4xx')).toBe(1);
    expect(requests('/api/v1/nonce', 'GET', '2xx')).toBe(2);
    expect(requests('/api/v1/validate', 'POST', '4xx')).toBe(1);
    expect(requests('/healthz', 'GET', '2xx')).toBe(1);
    expect(delta(before, after, 'keyforge_http_request_duration_seconds_count', { route: '/api/v1/validate', method: 'POST' })).toBe(6);
    expect(after.families.get('keyforge_http_request_duration_seconds')?.type).toBe('HISTOGRAM');
    const buckets = after.samples.get('keyforge_http_request_duration_seconds_bucket')!.metrics.filter((m) => m.labels!.route === '/api/v1/validate').map((m) => Number(m.labels!.le));
    expect(buckets[0]).toBeLessThanOrEqual(0.0005);
    expect(Math.max(...buckets.filter(Number.isFinite))).toBeGreaterThanOrEqual(5);

    // Bounded labels: no key, email or id anywhere in the exposition.
    for (const secret of [keys.valid, keys.suspended, keys.limited, 'device-1', t.config.serverSecret!, TOKEN]) expect(text).not.toContain(secret);
    for (const family of after.samples.values()) for (const metric of family.metrics) for (const value of Object.values(metric.labels ?? {})) expect(value).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
  });

  it('reports the database pool and reachability, Redis down, the outboxes, the audit and the signing key', async () => {
    const scraped = await scrape(`${server.url}/metrics`, TOKEN);
    const { families } = scraped;
    const types: Record<string, Family['type']> = {
      keyforge_database_pool_connections: 'GAUGE',
      keyforge_database_up: 'GAUGE',
      keyforge_redis_up: 'GAUGE',
      keyforge_email_outbox_pending: 'GAUGE',
      keyforge_email_outbox_oldest_pending_age_seconds: 'GAUGE',
      keyforge_webhook_deliveries_pending: 'GAUGE',
      keyforge_webhook_oldest_pending_age_seconds: 'GAUGE',
      keyforge_webhook_endpoints_disabled: 'GAUGE',
      keyforge_signing_key_age_seconds: 'GAUGE',
      keyforge_http_request_duration_seconds: 'HISTOGRAM',
      process_cpu_seconds_total: 'COUNTER',
      process_resident_memory_bytes: 'GAUGE',
    };
    for (const [name, type] of Object.entries(types)) expect(families.get(name)?.type, name).toBe(type);
    expect(valueOf(scraped, 'keyforge_database_up')).toBe(1);
    expect(valueOf(scraped, 'keyforge_redis_up')).toBe(0);
    expect(families.get('keyforge_database_pool_connections')!.metrics.map((m) => m.labels!.state).sort()).toEqual(['idle', 'in_use', 'waiting']);
    expect(valueOf(scraped, 'keyforge_signing_key_age_seconds')).toBeGreaterThanOrEqual(0);
  });

  itWith(promtool)('passes promtool check metrics (Prometheus naming conventions)', async () => {
    const { text } = await scrape(`${server.url}/metrics`, TOKEN);
    expect(promtoolMetricsLint(text)).toBeNull();
  });
});

describe('the worker’s metrics listener (METRICS_PORT)', () => {
  it("every job's run counters exist at 0 before its first run, so a first failure is an increase (KeyforgeJobFailing)", async () => {
    const scraped = await scrape(workerMetricsUrl);
    const series = scraped.samples.get('keyforge_job_runs_total')!.metrics;
    for (const job of JOB_NAMES) {
      for (const outcome of ['success', 'failure']) expect(series.some((metric) => metric.labels?.job === job && metric.labels?.outcome === outcome), `${job} ${outcome}`).toBe(true);
    }
    expect(valueOf(scraped, 'keyforge_job_runs_total', { job: 'weekly-digest', outcome: 'failure' })).toBe(0);
  });

  it('counts job runs with their outcome, duration and last success, and email attempts, and reads the outbox backlog', async () => {
    await t.prisma.emailOutbox.create({ data: { kind: 'test', idempotencyKey: `metrics-test-${Date.now()}`, toAddress: 'ops@acme.test', subject: 'Hello', html: '<p>Hello</p>', text: 'Hello' } });
    const before = await scrape(workerMetricsUrl);
    expect(valueOf(before, 'keyforge_email_outbox_pending')).toBe(1);
    expect(valueOf(before, 'keyforge_email_outbox_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(0);
    await jobs.runNow('email-delivery');
    const after = await waitUntil(
      async () => {
        const scraped = await scrape(workerMetricsUrl);
        return delta(before, scraped, 'keyforge_email_delivery_attempts_total', { outcome: 'sent' }) >= 1 ? scraped : null;
      },
      { timeout: 60_000, interval: 250, what: 'the worker to deliver the email' },
    );
    expect(delta(before, after, 'keyforge_email_delivery_attempts_total', { outcome: 'sent' })).toBe(1);
    expect(delta(before, after, 'keyforge_job_runs_total', { job: 'email-delivery', outcome: 'success' })).toBeGreaterThanOrEqual(1);
    expect(delta(before, after, 'keyforge_job_duration_seconds_count', { job: 'email-delivery' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(after, 'keyforge_job_last_success_timestamp_seconds', { job: 'email-delivery' })).toBeGreaterThan(Date.now() / 1000 - 120);
    expect(valueOf(after, 'keyforge_email_outbox_pending')).toBe(0);
    expect(valueOf(after, 'keyforge_process_info', { role: 'worker' })).toBe(1);
    expect(valueOf(after, 'keyforge_http_requests_total')).toBe(0);
  }, 90_000);

  itWith(redis)('says Redis is up when it answers', async () => {
    expect(valueOf(await scrape(workerMetricsUrl), 'keyforge_redis_up')).toBe(1);
  });

  it('answers 404 for anything but GET /metrics', async () => {
    expect((await fetch(workerMetricsUrl.replace('/metrics', '/'))).status).toBe(404);
  });
});

describe('a database that hangs', () => {
  it('does not hang the scrape: it answers with the database down', async () => {
    // Every query waits forever, as behind a full pool or a black-holed host.
    const never = () => new Promise<never>(() => {});
    const hanging = { ...t.deps.db, ping: never, sql: { ...t.deps.db.sql, query: never } } as unknown as typeof t.deps.db;
    const metrics = createMetrics({ db: hanging, redisReachable: () => null, role: 'server' });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^keyforge_database_up(\{[^}]*\})? 0$/m);
    expect(text).toContain('keyforge_email_outbox_pending');
  });
});
