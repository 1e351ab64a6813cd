import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateLicenseKey } from '../server/src/crypto/license-key.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { startServerProcess, type ServerProcess } from './support/processes.js';
import { startPrivatePg, type PrivatePg } from './support/private-pg.js';

/**
 * Issue 10: the database stops (pg_ctl -m immediate) under load while `pnpm start` (JOBS_WORKER=true)
 * serves; every request answers 503 + Retry-After, the process stays up and serves again once it returns.
 * The job store's LISTEN backend terminated alone changes nothing for clients.
 */
let cluster: PrivatePg;
let server: ServerProcess;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  cluster = await startPrivatePg();
  await applyMigrations({ kind: 'pg', url: cluster.url });
  server = await startServerProcess({ DATABASE_URL: cluster.url, SERVER_SECRET: 'fault-test-secret-0123456789abcdef0123456789', JOBS_WORKER: 'true', LOG_LEVEL: 'info', DATA_DIR: `/tmp/kf-fault-${process.pid}` });
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
    const env = { ...process.env, DATABASE_URL: cluster.url, SERVER_SECRET: 'fault-test-secret-0123456789abcdef0123456789', LOG_LEVEL: 'info', DATA_DIR: `/tmp/kf-fault-${process.pid}` };
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
});
