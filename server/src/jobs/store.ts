import type { PGlite } from '@electric-sql/pglite';
import { MongoBackend } from '@agendajs/mongo-backend';
import { PostgresBackend } from '@agendajs/postgres-backend';
import { InMemoryNotificationChannel, type AgendaBackend, type NotificationChannel } from 'agenda';
import pg from 'pg';
import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import { ResilientListenChannel } from './listen-channel.js';

/**
 * Agenda's job store (DESIGN.md §2): MongoDB when MONGODB_URL is set; otherwise the app's own PostgreSQL,
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

export async function openJobStore(options: { mongodbUrl?: string; databaseUrl?: string; db: Database; logger: Logger }): Promise<JobStore> {
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
  // Its own small pool: one connection LISTENs, the others lock and update jobs.
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 3, options: `-c search_path=${AGENDA_SCHEMA}` });
  pool.on('error', (error) => options.logger.warn({ err: error.message }, 'job store pool error'));
  try {
    // NOTIFY stays on; LISTEN runs on our own channel, which survives the database going away.
    const backend = new PostgresBackend({ pool, tableName: TABLE, disableNotifications: true });
    // Servers starting together would race on CREATE … IF NOT EXISTS: serialise the schema setup.
    const lock = await pool.connect();
    try {
      await lock.query(`SELECT pg_advisory_lock(hashtext('keyforge:agenda-schema'))`);
      await lock.query(`CREATE SCHEMA IF NOT EXISTS ${AGENDA_SCHEMA}`);
      await backend.connect();
    } finally {
      await lock.query(`SELECT pg_advisory_unlock(hashtext('keyforge:agenda-schema'))`).catch(() => undefined);
      lock.release();
    }
    const channel = new ResilientListenChannel(options.databaseUrl, options.logger);
    return { backend: connected(backend), notificationChannel: channel, description: `PostgreSQL (schema ${AGENDA_SCHEMA})`, close: () => pool.end() };
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
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
  const pool = { query, connect: async () => client, end: async () => {}, on: () => pool };
  return pool as unknown as pg.Pool;
}
