import { spawn } from 'node:child_process';
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
import { createLicense } from '../server/src/services/licenses.js';
import { createProduct } from '../server/src/services/products.js';
import { createTenant } from '../server/src/services/tenants.js';
import { createUser } from '../server/src/services/users.js';
import { startServerProcess, type ServerProcess } from './support/processes.js';
import { startPrivatePg, type PrivatePg } from './support/private-pg.js';

/**
 * Issue 10: the database stops (pg_ctl -m immediate) under load while `pnpm start` (JOBS_WORKER=true)
 * serves; every request answers 503 + Retry-After, the process stays up and serves again once it returns.
 * The job store's LISTEN backend terminated alone changes nothing for clients. Under activation, deactivation
 * and management load through an outage, what clients were told holds afterwards: seat counters equal the
 * active rows, every acknowledged activation is there and nothing doubled, every answered nonce is spent and the
 * activity log's chain verifies.
 */
let cluster: PrivatePg;
let server: ServerProcess;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
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
        await sleep(20);
      }
    })();
    await sleep(300);
    cluster.stopImmediate();
    await sleep(3_000);

    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toMatch(/^\d+$/);
    const graphql = await fetch(`${server.url}/api/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __typename }' }) });
    expect(graphql.status).not.toBe(500);

    cluster.start();
    const restarted = Date.now();
    let firstOk = 0;
    while (Date.now() - restarted < 30_000) {
      const response = await validate();
      await response.arrayBuffer();
      if (response.status < 500) {
        firstOk = Date.now() - restarted;
        break;
      }
      await sleep(50);
    }
    loading = false;
    await load;

    expect(server.child.exitCode, server.output()).toBeNull();
    expect(firstOk, 'first answer after restart').toBeGreaterThan(0);
    expect(firstOk).toBeLessThan(2_000);
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
      let deadline = Date.now() + 30_000;
      while ((await listeners()).length === 0 && Date.now() < deadline) await sleep(200);
      const before = await listeners();
      expect(before.length).toBeGreaterThan(0);
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`);
      const response = await validate();
      expect(response.status).toBeLessThan(500);
      deadline = Date.now() + 30_000;
      let after = await listeners();
      while ((after.length === 0 || after.every((row) => before.some((old) => old.pid === row.pid))) && Date.now() < deadline) {
        await sleep(200);
        after = await listeners();
      }
      expect(after.length).toBeGreaterThan(0);
      expect(server.child.exitCode, server.output()).toBeNull();
      expect(server.output()).toContain('job store LISTEN connection restored');
    } finally {
      await admin.end();
    }
  }, 60_000);

  it('a standalone worker waits through a PostgreSQL restart and carries on', async () => {
    const env = { ...process.env, DATABASE_URL: cluster.url, SERVER_SECRET: SECRET, LOG_LEVEL: 'info', DATA_DIR: `/tmp/kf-fault-${process.pid}` };
    const child = spawn(process.execPath, ['--import', 'tsx', 'server/src/worker.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const deadline = Date.now() + 30_000;
    while (!output.includes('job worker started') && child.exitCode === null && Date.now() < deadline) await sleep(100);
    expect(output).toContain('job worker started');
    cluster.stopImmediate();
    await sleep(3_000);
    expect(child.exitCode, output).toBeNull();
    cluster.start();
    await sleep(3_000);
    expect(child.exitCode, output).toBeNull();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited, output).toBe(0);
    // The server beside it came through the same restart.
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  }, 60_000);
  it('under activation, deactivation and management load through an outage: nothing acknowledged is lost, nothing doubled', async () => {
    // Seed in this process, with the server's secret, so the keys match its digests.
    const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-fault-seed-'));
    const secrets = new ServerSecrets(SECRET);
    const open = () => openDatabase({ databaseUrl: cluster.url, dataDir, poolSize: 2 });
    let db = await open();
    const ctx = () => ({ db, secrets, now: new Date() });
    const tenant = await createTenant(ctx(), { name: 'Fault Co', keyPrefix: 'FLT' });
    const product = await createProduct(ctx(), tenant.id, { name: 'Fault Studio' });
    const licenses: Awaited<ReturnType<typeof createLicense>>[] = [];
    for (let i = 0; i < 4; i++) licenses.push(await createLicense(ctx(), tenant.id, product.id, { maxActivations: 8 }));
    await createUser(ctx(), 'system', { tenantId: tenant.id, email: 'ops@fault.test', password: 'correct horse battery', role: 'CompanyAdmin' }, { ip: null, userAgent: null });
    await db.close();

    const post = async (pathname: string, body: unknown, headers: Record<string, string> = {}) => {
      const response = await fetch(`${server.url}${pathname}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
      const text = await response.text();
      return { status: response.status, retryAfter: response.headers.get('retry-after'), json: text ? JSON.parse(text) : undefined };
    };
    const login = await post('/api/graphql', { query: 'mutation($e: String!, $p: String!) { login(email: $e, password: $p) { accessToken } }', variables: { e: 'ops@fault.test', p: 'correct horse battery' } });
    const token: string = login.json.data.login.accessToken;

    // What the clients were told. A device's expected state is its last definitive answer; a 503 leaves it
    // unknown until a retry (same deviceId, fresh nonce — the documented safe retry) answers.
    const statuses: number[] = [];
    const expected = new Map<string, 'active' | 'inactive' | 'unknown'>();
    const keyOf = new Map<string, string>();
    const lastAttempt = new Map<string, 'activate' | 'deactivate'>();
    const spentNonces: string[] = [];
    let acknowledgedActivations = 0;
    let acknowledgedDeactivations = 0;
    let acknowledgedUpdates = 0;
    let uncertainUpdates = 0;
    const counted = (status: number) => {
      statuses.push(status);
      return status;
    };

    async function activate(device: string): Promise<boolean> {
      lastAttempt.set(device, 'activate');
      const nonce = await fetch(`${server.url}/api/v1/nonce`).then(async (r) => (counted(r.status) === 200 ? ((await r.json()) as { nonce: string }).nonce : null));
      if (!nonce) return false;
      const response = await post('/api/v1/activate', { licenseKey: keyOf.get(device), nonce, deviceId: device });
      if (counted(response.status) !== 200) return false;
      spentNonces.push(nonce);
      if (response.json.isValid) acknowledgedActivations++;
      else expect(response.json.errorCode).toBe('SeatsExhausted');
      expected.set(device, response.json.isValid ? 'active' : 'inactive');
      return true;
    }
    async function deactivate(device: string): Promise<boolean> {
      lastAttempt.set(device, 'deactivate');
      const response = await post('/api/v1/deactivate', { licenseKey: keyOf.get(device), deviceId: device });
      if (counted(response.status) !== 200) return false;
      if (response.json.deactivated) acknowledgedDeactivations++;
      expected.set(device, 'inactive');
      return true;
    }

    let loading = true;
    const activator = async (worker: number) => {
      for (let n = 0; loading; n++) {
        const device = `device-${worker}-${n}`;
        keyOf.set(device, licenses[n % licenses.length].key);
        expected.set(device, 'unknown');
        // Retry until a definitive answer, as a client after an uncertain timeout would.
        while (loading && !(await activate(device))) await sleep(20);
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
        await sleep(15);
      }
    };
    const admin = async () => {
      for (let n = 1; loading; n++) {
        const license = licenses[n % licenses.length].license;
        const response = await post(
          '/api/graphql',
          { query: 'mutation($id: ID!, $days: Int!) { updateLicense(id: $id, input: { offlineGraceDays: $days }) { id } }', variables: { id: license.id, days: n } },
          { authorization: `Bearer ${token}` },
        );
        counted(response.status);
        if (response.status === 200 && response.json.data?.updateLicense) acknowledgedUpdates++;
        else uncertainUpdates++;
        await sleep(30);
      }
    };
    const load = Promise.all([activator(0), activator(1), activator(2), deactivator(), admin()]);
    await sleep(1_500);
    cluster.stopImmediate();
    await sleep(2_500);
    cluster.start();
    await sleep(2_500);
    loading = false;
    await load;

    // Settle: every device left unknown gets its definitive answer now that the database is back.
    for (const [device, state] of expected) {
      if (state !== 'unknown') continue;
      const deadline = Date.now() + 30_000;
      // Repeating the unanswered request is safe, whichever it was.
      const retry = lastAttempt.get(device) === 'deactivate' ? deactivate : activate;
      while (!(await retry(device))) {
        expect(Date.now()).toBeLessThan(deadline);
        await sleep(100);
      }
    }

    expect(server.child.exitCode, server.output()).toBeNull();
    // Clients only ever saw answers: 200, or 503 while the database was away; never a 500 or a refused connection.
    expect(statuses.filter((status) => status !== 200 && status !== 503)).toEqual([]);
    expect(statuses).toContain(503);
    // The load did real work on both sides of the outage, so the checks below cannot pass on nothing.
    expect(acknowledgedActivations).toBeGreaterThan(10);
    expect(acknowledgedDeactivations).toBeGreaterThan(3);
    expect(acknowledgedUpdates).toBeGreaterThan(3);
    expect(uncertainUpdates).toBeGreaterThan(0);

    const check = new pg.Client({ connectionString: cluster.url });
    await check.connect();
    try {
      // Seat counters equal the active activation rows and never exceed the maximum.
      const seats = await check.query<{ current: number; max: number; active: number }>(
        `SELECT l.current_activations AS current, l.max_activations AS max, count(a.id) FILTER (WHERE a.deactivated_at IS NULL)::int AS active
           FROM licenses l LEFT JOIN activations a ON a.license_id = l.id WHERE l.tenant_id = $1 GROUP BY l.id`,
        [tenant.id],
      );
      expect(seats.rows).toHaveLength(4);
      for (const row of seats.rows) {
        expect(row.current).toBe(row.active);
        expect(row.current).toBeLessThanOrEqual(row.max);
      }
      // No device holds two seats of one license (a retried activation reused its seat).
      const doubled = await check.query(`SELECT license_id, device_id FROM activations WHERE tenant_id = $1 AND deactivated_at IS NULL GROUP BY 1, 2 HAVING count(*) > 1`, [tenant.id]);
      expect(doubled.rows).toEqual([]);
      // Exactly the devices the clients were last told are active hold a seat: none lost, none phantom.
      const active = await check.query<{ device_id: string }>(`SELECT device_id FROM activations WHERE tenant_id = $1 AND deactivated_at IS NULL`, [tenant.id]);
      const expectedActive = [...expected].filter(([, state]) => state === 'active').map(([device]) => device);
      expect(active.rows.map((row) => row.device_id).sort()).toEqual(expectedActive.sort());
      // Every nonce of an activation that answered 200 (accepted or rejected) is spent.
      const nonces = await check.query<{ unspent: number; found: number }>(
        `SELECT count(*) FILTER (WHERE consumed_at IS NULL)::int AS unspent, count(*)::int AS found FROM nonces WHERE digest = ANY($1)`,
        [spentNonces.map(sha256)],
      );
      expect(nonces.rows[0]).toEqual({ unspent: 0, found: spentNonces.length });
      // Every acknowledged update is in the activity log; an unanswered one may or may not be.
      const updates = await check.query<{ n: number }>(`SELECT count(*)::int AS n FROM audit_log WHERE tenant_id = $1 AND action = 'UpdateLicense'`, [tenant.id]);
      expect(updates.rows[0].n).toBeGreaterThanOrEqual(acknowledgedUpdates);
      expect(updates.rows[0].n).toBeLessThanOrEqual(acknowledgedUpdates + uncertainUpdates);
    } finally {
      await check.end();
    }
    // The activity log's hash chain is whole.
    db = await open();
    try {
      expect(await verifyAuditChain(db.prisma, tenant.id, secrets.auditChainKey)).toMatchObject({ valid: true, brokenAtSeq: null });
    } finally {
      await db.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
