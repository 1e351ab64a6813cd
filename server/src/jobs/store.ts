import type { PGlite } from '@electric-sql/pglite';
import { MongoBackend } from '@agendajs/mongo-backend';
import { PostgresBackend } from '@agendajs/postgres-backend';
import { InMemoryNotificationChannel, type AgendaBackend, type NotificationChannel } from 'agenda';
import pg from 'pg';
import type { Database } from '../db/database.js';
import { OutageAwareClient } from '../db/pg-client.js';
import type { Logger } from '../logger.js';
import { ResilientListenChannel } from './listen-channel.js';

/**
 * Agenda's job store (docs/operate/jobs-and-email.md): MongoDB when MONGODB_URL is set; otherwise the app's own PostgreSQL,
 * in a schema of its own (`agenda`), which Prisma neither manages nor diffs, so `pnpm db:migration`
 * sees no drift. On the embedded PGlite database the same PostgreSQL backend runs over a small pg-compatible
 * pool that shares the PGlite session (one transaction per statement, search_path set locally), with
 * LISTEN/NOTIFY off and Agenda's in-memory notification channel (a single process owns the data directory).
 */
export const AGENDA_SCHEMA = 'agenda';
const TABLE = 'agenda_jobs';

export interface JobStore {
  /** Connected already: Agenda's own connect/disconnect calls do nothing, close() ends the store. */
  backend: AgendaBackend;
  notificationChannel?: NotificationChannel;
  description: string;
  close(): Promise<void>;
}

export interface JobStoreOptions {
  mongodbUrl?: string;
  databaseUrl?: string;
  /** Where LISTEN runs (a session of its own); undefined: no LISTEN, workers poll (docs/operate/deployment.md "Connection poolers and the connection budget"). */
  listenUrl?: string;
  db: Database;
  logger: Logger;
}

export async function openJobStore(options: JobStoreOptions): Promise<JobStore> {
  if (options.mongodbUrl) {
    const backend = new MongoBackend({ address: options.mongodbUrl, collection: 'agendaJobs' });
    await backend.connect();
    return { backend: connected(backend), description: 'MongoDB (collection agendaJobs)', close: () => backend.disconnect() };
  }
  if (options.db.kind === 'pglite') {
    const pool = pglitePool(options.db.pglite!);
    await options.db.pglite!.exec(`CREATE SCHEMA IF NOT EXISTS ${AGENDA_SCHEMA}`);
    const backend = new PostgresBackend({ pool, tableName: TABLE, disableNotifications: true });
    await backend.connect();
    return { backend: connected(backend), notificationChannel: new InMemoryNotificationChannel(), description: `embedded database (schema ${AGENDA_SCHEMA})`, close: async () => {} };
  }
  if (!options.databaseUrl) throw new Error('the PostgreSQL job store needs DATABASE_URL');
  // Its own small pool. No startup options and no session state: each statement runs in a transaction of its
  // own that sets the search path locally, so a transaction-mode pooler (PgBouncer) can serve it.
  // OutageAwareClient: a connection lost under a job-store query is an outage (kept running), not an unknown crash.
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: JOB_STORE_CONNECTIONS, Client: OutageAwareClient });
  pool.on('error', (error) => options.logger.warn({ err: error.message }, 'job store pool error'));
  try {
    await createSchema(pool);
    const backend = new PostgresBackend({ pool: transactionPerStatement(pool), tableName: TABLE, disableNotifications: true, ensureSchema: false });
    await backend.connect();
    // NOTIFY stays on; LISTEN runs on our own channel, which survives the database going away.
    const channel = options.listenUrl ? new ResilientListenChannel(options.listenUrl, options.logger) : undefined;
    const notifications = channel ? 'LISTEN/NOTIFY' : `polling; no LISTEN under a transaction pooler without DATABASE_DIRECT_URL`;
    return { backend: connected(backend), notificationChannel: channel, description: `PostgreSQL (schema ${AGENDA_SCHEMA}, ${notifications})`, close: () => pool.end() };
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
}

/** The job store's own connections through DATABASE_URL (docs/operate/deployment.md "Connection poolers and the connection budget" counts them). */
export const JOB_STORE_CONNECTIONS = 3;
/** A schema setup waits this long for another process's (which takes a second) before it fails loudly. */
const SCHEMA_LOCK_TIMEOUT = '30s';
/** The advisory lock's name; exported for the test that holds it to stage the race. */
export const SCHEMA_LOCK_NAME = 'keyforge:agenda-schema';

/**
 * Creates the schema, table, indexes and trigger in one transaction. Servers starting together would race on
 * CREATE … IF NOT EXISTS: a transaction-scoped advisory lock serialises them, and is released with the
 * transaction, whichever pooled connection ran it; lock_timeout turns a stuck holder into a start-up error.
 *
 * The lock alone is not enough: a backend that looked the schema up and missed (earlier in the transaction, or in
 * an earlier one on the same pooled server connection) keeps the miss in its catalog cache until it next reads
 * invalidations, which waiting on an advisory lock does not do; its CREATE SCHEMA IF NOT EXISTS then fails on
 * pg_namespace's unique index (CI met this behind PgBouncer). So the lock is taken before anything names the schema,
 * and a duplicate error, which can only mean another process created it first, runs the setup again in a new
 * transaction, which reads the invalidations and sees it (test/job-store-schema.test.ts stages both).
 */
