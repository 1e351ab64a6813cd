import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../server/src/db/database.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { isDatabaseUnavailable } from '../server/src/domain/database-unavailable.js';
import { toAppError } from '../server/src/domain/errors.js';
import { itWith } from './support/optional.js';
import { needPgBouncer, startPgBouncer } from './support/pgbouncer.js';
import { startPrivatePg, type PrivatePg } from './support/private-pg.js';
import { uniqueName } from './support/pg.js';
import { waitUntil } from './support/wait.js';

/**
 * A database error is an outage (503 + Retry-After) or not (500) by what it is — its SQLSTATE,
 * socket error, Prisma code or the driver adapter's kind — never by its message. Each case is a real fault on a
 * private cluster, through the server's own pool (db/database.ts) and Prisma client.
 */
let cluster: PrivatePg;
let db: Database;
const silent = { warn: () => {}, error: () => {} };
const mapped = (error: unknown) => toAppError(error, silent, 'req-1');

async function failure(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

/** The SQLSTATE an error carries, wherever the driver or Prisma put it. */
function sqlState(error: unknown, depth = 0): string | undefined {
  if (!error || typeof error !== 'object' || depth > 5) return undefined;
  const e = error as { code?: unknown; originalCode?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown } };
  for (const code of [e.originalCode, e.code]) if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('P')) return code;
  return sqlState(e.meta?.driverAdapterError, depth + 1) ?? sqlState(e.cause, depth + 1);
}

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: cluster.url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** Terminates the backend running `marker` (a comment in its query) once it is running. */
async function terminateWhenRunning(marker: string): Promise<void> {
  await waitUntil(
    () => admin(async (client) => (await client.query(`SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()`, [`%${marker}%`])).rows.some((row) => row.done)),
    { what: `the query ${marker} to run` },
  );
}

beforeAll(async () => {
  cluster = await startPrivatePg();
  await applyMigrations({ kind: 'pg', url: cluster.url });
  db = await openDatabase({ databaseUrl: cluster.url, dataDir: '/tmp', poolSize: 4 });
}, 120_000);
afterAll(async () => {
  await db?.close().catch(() => {});
  cluster?.destroy();
});

describe('not an outage: a 500', () => {
  it('a syntax error, a division by zero, a unique violation, a missing privilege', async () => {
    const role = uniqueName('kf_reader');
    await admin((client) => client.query(`CREATE ROLE ${role} LOGIN`));
    const url = new URL(cluster.url);
    url.username = role;
    const unprivileged = await openDatabase({ databaseUrl: url.toString(), dataDir: '/tmp', poolSize: 1 });
    const digest = uniqueName('nonce');
    await db.prisma.nonce.create({ data: { digest, expiresAt: new Date() } });
    const errors = [
      await failure(() => db.sql.query('SELEC 1', [])),
      await failure(() => db.prisma.$queryRawUnsafe('SELECT 1 / 0')),
      await failure(() => db.prisma.nonce.create({ data: { digest, expiresAt: new Date() } })),
      await failure(() => db.prisma.$transaction(async (tx) => tx.nonce.create({ data: { digest, expiresAt: new Date() } }))),
      await failure(() => unprivileged.sql.query('SELECT count(*) FROM licenses', [])),
      await failure(() => unprivileged.prisma.license.count()),
    ];
    await unprivileged.close();
    for (const error of errors) {
      expect(isDatabaseUnavailable(error), String(error)).toBe(false);
      expect(mapped(error).status).toBe(500);
    }
  });
});

describe('input the database refuses: a 400, never a 500', () => {
  it('a malformed UUID, a NUL byte, year 0 and an integer out of range, through Prisma, raw Prisma SQL and the pool', async () => {
    const errors = [
      await failure(() => db.prisma.activation.findFirst({ where: { licenseId: 'not-a-uuid' } })), // P2007
      await failure(() => db.prisma.$queryRaw`SELECT ${'not-a-uuid'}::uuid`), // P2010
      await failure(() => db.prisma.license.findFirst({ where: { createdAt: { lt: new Date('0000-01-01T00:00:00Z') } } })), // P2039
      await failure(() => db.prisma.auditLogEntry.findFirst({ where: { seq: { lt: 2 ** 31 } } })), // P2020
      await failure(() => db.prisma.license.findFirst({ where: { customerEmail: 'a\u0000b' } })),
      await failure(() => db.sql.query('SELECT $1::timestamptz', ['0000-01-01T00:00:00Z'])),
    ];
    for (const error of errors) {
      expect(isDatabaseUnavailable(error), String(error)).toBe(false);
      expect(mapped(error), String(error)).toMatchObject({ status: 400, code: 'InvalidRequest' });
    }
  });
});

