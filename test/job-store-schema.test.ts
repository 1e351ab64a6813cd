import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../server/src/db/database.js';
import { AGENDA_SCHEMA, openJobStore, SCHEMA_LOCK_NAME, type JobStore } from '../server/src/jobs/store.js';
import { createLogger } from '../server/src/logger.js';
import { itWith } from './support/optional.js';
import { adminUrl, createDatabase, dropDatabase, uniqueName } from './support/pg.js';
import { needPgBouncer, startPgBouncer, type PgBouncer } from './support/pgbouncer.js';
import { waitUntil } from './support/wait.js';

/**
 * Processes starting together create the job store's schema (docs/operate/deployment.md "Connection poolers and the connection budget"):
 * the loser of the race waits on the winner's advisory lock and must then find the schema there. CI met the loser
 * failing on pg_namespace's unique index behind PgBouncer: a schema lookup that missed in an earlier transaction on
 * the same server connection stays cached in that backend through the lock wait. Each test stages the race: the test
 * holds the lock, the store's setup waits on it, the test creates the schema and commits.
 */
const name = uniqueName('kf_jobstore');
let url: string;
let bouncer: PgBouncer | undefined;
const need = needPgBouncer();
const logger = createLogger('silent');
const postgresDb = { kind: 'postgres' } as Database;

beforeAll(async () => {
  url = await createDatabase(name);
  if (!need.missing) bouncer = await startPgBouncer(adminUrl(), { poolSize: 1 });
}, 60_000);
afterAll(async () => {
  await bouncer?.stop();
  await dropDatabase(name);
});

/** Holds the schema lock, lets `open` start and block on it, creates the schema and commits; returns the opened store. */
async function winTheRaceAgainst(open: () => Promise<JobStore>): Promise<JobStore> {
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query(`DROP SCHEMA IF EXISTS ${AGENDA_SCHEMA} CASCADE`);
    await holder.query(`BEGIN; SELECT pg_advisory_xact_lock(hashtext('${SCHEMA_LOCK_NAME}'))`);
    const opening = open();
    opening.catch(() => undefined);
    // The store's setup is waiting on the lock this client holds.
    await waitUntil(async () => {
      const { rows } = await holder.query(`SELECT count(*)::int AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`);
      return rows[0].waiting === 1;
    });
    await holder.query(`CREATE SCHEMA ${AGENDA_SCHEMA}; COMMIT`);
    return await opening;
  } finally {
    await holder.end();
  }
}

/** Closes the store and names its jobs table as PostgreSQL finds it. */
async function jobsTableAfterClose(store: JobStore): Promise<string> {
  await store.close();
  const check = new pg.Client({ connectionString: url });
  await check.connect();
  const { rows } = await check.query(`SELECT to_regclass('${AGENDA_SCHEMA}.agenda_jobs')::text AS jobs`);
  await check.end();
  return rows[0].jobs;
}

describe('the job store schema, created by processes racing each other', () => {
  it('the process that waited on the lock finds the schema the winner committed', async () => {
    const store = await winTheRaceAgainst(() => openJobStore({ databaseUrl: url, db: postgresDb, logger }));
    expect(await jobsTableAfterClose(store)).toBe(`${AGENDA_SCHEMA}.agenda_jobs`);
  });

  itWith(need)('through a transaction pooler, on a connection that already missed the schema in an earlier transaction: the setup runs again and succeeds', async () => {
    const pooled = bouncer!.urlFor(url);
    // PgBouncer with one server connection: this transaction and the store's setup share a backend. Resolving a
    // function under search_path=agenda before the schema exists caches the miss in that backend.
    const client = new pg.Client({ connectionString: pooled });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${AGENDA_SCHEMA} CASCADE`);
    await client.query(`BEGIN; SET LOCAL search_path TO ${AGENDA_SCHEMA}; SELECT now(); COMMIT`);
    await client.end();
    const store = await winTheRaceAgainst(() => openJobStore({ databaseUrl: pooled, db: postgresDb, logger }));
    expect(await jobsTableAfterClose(store)).toBe(`${AGENDA_SCHEMA}.agenda_jobs`);
  });
});
