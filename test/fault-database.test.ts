import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateLicenseKey } from '../server/src/crypto/license-key.js';
import { ServerSecrets, sha256 } from '../server/src/crypto/secrets.js';
import { openDatabase } from '../server/src/db/database.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { verifyAuditChain } from '../server/src/services/audit/audit-log.js';
import { enqueueEmails } from '../server/src/services/notifications/outbox.js';
import { startServerProcess, startWorkerProcess, stopAllProcesses, type ServerProcess } from './support/processes.js';
import { startPrivatePg, type PrivatePg } from './support/private-pg.js';
import { SEED_PASSWORD, seedDatabase } from './support/seed.js';
import { waitUntil } from './support/wait.js';

/**
 * The database stops (pg_ctl -m immediate) under load while `pnpm start` (JOBS_WORKER=true)
 * serves; every request answers 503 + Retry-After, the process stays up and serves again once it returns.
 * The job store's LISTEN backend terminated alone changes nothing for clients. Under activation, deactivation
 * and management load through an outage, what clients were told holds afterwards: seat counters equal the
 * active rows, every acknowledged activation is there and nothing doubled, every answered nonce is spent and the
 * activity log's chain verifies.
 */
let cluster: PrivatePg;
let server: ServerProcess;
// Waits for a condition use waitUntil (test/support/wait.ts). The two fixed pauses left are not waits:
// `pace` is a load client's pause between requests (and before retrying one), as a real client's would be;
// `faultLasts` is how long PostgreSQL stays down, the fault's own duration.
const pace = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const faultLasts = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const SECRET = 'fault-test-secret-0123456789abcdef0123456789';
// The load below is far above the default per-IP limit; the limits are not what these tests are about.
const UNLIMITED = { RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000', RATE_LIMIT_TENANT_PER_MINUTE: '1000000', RATE_LIMIT_LICENSE_PER_MINUTE: '1000000' };

beforeAll(async () => {
  cluster = await startPrivatePg();
  await applyMigrations({ kind: 'pg', url: cluster.url });
  server = await startServerProcess({ DATABASE_URL: cluster.url, SERVER_SECRET: SECRET, JOBS_WORKER: 'true', LOG_LEVEL: 'info', DATA_DIR: `/tmp/kf-fault-${process.pid}`, ...UNLIMITED });
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await stopAllProcesses();
  cluster?.destroy();
});

// Well formed, so every request reaches the database (an unknown key answers 404).
const unknownKey = generateLicenseKey('KF');
const validate = () =>
  fetch(`${server.url}/api/v1/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ licenseKey: unknownKey }) });

describe('database loss', () => {
  it('answers 503 + Retry-After while PostgreSQL is down and recovers without a restart', async () => {
    const before = await validate();
    expect(before.status).not.toBe(503);
    expect(before.status).toBeLessThan(500);

    // Load during the outage: one request after another.
    let loading = true;
    const statuses: number[] = [];
    const retryAfter = new Set<string | null>();
    const load = (async () => {
      while (loading) {
        const response = await validate().catch(() => undefined);
        if (response) {
          statuses.push(response.status);
          if (response.status >= 500) retryAfter.add(response.headers.get('retry-after'));
          await response.arrayBuffer();
        } else statuses.push(0);
        await pace(20);
      }
    })();
    await waitUntil(() => statuses.length >= 5, { what: 'the load to be answered before the outage' });
    cluster.stopImmediate();
    // Down until the load has been told so several times (not a fixed time: a busy machine answers fewer per second).
    await waitUntil(() => statuses.filter((status) => status === 503).length >= 5, { timeout: 30_000, what: 'five 503 answers during the outage' });

    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toMatch(/^\d+$/);
    const graphql = await fetch(`${server.url}/api/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __typename }' }) });
    expect(graphql.status).not.toBe(500);

    cluster.start();
    const restarted = Date.now();
    await waitUntil(
      async () => {
        const response = await validate();
        await response.arrayBuffer();
        return response.status < 500;
      },
      { timeout: 30_000, what: 'an answer below 500 after the restart' },
    );
    // docs/operate/failures.md documents this figure.
    const firstOk = Date.now() - restarted;
    loading = false;
    await load;

    expect(server.child.exitCode, server.output()).toBeNull();
    // About a second on an idle machine; the bound leaves room for a busy one (the full suite runs beside it).
    expect(firstOk, `first answer ${firstOk} ms after the restart`).toBeLessThan(5_000);
    // Every failure was a 503 with Retry-After (never a 500, never a refused connection).
    expect(statuses).not.toContain(0);
    expect(statuses.filter((status) => status >= 500 && status !== 503)).toEqual([]);
    expect(statuses).toContain(503);
    expect([...retryAfter].every((value) => value !== null && /^\d+$/.test(value))).toBe(true);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  }, 90_000);

  it('survives its LISTEN backend being terminated and listens again', async () => {
    const admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    try {
      const listeners = async () =>
        (await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`)).rows;
      const before = await waitUntil(async () => {
        const rows = await listeners();
        return rows.length > 0 && rows;
      }, { timeout: 30_000, interval: 200, what: 'a LISTEN backend' });
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`);
      const response = await validate();
      expect(response.status).toBeLessThan(500);
      await waitUntil(async () => {
        const after = await listeners();
        return after.length > 0 && after.some((row) => !before.some((old) => old.pid === row.pid));
      }, { timeout: 30_000, interval: 200, what: 'a new LISTEN backend' });
      expect(server.child.exitCode, server.output()).toBeNull();
      // The new LISTEN shows in pg_stat_activity before the server has logged it: wait for the line too.
      await waitUntil(() => server.output().includes('job store LISTEN connection restored'), { timeout: 30_000, what: 'the log line "job store LISTEN connection restored"' });
    } finally {
      await admin.end();
    }
  }, 60_000);

  it('a standalone worker waits through a PostgreSQL restart and carries on: it delivers an email queued after it', async () => {
    // The worker has a database of its own on the same cluster (so the same restart), whose job store no other
    // process polls: the email queued after the restart can only be delivered by it.
    const workerUrl = new URL(cluster.url);
    workerUrl.pathname = '/worker_alone';
    const admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    await admin.query('CREATE DATABASE worker_alone');
    await admin.end();
    await applyMigrations({ kind: 'pg', url: workerUrl.href });
    const tenantId = await seedDatabase(workerUrl.href, SECRET, async (seed) => (await seed.tenant({ name: 'Worker Co', keyPrefix: 'WRK' })).id);
    const worker = await startWorkerProcess({ DATABASE_URL: workerUrl.href, SERVER_SECRET: SECRET, LOG_LEVEL: 'info', DATA_DIR: `/tmp/kf-fault-${process.pid}` });
    const logSince = (offset: number) => worker.output().slice(offset);

    const stoppedAt = worker.output().length;
    cluster.stopImmediate();
    await waitUntil(() => logSince(stoppedAt).includes('job store LISTEN connection lost'), { timeout: 30_000, what: 'the worker to notice the outage' });
    // Longer than the scheduler's 5 s poll, so a poll of the job store meets the outage too.
    await faultLasts(6_000);
    expect(worker.child.exitCode, worker.output()).toBeNull();
    const restartedAt = worker.output().length;
    cluster.start();
    await waitUntil(() => logSince(restartedAt).includes('job store LISTEN connection restored'), { timeout: 60_000, what: 'the worker to listen again' });

    // An email queued after the restart, delivered by the worker (no POSTMARK_SERVER_TOKEN: the development
    // transport logs each outbox id it keeps). email-delivery is made due until it has run (a run the outage
    // interrupted keeps its lock until the lock's lifetime ends, then the next one takes it).
    const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-fault-outbox-'));
    const db = await openDatabase({ databaseUrl: workerUrl.href, dataDir, poolSize: 1 });
    try {
      await enqueueEmails(db.prisma, [{ tenantId, kind: 'test', idempotencyKey: 'fault-worker-restart', to: 'ops@worker.test', subject: 'After the restart', html: '<p>x</p>', text: 'x' }], new Date());
      const outboxId = (await db.prisma.emailOutbox.findFirstOrThrow({ where: { tenantId, idempotencyKey: 'fault-worker-restart' }, select: { id: true } })).id;
      await waitUntil(
        async () => {
          const { status } = await db.prisma.emailOutbox.findUniqueOrThrow({ where: { id: outboxId }, select: { status: true } });
          if (status === 'sent') return true;
          await db.sql.query(`UPDATE agenda.agenda_jobs SET next_run_at = now() WHERE name = 'email-delivery' AND type = 'single' AND locked_at IS NULL`, []);
          return false;
        },
        { timeout: 180_000, interval: 1_000, what: 'the worker to deliver an email queued after the restart' },
      ).catch((error: Error) => {
        throw new Error(`${error.message}\nthe worker's log:\n${worker.output().slice(-6_000)}`);
      });
      expect(worker.output()).toContain(outboxId);
    } finally {
      await db.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
    expect(await worker.stop('SIGTERM'), worker.output()).toBe(0);
    // The server beside it came through the same restart.
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  }, 300_000);

  it('under activation, deactivation and management load through an outage: nothing acknowledged is lost, nothing doubled', async () => {
    const fleet = await startFleet('FLT', () => server.url);
    let authenticatedGraphql: { status: number; retryAfter: string | null; body: unknown } | undefined;
    await fleet.run(async () => {
      const before = fleet.statuses.length;
      cluster.stopImmediate();
      await waitUntil(() => fleet.statuses.slice(before).includes(503), { timeout: 30_000, what: 'the fleet to meet the outage' });
      // Authenticated GraphQL: the credential lookup meets the outage before GraphQL runs; GraphQL's shape all the same.
      const response = await fetch(`${server.url}/api/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${fleet.token}` }, body: JSON.stringify({ query: '{ me { email } }' }) });
      authenticatedGraphql = { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
      await faultLasts(1_500);
      cluster.start();
    });
    expect(authenticatedGraphql).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/), body: { errors: [{ message: expect.any(String), extensions: { code: 'ServiceUnavailable' } }] } });
    expect(server.child.exitCode, server.output()).toBeNull();
    // While the database was away clients got 503s, never a 500 or a refused connection.
    expect(fleet.statuses.filter((status) => status !== 200 && status !== 503)).toEqual([]);
    expect(fleet.statuses).toContain(503);
    await fleet.checkInvariants();
  }, 120_000);

  it('a server SIGKILLed under the same load: its replacement serves, nothing acknowledged is lost, nothing doubled', async () => {
    let victim = await startServerProcess({ DATABASE_URL: cluster.url, SERVER_SECRET: SECRET, JOBS_WORKER: 'false', LOG_LEVEL: 'warn', DATA_DIR: `/tmp/kf-fault-kill-${process.pid}`, ...UNLIMITED });
    const fleet = await startFleet('KIL', () => victim.url);
    await fleet.run(async () => {
      const before = fleet.statuses.length;
      await victim.stop('SIGKILL');
      await waitUntil(() => fleet.statuses.slice(before).includes(0), { timeout: 30_000, what: 'the fleet to meet the dead server' });
      victim = await startServerProcess({ DATABASE_URL: cluster.url, SERVER_SECRET: SECRET, JOBS_WORKER: 'false', LOG_LEVEL: 'warn', DATA_DIR: `/tmp/kf-fault-kill-${process.pid}`, ...UNLIMITED });
    });
    try {
      // Requests cut by the kill saw a dropped connection (0), never a 500.
      expect(fleet.statuses.filter((status) => status !== 200 && status !== 0)).toEqual([]);
      expect(fleet.statuses).toContain(0);
      await fleet.checkInvariants();
    } finally {
      await victim.stop();
    }
  }, 120_000);
});

