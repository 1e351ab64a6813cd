import { createHash } from 'node:crypto';
import { securePrivateDir } from '../data-dir.js';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import lockfile from 'proper-lockfile';
import { PrismaClient } from '../generated/prisma/client.js';
import { applyMigrations } from './migrate.js';
import { createPGlite } from './pglite.js';
import type { Logger } from '../logger.js';
import { isDatabaseUnavailable } from '../domain/database-unavailable.js';
import { OutageAwareClient } from './pg-client.js';

export type Db = InstanceType<typeof PrismaClient>;
export type { PrismaClient };

/**
 * Raw SQL for the few hot-path statements where Prisma's per-query overhead matters (see bench/). `text` is a
 * constant (values go in `values`): on PostgreSQL each text becomes a named prepared statement, parsed and planned
 * once per connection, except behind a transaction-mode pooler (docs/performance.md › "Connection pooling").
 */
export interface SqlRunner {
  query<T>(statement: string | PlannedRead, values: unknown[]): Promise<T[]>;
}

/**
 * One hot read written two ways with the same columns and rows. `prepared`: plain SQL, run as a named prepared
 * statement on a direct connection, parsed and planned once per connection. `viaFunction`: a call of a plpgsql
 * function, whose plan the server session keeps, for where statements run unnamed (a transaction-mode pooler, the
 * embedded database): there plain SQL would be planned on every call, while on a direct connection the function
 * call would cost PostgreSQL ~25 µs more per call than the prepared plain statement (docs/performance.md).
 */
export interface PlannedRead {
  prepared: string;
  viaFunction: string;
}

/** The text a runner sends for `statement`: `prepared` when it names its statements. */
const textOf = (statement: string | PlannedRead, named: boolean) => (typeof statement === 'string' ? statement : named ? statement.prepared : statement.viaFunction);

export interface Database {
  kind: 'postgres' | 'pglite';
  prisma: Db;
  /** The embedded instance (kind 'pglite'), for the job store to share its single session. */
  pglite?: PGlite;
  sql: SqlRunner;
  /** The PostgreSQL pool's connections (total, idle) and waiting requests, for the metrics; absent on PGlite. */
  poolStats?(): { total: number; idle: number; waiting: number };
  ping(): Promise<void>;
  close(): Promise<void>;
}

// The classifier lives in domain/ (toAppError uses it too); re-exported for the boot path and the pool.
export { isDatabaseUnavailable };

/**
 * At start, PostgreSQL may still be coming up (containers started together): wait for it with back-off,
 * saying so once, rather than exiting. Gives up with a clear message after `timeoutMs`.
 */
export async function waitForDatabase(url: string, logger: Logger, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    const client = new OutageAwareClient({ connectionString: url, connectionTimeoutMillis: 5_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('select 1');
      if (attempt > 0) logger.info('database reachable; starting');
      return;
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      if (Date.now() > deadline) throw new Error(`PostgreSQL at DATABASE_URL did not become reachable within ${Math.round(timeoutMs / 1000)} s: ${(error as Error).message}`);
      if (attempt === 0) logger.warn({ err: (error as Error).message }, 'waiting for the database (DATABASE_URL) to accept connections');
      await new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** attempt, 5_000)));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

export class DatabaseLockedError extends Error {
  constructor(dir: string) {
    super(`The embedded database in ${dir} is in use by another process (is the server already running?). Stop it, or set DATABASE_URL to use PostgreSQL, which serves many processes.`);
    this.name = 'DatabaseLockedError';
  }
}

export interface OpenDatabaseOptions {
  databaseUrl?: string;
  dataDir: string;
  poolSize?: number;
  /** DATABASE_POOL_MODE: 'transaction' behind a transaction-mode pooler (no named prepared statements). */
  poolMode?: 'session' | 'transaction';
  logger?: Logger;
}

/** PostgreSQL when a URL is given, else the embedded PGlite database under `<dataDir>/pglite`. */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options) : openEmbedded(options);
}

// SQLSTATEs of a named statement that is not on the server connection it reached (invalid_sql_statement_name), or
// is there already (duplicate_prepared_statement): what a transaction-mode pooler does to named statements.
const PREPARED_STATEMENT_MISMATCH = new Set(['26000', '42P05']);
// The texts that get a name; the hot path has a handful, so the bound only guards against a caller passing built SQL.
const MAX_PREPARED_TEXTS = 64;

/**
 * SqlRunner.query on a pool: named prepared statements (what the bench's floor uses: validate parses and plans
 * nothing per call) unless `prepare` is off. Names are a hash of the text, so a connection that already holds one
 * holds the same statement. If a pooler nobody declared (DATABASE_POOL_MODE left at `session`) moves statements
 * between server connections, the first mismatch turns naming off for the process and the statement runs unnamed:
 * Parse or Bind failed, so nothing was executed and the retry is safe.
 */
