import { afterAll, beforeAll, describe, expect } from 'vitest';
import { generateLicenseKey } from '../server/src/crypto/license-key.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { itWith } from './support/optional.js';
import { needPgBouncer, shippedPgBouncerSettings as shippedSettings, startPgBouncer, type PgBouncer } from './support/pgbouncer.js';
import { startServerProcess, stopAllProcesses, type ServerProcess } from './support/processes.js';
import { startPrivatePg, type PrivatePg } from './support/private-pg.js';
import { waitUntil } from './support/wait.js';

/**
 * PostgreSQL restarted (pg_ctl -m immediate, then start) behind PgBouncer in transaction mode, run with the settings
 * of the shipped server/deploy/pgbouncer.ini, under `pnpm start`'s server: a client that arrives while PostgreSQL is
 * down makes PgBouncer's login to it fail, and PgBouncer then refuses every client until `server_login_retry` has
 * passed (15 s by default). docs/operate/failures.md promises the first answer within 2 s of PostgreSQL's return.
 */
const need = needPgBouncer();
const SECRET = 'fault-pgbouncer-secret-0123456789abcdef0123456789';
let cluster: PrivatePg | undefined;
let bouncer: PgBouncer | undefined;
let server: ServerProcess | undefined;

beforeAll(async () => {
  if (need.missing) return;
  cluster = await startPrivatePg();
  await applyMigrations({ kind: 'pg', url: cluster.url });
  bouncer = await startPgBouncer(cluster.url, { settings: shippedSettings() });
  server = await startServerProcess({
    DATABASE_URL: bouncer.urlFor(cluster.url),
    DATABASE_POOL_MODE: 'transaction',
    DATABASE_DIRECT_URL: cluster.url,
    SERVER_SECRET: SECRET,
    LOG_LEVEL: 'info',
    DATA_DIR: `/tmp/kf-fault-pgbouncer-${process.pid}`,
  });
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await stopAllProcesses();
  await bouncer?.stop();
  cluster?.destroy();
});

// Well formed, so every request reaches the database (an unknown key: HTTP 200, isValid false).
const unknownKey = generateLicenseKey('KF');
const validate = async () => {
  const response = await fetch(`${server!.url}/api/v1/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ licenseKey: unknownKey }) });
  await response.arrayBuffer();
  return response.status;
};

describe('PostgreSQL restarted behind PgBouncer (transaction mode, the shipped pgbouncer.ini)', () => {
  itWith(need)('a client that arrived while it was down does not keep the others out once it is back', async () => {
    expect(shippedSettings()).toMatchObject({ pool_mode: 'transaction' });
    expect(await validate()).toBe(200);
    const logFrom = bouncer!.log().length;
    cluster!.stopImmediate();
    // A client arrives while PostgreSQL is down: PgBouncer's login to it fails. PostgreSQL comes back at once.
    const arriving = validate();
    await waitUntil(() => /connect failed|login failed/i.test(bouncer!.log().slice(logFrom)), { timeout: 30_000, interval: 20, what: "PgBouncer's failed login to the stopped PostgreSQL" });
    cluster!.start(); // returns once PostgreSQL accepts connections (pg_ctl -w)
    const back = Date.now();
    const statuses: number[] = [];
    await waitUntil(
      async () => {
        statuses.push(await validate());
        return statuses.at(-1)! < 500;
      },
      { timeout: 60_000, interval: 100, what: 'an answer below 500 after PostgreSQL is back' },
    );
    const firstAnswer = Date.now() - back;
    expect([200, 503]).toContain(await arriving);
    expect(statuses.at(-1)).toBe(200);
    expect(statuses.filter((status) => status !== 503 && status !== 200), 'only 503s before the first answer').toEqual([]);
    // docs/operate/failures.md: the first answer within 2 s of PostgreSQL's return (measured 0.3–0.7 s with
    // server_login_retry = 1). Asserted with room for a busy machine, and still far below what PgBouncer's default
    // server_login_retry (15 s) costs: about 14 s here.
    expect(firstAnswer, `first answer ${firstAnswer} ms after PostgreSQL was back; statuses ${statuses.join(',')}\n${bouncer!.log().slice(logFrom)}`).toBeLessThan(10_000);
    expect(server!.child.exitCode, server!.output()).toBeNull();
  }, 120_000);
});