/**
 * Clients of one tenant (4 licenses of 8 seats and an admin) that keep activating new devices, deactivating
 * active ones and updating licenses around a fault, and remember what they were told. A device's expected
 * state is its last definitive answer; an unanswered request (503 or a dropped connection) leaves it unknown
 * until the same request is repeated — for an activation, the same deviceId with a fresh nonce: the
 * documented safe retry.
 */
async function startFleet(keyPrefix: string, baseUrl: () => string) {
  const secrets = new ServerSecrets(SECRET);
  const email = `ops@${keyPrefix.toLowerCase()}.test`;
  // seedDatabase closes its connections before the fault, so none of this process is caught by it.
  const { tenantId, licenses } = await seedDatabase(cluster.url, SECRET, async (seed) => {
    const tenant = await seed.tenant({ name: `Fault ${keyPrefix}`, keyPrefix });
    const product = await seed.product(tenant.id, 'Fault Studio');
    const licenses = [];
    for (let i = 0; i < 4; i++) licenses.push(await seed.license(tenant.id, product.id, { maxActivations: 8 }));
    await seed.user(tenant.id, { email, role: 'CompanyAdmin' });
    return { tenantId: tenant.id, licenses };
  });

  const post = async (pathname: string, body: unknown, headers: Record<string, string> = {}) => {
    try {
      const response = await fetch(`${baseUrl()}${pathname}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
      const text = await response.text();
      return { status: response.status, json: text ? JSON.parse(text) : undefined };
    } catch {
      return { status: 0, json: undefined };
    }
  };
  const getNonce = async () => {
    try {
      const response = await fetch(`${baseUrl()}/api/v1/nonce`);
      return { status: response.status, nonce: response.status === 200 ? ((await response.json()) as { nonce: string }).nonce : null };
    } catch {
      return { status: 0, nonce: null };
    }
  };
  const login = await post('/api/graphql', { query: 'mutation($e: String!, $p: String!) { login(input: { email: $e, password: $p }) { __typename ... on LoginSuccess { accessToken } } }', variables: { e: email, p: SEED_PASSWORD } });
  const token: string = login.json.data.login.accessToken;

  const statuses: number[] = [];
  const counted = (status: number) => (statuses.push(status), status);
  const expected = new Map<string, 'active' | 'inactive' | 'unknown'>();
  const keyOf = new Map<string, string>();
  const lastAttempt = new Map<string, 'activate' | 'deactivate'>();
  const spentNonces: string[] = [];
  const acknowledged = { activations: 0, deactivations: 0, updates: 0 };
  let uncertainUpdates = 0;

  async function activate(device: string): Promise<boolean> {
    lastAttempt.set(device, 'activate');
    const { status, nonce } = await getNonce();
    if (counted(status) !== 200 || !nonce) return false;
    const response = await post('/api/v1/activate', { licenseKey: keyOf.get(device), nonce, deviceId: device });
    if (counted(response.status) !== 200) return false;
    spentNonces.push(nonce);
    if (response.json.isValid) acknowledged.activations++;
    else expect(response.json.errorCode).toBe('SeatsExhausted');
    expected.set(device, response.json.isValid ? 'active' : 'inactive');
    return true;
  }
  async function deactivate(device: string): Promise<boolean> {
    lastAttempt.set(device, 'deactivate');
    const response = await post('/api/v1/deactivate', { licenseKey: keyOf.get(device), deviceId: device });
    if (counted(response.status) !== 200) return false;
    if (response.json.deactivated) acknowledged.deactivations++;
    expected.set(device, 'inactive');
    return true;
  }

  let loading = true;
  const activator = async (worker: number) => {
    for (let n = 0; loading; n++) {
      const device = `device-${worker}-${n}`;
      keyOf.set(device, licenses[n % licenses.length].key);
      expected.set(device, 'unknown');
      while (loading && !(await activate(device))) await pace(20);
    }
  };
  const deactivator = async () => {
    const retry: string[] = [];
    while (loading) {
      const device = retry.pop() ?? [...expected].find(([, state]) => state === 'active')?.[0];
      if (device) {
        expected.set(device, 'unknown');
        if (!(await deactivate(device))) retry.push(device);
      }
      await pace(15);
    }
  };
  const admin = async () => {
    for (let n = 1; loading; n++) {
      const response = await post(
        '/api/graphql',
        { query: 'mutation($id: ID!, $days: Int!) { updateLicense(input: { id: $id, offlineGraceDays: $days }) { license { id } } }', variables: { id: licenses[n % licenses.length].license.id, days: n } },
        { authorization: `Bearer ${token}` },
      );
      counted(response.status);
      if (response.status === 200 && response.json.data?.updateLicense.license) acknowledged.updates++;
      else uncertainUpdates++;
      await pace(30);
    }
  };

  return {
    statuses,
    /** The admin's access token, for calls of a test's own. */
    token,
    /**
     * Load until some work is acknowledged, the fault, load until more is, then every unknown device's request
     * repeated until it answers. Counted, not timed: a busy machine does less per second.
     */
    async run(fault: () => Promise<void>) {
      const load = Promise.all([activator(0), activator(1), activator(2), deactivator(), admin()]);
      await waitUntil(() => acknowledged.activations >= 6 && acknowledged.deactivations >= 2 && acknowledged.updates >= 2, { timeout: 60_000, what: 'work acknowledged before the fault' });
      await fault();
      const atFault = { ...acknowledged };
      await waitUntil(
        () => acknowledged.activations >= atFault.activations + 6 && acknowledged.deactivations > 3 && acknowledged.updates >= atFault.updates + 2,
        { timeout: 60_000, what: 'work acknowledged after the fault' },
      );
      loading = false;
      await load;
      for (const [device, state] of expected) {
        if (state !== 'unknown') continue;
        const retry = lastAttempt.get(device) === 'deactivate' ? deactivate : activate;
        await waitUntil(() => retry(device), { timeout: 30_000, interval: 100, what: `an answer for ${device} after the fault` });
      }
    },
    async checkInvariants() {
      // The load did real work on both sides of the fault, so the checks cannot pass on nothing.
      expect(acknowledged.activations).toBeGreaterThan(10);
      expect(acknowledged.deactivations).toBeGreaterThan(3);
      expect(acknowledged.updates).toBeGreaterThan(3);
      expect(uncertainUpdates).toBeGreaterThan(0);
      const check = new pg.Client({ connectionString: cluster.url });
      await check.connect();
      try {
        // Seat counters equal the active activation rows and never exceed the maximum.
        const seats = await check.query<{ current: number; max: number; active: number }>(
          `SELECT l.current_activations AS current, l.max_activations AS max, count(a.id) FILTER (WHERE a.deactivated_at IS NULL)::int AS active
             FROM licenses l LEFT JOIN activations a ON a.license_id = l.id WHERE l.tenant_id = $1 GROUP BY l.id`,
          [tenantId],
        );
        expect(seats.rows).toHaveLength(4);
        for (const row of seats.rows) {
          expect(row.current).toBe(row.active);
          expect(row.current).toBeLessThanOrEqual(row.max);
        }
        // No device holds two seats of one license (a retried activation reused its seat).
        const doubled = await check.query(`SELECT license_id, device_id FROM activations WHERE tenant_id = $1 AND deactivated_at IS NULL GROUP BY 1, 2 HAVING count(*) > 1`, [tenantId]);
        expect(doubled.rows).toEqual([]);
        // Exactly the devices last told "active" hold a seat: none lost, none phantom.
        const active = await check.query<{ device_id: string }>(`SELECT device_id FROM activations WHERE tenant_id = $1 AND deactivated_at IS NULL`, [tenantId]);
        const expectedActive = [...expected].filter(([, state]) => state === 'active').map(([device]) => device);
        expect(active.rows.map((row) => row.device_id).sort()).toEqual(expectedActive.sort());
        // Every nonce of an activation that answered 200 (accepted or rejected) is spent.
        const nonces = await check.query<{ unspent: number; found: number }>(
          `SELECT count(*) FILTER (WHERE consumed_at IS NULL)::int AS unspent, count(*)::int AS found FROM nonces WHERE digest = ANY($1)`,
          [spentNonces.map(sha256)],
        );
        expect(nonces.rows[0]).toEqual({ unspent: 0, found: spentNonces.length });
        // Every acknowledged update is in the activity log; an unanswered one may or may not be.
        const updates = await check.query<{ n: number }>(`SELECT count(*)::int AS n FROM audit_log WHERE tenant_id = $1 AND action = 'UpdateLicense'`, [tenantId]);
        expect(updates.rows[0].n).toBeGreaterThanOrEqual(acknowledged.updates);
        expect(updates.rows[0].n).toBeLessThanOrEqual(acknowledged.updates + uncertainUpdates);
      } finally {
        await check.end();
      }
      // The activity log's hash chain is whole.
      const verifyDir = mkdtempSync(path.join(tmpdir(), 'kf-fault-verify-'));
      const verifier = await openDatabase({ databaseUrl: cluster.url, dataDir: verifyDir, poolSize: 1 });
      try {
        expect(await verifyAuditChain(verifier.prisma, tenantId, secrets.auditChainKey)).toMatchObject({ valid: true, brokenAtSeq: null });
      } finally {
        await verifier.close();
        rmSync(verifyDir, { recursive: true, force: true });
      }
    },
  };
}