function poolQuery(pool: pg.Pool, prepare: boolean, logger: Logger | undefined): SqlRunner['query'] {
  const names = new Map<string, string>();
  const nameOf = (text: string) => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_PREPARED_TEXTS) {
      name = `kf_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
      names.set(text, name);
    }
    return name;
  };
  return async <T>(statement: string | PlannedRead, values: unknown[]) => {
    const text = textOf(statement, prepare);
    const name = prepare ? nameOf(text) : undefined;
    try {
      return (await pool.query({ name, text, values })).rows as T[];
    } catch (error) {
      if (name === undefined || !PREPARED_STATEMENT_MISMATCH.has((error as { code?: string }).code ?? '')) throw error;
      if (prepare) logger?.warn('named prepared statements do not survive this DATABASE_URL (a transaction-mode pooler?): running unnamed from now on; set DATABASE_POOL_MODE=transaction');
      prepare = false;
      return (await pool.query(textOf(statement, false), values)).rows as T[];
    }
  };
}

function openPostgres(url: string, { poolSize = 10, poolMode = 'session', logger }: OpenDatabaseOptions): Database {
  // No startup options and no session state: every process must work through a transaction-mode pooler. Settings
  // the server relies on (jit = off) are database defaults set by the migrations (migrate.ts, databaseDefaults).
  const pool = new pg.Pool({ connectionString: url, max: poolSize, Client: OutageAwareClient });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', (error) => logger?.warn({ err: error.message }, 'postgres pool error'));
  // A burst of admin writes can queue for the pool longer than Prisma's 2 s default wait for a transaction's
  // connection; waiting is right there (the pool's own queue is the limit), a P2028 error answered as 503 is not.
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool), transactionOptions: { maxWait: 10_000, timeout: 15_000 } });
  return {
    kind: 'postgres',
    prisma,
    sql: { query: poolQuery(pool, poolMode === 'session', logger) },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async ping() {
      await pool.query('select 1');
    },
    async close() {
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

async function openEmbedded({ dataDir, logger }: OpenDatabaseOptions): Promise<Database> {
  const dir = path.resolve(dataDir, 'pglite');
  mkdirSync(dir, { recursive: true });
  const release = await lockEmbedded(dataDir, logger);
  let pglite: PGlite | undefined;
  try {
    pglite = createPGlite(dir);
    await pglite.waitReady;
    const { applied } = await applyMigrations({ kind: 'pglite', pglite });
    if (applied.length) logger?.info({ applied }, 'applied database migrations');
    // One process, one session: the license cache's triggers NOTIFY it in process rather than writing the change log
    // that PostgreSQL servers poll (migration license_cache_change_log). For this session only, for its whole life.
    await pglite.exec(`SET keyforge.license_cache_notify = 'on'`);
    // PGlite sets its files' modes itself (0666 or 0644) whatever the umask: made private now, every minute for the
    // files it adds while it runs (write-ahead log segments, new relations), and when it closes. DATA_DIR itself is
    // 0700, so no other user reaches them in between.
    securePrivateDir(dataDir);
  } catch (error) {
    await pglite?.close().catch(() => undefined);
    await release();
    throw error;
  }
  const db = pglite;
  const tighten = setInterval(() => {
    try {
      securePrivateDir(dataDir);
    } catch (error) {
      logger?.warn({ err: (error as Error).message }, 'could not make new embedded database files private');
    }
  }, 60_000);
  tighten.unref();
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(db) });
  return {
    kind: 'pglite',
    prisma,
    pglite: db,
    sql: {
      async query<T>(statement: string | PlannedRead, values: unknown[]) {
        return (await db.query<T>(textOf(statement, false), values)).rows;
      },
    },
    async ping() {
      await db.query('select 1');
    },
    async close() {
      clearInterval(tighten);
      await prisma.$disconnect();
      await db.close();
      securePrivateDir(dataDir);
      await release();
    },
  };
}

/** PGlite is single-session: a second process opening the same files would corrupt them. */
export async function lockEmbedded(dataDir: string, logger?: Logger): Promise<() => Promise<void>> {
  const dir = path.resolve(dataDir, 'pglite');
  mkdirSync(dir, { recursive: true });
  try {
    return await lockfile.lock(dir, {
      lockfilePath: path.resolve(dataDir, 'pglite.lock'),
      realpath: false,
      stale: 15_000,
      update: 5_000,
      onCompromised: (error) => logger?.error({ err: error.message }, 'embedded database lock compromised'),
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOCKED') throw new DatabaseLockedError(dir);
    throw error;
  }
}