describe('an outage: a 503 with Retry-After', () => {
  const expectOutage = (error: unknown) => {
    expect(isDatabaseUnavailable(error), String(error)).toBe(true);
    const appError = mapped(error);
    expect(appError.status).toBe(503);
    expect(appError.details.retryAfterSeconds).toBeGreaterThan(0);
  };

  it('the backend terminated under a raw query, a Prisma query and an interactive transaction (57P01, a closed connection)', async () => {
    const raw = failure(() => db.sql.query('SELECT pg_sleep(30) /* raw-victim */', []));
    await terminateWhenRunning('raw-victim');
    expectOutage(await raw);

    const prisma = failure(() => db.prisma.$queryRawUnsafe('SELECT pg_sleep(30)::text /* prisma-victim */'));
    await terminateWhenRunning('prisma-victim');
    expectOutage(await prisma);

    // Killed between two statements of a transaction: pg then reports the broken client without a code.
    const transaction = failure(() =>
      db.prisma.$transaction(async (tx) => {
        await tx.$queryRawUnsafe('SELECT 1 /* tx-victim */');
        await terminateWhenRunning('tx-victim');
        await new Promise((resolve) => setTimeout(resolve, 200));
        await tx.nonce.count();
      }),
    );
    expectOutage(await transaction);
    // The pool recovers: the next statements get fresh connections.
    expect(await db.sql.query('SELECT 1 AS one', [])).toEqual([{ one: 1 }]);
  });

  // A failover's switch: the pooler's connection still reaches the demoted primary, now a standby (or a read-only
  // server). Real 25006 errors from a role whose sessions are read-only, as a standby's are.
  it('a write on a read-only server (25006): raw, through Prisma and in an interactive transaction', async () => {
    const role = uniqueName('kf_standby');
    await admin(async (client) => {
      await client.query(`CREATE ROLE ${role} LOGIN`);
      await client.query(`GRANT INSERT, SELECT ON nonces TO ${role}`);
      await client.query(`ALTER ROLE ${role} SET default_transaction_read_only = on`);
    });
    const url = new URL(cluster.url);
    url.username = role;
    const readOnly = await openDatabase({ databaseUrl: url.toString(), dataDir: '/tmp', poolSize: 1 });
    const nonce = () => ({ digest: uniqueName('nonce'), expiresAt: new Date() });
    try {
      const errors = [
        await failure(() => readOnly.sql.query('INSERT INTO nonces (digest, expires_at) VALUES ($1, now())', [uniqueName('nonce')])),
        await failure(() => readOnly.prisma.nonce.create({ data: nonce() })),
        await failure(() => readOnly.prisma.$transaction(async (tx) => tx.nonce.create({ data: nonce() }))),
      ];
      expect(errors.map(sqlState)).toEqual(['25006', '25006', '25006']);
      for (const error of errors) expectOutage(error);
      // Reads still work there: only the write is refused.
      expect(await readOnly.prisma.nonce.count()).toBeGreaterThanOrEqual(0);
    } finally {
      await readOnly.close();
    }
  });

  it('too many connections for the role (53300)', async () => {
    const role = uniqueName('kf_limited');
    await admin((client) => client.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`));
    const url = new URL(cluster.url);
    url.username = role;
    const limited = await openDatabase({ databaseUrl: url.toString(), dataDir: '/tmp', poolSize: 1 });
    try {
      expectOutage(await failure(() => limited.sql.query('SELECT 1', [])));
      expectOutage(await failure(() => limited.prisma.license.count()));
    } finally {
      await limited.close();
    }
  });

  it('the server crashes under an open transaction, then refuses connections while down', async () => {
    let crashed!: () => void;
    const inside = new Promise<void>((resolve) => (crashed = resolve));
    const transaction = failure(() =>
      db.prisma.$transaction(async (tx) => {
        await tx.nonce.count();
        crashed();
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        await tx.nonce.count();
      }),
    );
    await inside;
    cluster.stopImmediate();
    try {
      expectOutage(await transaction);
      expectOutage(await failure(() => db.sql.query('SELECT 1', [])));
      expectOutage(await failure(() => db.prisma.license.count()));
      expectOutage(await failure(() => db.prisma.$transaction(async (tx) => tx.license.count())));
    } finally {
      cluster.start();
    }
    await waitUntil(async () => (await db.sql.query<{ one: number }>('SELECT 1 AS one', []).catch(() => []))[0]?.one === 1, { what: 'the pool to reconnect' });
  }, 60_000);

  // PgBouncer answers for a server it cannot reach with its own errors (SQLSTATE 08P01): still an outage. By default
  // it keeps a query waiting for a server connection up to 120 s (query_wait_timeout): a deployment sets a few seconds.
  itWith(needPgBouncer())('through PgBouncer in transaction mode, PostgreSQL stopped behind it', async () => {
    const bouncer = await startPgBouncer(cluster.url, { settings: { query_wait_timeout: 3, server_connect_timeout: 2 } });
    const pooled = await openDatabase({ databaseUrl: bouncer.urlFor(cluster.url), dataDir: '/tmp', poolSize: 2 });
    try {
      expect(await pooled.sql.query('SELECT 1 AS one', [])).toEqual([{ one: 1 }]);
      cluster.stopImmediate();
      try {
        expectOutage(await failure(() => pooled.sql.query('SELECT 1', [])));
        expectOutage(await failure(() => pooled.prisma.license.count()));
        expectOutage(await failure(() => pooled.prisma.$transaction(async (tx) => tx.license.count())));
      } finally {
        cluster.start();
      }
      await waitUntil(async () => (await pooled.sql.query<{ one: number }>('SELECT 1 AS one', []).catch(() => []))[0]?.one === 1, { timeout: 60_000, what: 'PgBouncer to reach PostgreSQL again' });
    } finally {
      await pooled.close().catch(() => {});
      await bouncer.stop();
    }
  }, 120_000);
});

/**
 * Each SQLSTATE a failover or a restart of PostgreSQL produces, as pg reports it and as Prisma's driver adapter wraps it
 * (`meta.driverAdapterError.cause` with `originalCode`): an outage, answered 503 with Retry-After, never a 500.
 */
describe('the SQLSTATEs of a failover or restart, one by one', () => {
  const cases: [code: string, message: string][] = [
    ['25006', 'cannot execute INSERT in a read-only transaction'], // the demoted primary, or a standby reached during the switch
    ['57P01', 'terminating connection due to administrator command'], // a fast shutdown, pg_terminate_backend, Patroni demoting
    ['57P02', 'terminating connection because of crash of another server process'],
    ['57P03', 'the database system is shutting down'], // also "… is starting up", "… is not yet accepting connections"
    ['08006', 'server conn crashed?'], // PgBouncer: the server connection broke
    ['08P01', 'query_wait_timeout'], // PgBouncer: no server connection within query_wait_timeout (no primary yet)
  ];
  for (const [code, message] of cases) {
    it(`${code} (${message})`, () => {
      const driverError = Object.assign(new pg.DatabaseError(message, message.length, 'error'), { code, severity: 'FATAL' });
      const wrapped = Object.assign(new Error('Raw query failed'), {
        name: 'PrismaClientKnownRequestError',
        code: 'P2010',
        meta: { driverAdapterError: Object.assign(new Error('postgres'), { cause: { originalCode: code, originalMessage: message, kind: 'postgres', code, severity: 'FATAL', message } }) },
      });
      for (const error of [driverError, wrapped]) {
        expect(isDatabaseUnavailable(error), `${code} ${error === wrapped ? 'through Prisma' : 'from pg'}`).toBe(true);
        const appError = mapped(error);
        expect(appError.status).toBe(503);
        expect(appError.code).toBe('ServiceUnavailable');
        expect(appError.details.retryAfterSeconds).toBeGreaterThan(0);
      }
    });
  }
  it('and a query error of the same class shape is still a 500 (25P02: a statement in a failed transaction is a bug)', () => {
    const error = Object.assign(new pg.DatabaseError('current transaction is aborted', 30, 'error'), { code: '25P02', severity: 'ERROR' });
    expect(isDatabaseUnavailable(error)).toBe(false);
    expect(mapped(error).status).toBe(500);
  });
});