async function createSchema(pool: pg.Pool): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await createSchemaOnce(pool);
    } catch (error) {
      if (attempt >= SCHEMA_SETUP_ATTEMPTS || !DUPLICATE_OBJECT_CODES.has((error as { code?: string }).code ?? '')) throw error;
    }
  }
}

const SCHEMA_SETUP_ATTEMPTS = 3;
/** unique_violation (a catalog row), duplicate_schema, duplicate_table, duplicate_object (index, trigger, function). */
const DUPLICATE_OBJECT_CODES = new Set(['23505', '42P06', '42P07', '42710']);

async function createSchemaOnce(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query(`BEGIN; SET LOCAL lock_timeout = '${SCHEMA_LOCK_TIMEOUT}'`);
    await client.query(`SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('${SCHEMA_LOCK_NAME}'))`);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${AGENDA_SCHEMA}; SET LOCAL search_path TO ${AGENDA_SCHEMA}`);
    // The backend's own DDL, run on this transaction's connection.
    const inTransaction = { query: async (text: string, values?: unknown[]) => asResult(await client.query(text, values)), release: () => {} };
    await new PostgresBackend({ pool: poolOf(inTransaction.query, async () => inTransaction), tableName: TABLE, disableNotifications: true }).connect();
    await client.query('COMMIT');
    client.release();
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release(error as Error);
    if ((error as { code?: string }).code === '55P03') throw new Error(`job store schema setup waited ${SCHEMA_LOCK_TIMEOUT} for another process's lock (${SCHEMA_LOCK_NAME}); is one stuck?`);
    throw error;
  }
}

/** A pool for the backend whose every statement runs in its own transaction with the job store's search path. */
function transactionPerStatement(pool: pg.Pool): pg.Pool {
  const query = async (text: string, values?: unknown[]): Promise<QueryResult> => {
    const client = await pool.connect();
    try {
      await client.query(`BEGIN; SET LOCAL search_path TO ${AGENDA_SCHEMA}`);
      const result = await client.query(text, values);
      await client.query('COMMIT');
      client.release();
      return asResult(result);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release(error as Error);
      throw error;
    }
  };
  return poolOf(query, async () => ({ query, release: () => {} }), () => pool.end());
}

/**
 * Agenda connects its backend in its constructor without handling a failure; the store is connected
 * beforehand instead (so errors surface at boot) and handed over as already connected.
 */
function connected(backend: AgendaBackend): AgendaBackend {
  return {
    name: backend.name,
    repository: backend.repository,
    notificationChannel: backend.notificationChannel,
    logger: backend.logger,
    ownsConnection: false,
    connect: async () => {},
    disconnect: async () => {},
  };
}

type QueryResult = { rows: unknown[]; rowCount: number };
/** pg answers a multi-statement text (the backend's trigger DDL) with one result per statement: the last counts. */
function asResult(result: pg.QueryResult | pg.QueryResult[]): QueryResult {
  const last = Array.isArray(result) ? result[result.length - 1] : result;
  return { rows: last?.rows ?? [], rowCount: last?.rowCount ?? 0 };
}

/** The part of pg.Pool the PostgreSQL backend uses, over PGlite. */
function pglitePool(pglite: PGlite): pg.Pool {
  const query = (text: string, values?: unknown[]): Promise<QueryResult> =>
    // PGlite runs one transaction at a time, so the local search_path cannot leak into the app's queries.
    pglite.transaction(async (tx) => {
      await tx.exec(`SET LOCAL search_path TO ${AGENDA_SCHEMA}`);
      if (values?.length) {
        const result = await tx.query(text, values as unknown[]);
        return { rows: result.rows, rowCount: Math.max(result.affectedRows ?? 0, result.rows.length) };
      }
      // Without parameters the statement may be several (the backend's trigger DDL): the simple protocol.
      const results = await tx.exec(text);
      const last = results[results.length - 1];
      return { rows: last?.rows ?? [], rowCount: Math.max(last?.affectedRows ?? 0, last?.rows.length ?? 0) };
    });
  const client = { query, release: () => {} };
  return poolOf(query, async () => client);
}

/** The part of pg.Pool the PostgreSQL backend uses: query, connect (a client with query/release), end, on. */
function poolOf(query: (text: string, values?: unknown[]) => Promise<QueryResult>, connect: () => Promise<{ query: typeof query; release(): void }>, end: () => Promise<void> = async () => {}): pg.Pool {
  const pool = { query, connect, end, on: () => pool };
  return pool as unknown as pg.Pool;
}
