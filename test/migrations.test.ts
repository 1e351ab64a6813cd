// The offline migration runner (server/src/db/migrate.ts) on real PostgreSQL and on in-memory PGlite: every
// migration applied once, Prisma's bookkeeping intact, safe when two processes start together.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { applyMigrations, migrationsDir, migrationStatus, schemaDrift, schemaPath, type MigrationTarget } from '../server/src/db/migrate.js';
// The app's own PGlite factory: the server's PGlite instance (the adapter's) with the extensions the migrations need.
import { createPGlite } from '../server/src/db/pglite.js';
import { createDatabase, dropDatabase, uniqueName } from './support/pg.js';

type Query = (sql: string) => Promise<Record<string, unknown>[]>;

/** prisma/migrations as Prisma records it: name and sha256 of migration.sql. */
async function localMigrations() {
  const dirs = (await readdir(migrationsDir, { withFileTypes: true })).filter((entry) => entry.isDirectory());
  const names = dirs.map((entry) => entry.name).sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(path.join(migrationsDir, name, 'migration.sql'));
      return { name, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/** Applies twice, then checks status, tables and the `_prisma_migrations` rows. */
async function expectMigratesOnce(target: MigrationTarget, query: Query) {
  const local = await localMigrations();
  const names = local.map((migration) => migration.name);
  expect(names.length).toBeGreaterThan(0);

  expect(await migrationStatus(target)).toEqual({ applied: [], pending: names, problems: [] });
  expect(await applyMigrations(target)).toEqual({ applied: names, unsetDefaults: [] });
  expect(await applyMigrations(target)).toEqual({ applied: [], unsetDefaults: [] });
  expect(await migrationStatus(target)).toEqual({ applied: names, pending: [], problems: [] });

  const tables = await query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`);
  expect(tables.map((row) => row.table_name)).toEqual(expect.arrayContaining(['licenses', 'tenants', '_prisma_migrations']));
  await expectRecordedOnce(query);
}

async function expectRecordedOnce(query: Query) {
  const rows = await query(
    `SELECT migration_name, checksum, finished_at IS NOT NULL AS finished, rolled_back_at IS NULL AS current
     FROM _prisma_migrations ORDER BY migration_name`,
  );
  const expected = (await localMigrations()).map(({ name, checksum }) => ({
    migration_name: name,
    checksum,
    finished: true,
    current: true,
  }));
  expect(rows).toEqual(expected);
}

describe('migrations on PostgreSQL', () => {
  const databases: string[] = [];
  const freshDatabase = async () => {
    const name = uniqueName('kf_mig');
    databases.push(name);
    return createDatabase(name);
  };
  const queryOn = (url: string): Query => async (sql) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(sql)).rows;
    } finally {
      await client.end();
    }
  };
  afterAll(async () => {
    await Promise.all(databases.map(dropDatabase));
  });

  it('applies every migration once, with Prisma checksums', async () => {
    const url = await freshDatabase();
    await expectMigratesOnce({ kind: 'pg', url }, queryOn(url));
    const lockfile = await readFile(path.join(migrationsDir, 'migration_lock.toml'), 'utf8');
    expect(lockfile).toMatch(/^provider = "postgresql"$/m);
  });

  it('records each migration once when two runs start together', async () => {
    const url = await freshDatabase();
    const names = (await localMigrations()).map((migration) => migration.name);
    const runs = await Promise.all([applyMigrations({ kind: 'pg', url }), applyMigrations({ kind: 'pg', url })]);
    expect(runs.flatMap((run) => run.applied).sort()).toEqual(names);
    await expectRecordedOnce(queryOn(url));
  });

  // Startup options are refused by transaction-mode poolers: jit = off is the database's default instead.
  it('sets jit = off as the database default, or returns the statement when the role does not own the database', async () => {
    const url = await freshDatabase();
    const jitOf = async () => (await queryOn(url)('SHOW jit'))[0].jit;
    expect(await jitOf()).toBe('on');
    await applyMigrations({ kind: 'pg', url });
    expect(await jitOf()).toBe('off');
    const settings = await queryOn(url)(`SELECT unnest(setconfig) AS setting FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase WHERE d.datname = current_database() AND s.setrole = 0`);
    expect(settings.map((row) => row.setting)).toEqual(['jit=off']);

    // A migrating role that owns the schema but not the database (a managed service's usual split).
    const other = await freshDatabase();
    const otherName = databases.at(-1)!;
    const role = uniqueName('kf_migrator');
    await queryOn(other)(`CREATE ROLE ${role} LOGIN; GRANT CREATE ON DATABASE "${otherName}" TO ${role}; GRANT CREATE ON SCHEMA public TO ${role}`);
    const asRole = new URL(other);
    asRole.username = role;
    try {
      const result = await applyMigrations({ kind: 'pg', url: asRole.toString() });
      expect(result.applied.length).toBeGreaterThan(0);
      expect(result.unsetDefaults).toEqual([`ALTER DATABASE "${otherName}" SET jit = off`]);
    } finally {
      await dropDatabase(otherName);
      databases.splice(databases.indexOf(otherName), 1);
      await queryOn(url)(`DROP ROLE ${role}`);
    }
  });

  // A guard: a model edited without `pnpm db:migration`, or a migration edited by hand, fails here.
  it('prisma/schema.prisma and prisma/migrations describe the same database', async () => {
    const url = await freshDatabase();
    await applyMigrations({ kind: 'pg', url });
    const target: MigrationTarget = { kind: 'pg', url };
    const hint = 'prisma/schema.prisma and prisma/migrations disagree: run `pnpm db:migration <name>` and commit the migration';
    // The migrated scratch database against the schema, and the migrations replayed on a shadow database.
    expect(await schemaDrift(target, { from: 'database' }), hint).toBe('');
    expect(await schemaDrift(target, { from: 'migrations' }), hint).toBe('');
    // The guard can fail: a field with no migration is reported as the SQL it lacks.
    const edited = (await readFile(schemaPath, 'utf8')).replace(/^model Tenant \{$/m, 'model Tenant {\n  driftProbe String?');
    expect(edited).toContain('driftProbe');
    expect(await schemaDrift(target, { from: 'database', schemaText: edited })).toMatch(/ALTER TABLE "tenants" ADD COLUMN\s+"driftProbe" TEXT/);
    expect(await schemaDrift(target, { from: 'migrations', schemaText: edited })).toMatch(/ADD COLUMN\s+"driftProbe"/);
  });
});

describe('migrations on PGlite', () => {
  it('applies every migration once and leaves the database open', async () => {
    const pglite = createPGlite();
    try {
      await expectMigratesOnce({ kind: 'pglite', pglite }, async (sql) => (await pglite.query(sql)).rows as Record<string, unknown>[]);
      expect((await pglite.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pglite.close();
    }
  });
});
