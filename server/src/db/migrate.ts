// Prisma migrations without Prisma's native schema engine (it cannot be downloaded here): the WebAssembly
// build of the engine drives the database through a driver adapter, pg or the embedded PGlite. Migration
// files and the `_prisma_migrations` table stay in Prisma's own format, so `prisma migrate deploy` works
// unchanged wherever the native engine is available.
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PGlite } from '@electric-sql/pglite';
import { createPGlite } from './pglite.js';
import { PrismaPg } from '@prisma/adapter-pg';
import {
  bindMigrationAwareSqlAdapterFactory,
  DriverAdapterError,
  type SqlDriverAdapter,
  type SqlMigrationAwareDriverAdapterFactory,
} from '@prisma/driver-adapter-utils';
import * as glue from '@prisma/schema-engine-wasm/schema_engine_bg';
import type { MigrationList, SchemaEngine } from '@prisma/schema-engine-wasm/schema_engine_bg';
import pg from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';

export type MigrationTarget = { kind: 'pg'; url: string } | { kind: 'pglite'; pglite: PGlite };

// This file runs from server/src/db (tsx) or server/dist/db (built): both are three levels below the repo root.
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const migrationsDir = path.join(repoRoot, 'prisma', 'migrations');
export const schemaPath = path.join(repoRoot, 'prisma', 'schema.prisma');

const LOCKFILE = 'migration_lock.toml';
const filters = { externalTables: [], externalEnums: [] };

/**
 * Applies the pending migrations of prisma/migrations (what `prisma migrate deploy` does), then the database defaults
 * below. `unsetDefaults` lists the statements that could not run (the migrating role does not own the database):
 * a DBA runs them once.
 */
export async function applyMigrations(target: MigrationTarget): Promise<{ applied: string[]; unsetDefaults: string[] }> {
  return withMigrationLock(target, async () => {
    const applied = await withEngine(target, async (engine) => {
      const { appliedMigrationNames } = await engine.applyMigrations({ migrationsList: await readMigrations(), filters });
      return appliedMigrationNames;
    });
    return { applied, unsetDefaults: target.kind === 'pg' ? await setDatabaseDefaults(target.url) : [] };
  });
}

/**
 * Settings the server relies on, as defaults of the database rather than connection startup options, which a
 * transaction-mode pooler refuses (docs/performance.md › "Connection pooling"). Every new session gets them.
 * jit = off: the management reads are short index-driven queries over large tables, where the planner's cost estimate
 * triggers JIT compilation that costs more (~40 ms a statement, measured by pnpm bench:scale) than it saves.
 */
export const DATABASE_DEFAULTS: Record<string, string> = { jit: 'off' };

async function setDatabaseDefaults(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {}); // a dropped connection surfaces as the query's error
  await client.connect();
  try {
    const { rows } = await client.query<{ db: string }>('SELECT current_database() AS db');
    const unset: string[] = [];
    for (const [name, value] of Object.entries(DATABASE_DEFAULTS)) {
      const statement = `ALTER DATABASE ${client.escapeIdentifier(rows[0].db)} SET ${name} = ${value}`;
      try {
        await client.query(statement);
      } catch (error) {
        // 42501: only the database's owner (or a superuser) may set its defaults.
        if ((error as { code?: string }).code !== '42501') throw error;
        unset.push(statement);
      }
    }
    return unset;
  } finally {
    await client.end();
  }
}

/** Compares prisma/migrations with the database's `_prisma_migrations`; read-only. */
export async function migrationStatus(
  target: MigrationTarget,
): Promise<{ applied: string[]; pending: string[]; problems: string[] }> {
  return withEngine(target, async (engine) => {
    const migrationsList = await readMigrations();
    const diagnosis = await engine.diagnoseMigrationHistory({ migrationsList, optInToShadowDatabase: false, filters });
    const { history, failedMigrationNames: failed, editedMigrationNames: edited } = diagnosis;
    const pending = history && 'unappliedMigrationNames' in history ? history.unappliedMigrationNames : [];
    const unknown = history && 'unpersistedMigrationNames' in history ? history.unpersistedMigrationNames : [];
    const problems = [
      ...failed.map((name) => `${name} failed to apply; fix the database, then mark it rolled back or applied`),
      ...edited.map((name) => `${name} was modified after it was applied`),
      ...unknown.map((name) => `${name} is applied to the database but missing from ${migrationsDir}`),
    ];
    const local = migrationsList.migrationDirectories.map((dir) => dir.path);
    return { applied: local.filter((name) => !pending.includes(name) && !failed.includes(name)), pending, problems };
  });
}

/**
 * Writes prisma/migrations/<timestamp>_<name>/migration.sql with the SQL that takes the migration history to
 * prisma/schema.prisma; `created` is null when there is nothing to do. Like `prisma migrate dev --create-only`:
 * refuses a database that drifted from the history, applies pending migrations first (listed in `applied`),
 * and does not apply the new one.
 */
export async function createMigration(
  target: MigrationTarget,
  name: string,
): Promise<{ created: string | null; applied: string[] }> {
  const migrationName = slugify(name);
  if (!migrationName) throw new Error(`invalid migration name ${JSON.stringify(name)}: use letters and digits`);
  const schema = { files: [{ path: schemaPath, content: await readFile(schemaPath, 'utf8') }] };
  return withMigrationLock(target, () =>
    withEngine(target, async (engine) => {
      const migrationsList = await readMigrations();
      // devDiagnostic replays the applied migrations on a shadow database and caches the resulting schema;
      // createMigration only reads that cache (it has no shadow database of its own). So the database must be
      // up to date when devDiagnostic runs: apply what is pending, then diagnose again.
      const diagnose = async () => {
        const { action } = await engine.devDiagnostic({ migrationsList, filters });
        if (action.tag === 'reset') throw new Error(`${action.reason}\nReset the database before creating a migration.`);
      };
      await diagnose();
      const { appliedMigrationNames: applied } = await engine.applyMigrations({ migrationsList, filters });
      if (applied.length) await diagnose();
      const out = await engine.createMigration({ draft: false, migrationName, migrationsList, schema, filters });
      if (out.migrationScript === null) return { created: null, applied };
      const dir = path.join(migrationsDir, out.generatedMigrationName);
      await mkdir(dir, { recursive: true });
      await writeFile(path.join(dir, `migration.${out.extension}`), out.migrationScript);
      // Same text as Prisma's CLI writes.
      await writeFile(
        path.join(migrationsDir, LOCKFILE),
        `# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "${out.connectorType}"\n`,
      );
      return { created: out.generatedMigrationName, applied };
    }),
  );
}

/** Like Prisma's CLI (slugify with "_"): "Add licenses" -> "add_licenses". */
function slugify(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 200);
}

/** The migrations directory as the engine wants it; the same shape Prisma's CLI builds. */
async function readMigrations(): Promise<MigrationList> {
  const content = await readFile(path.join(migrationsDir, LOCKFILE), 'utf8').catch(() => null);
  const entries = await readdir(migrationsDir, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  const names = entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  const migrationDirectories = await Promise.all(
    names.sort((a, b) => a.localeCompare(b)).map(async (name) => ({
      path: name,
      migrationFile: {
        path: 'migration.sql',
        content: await readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8').then(
          (value) => ({ tag: 'ok' as const, value }),
          (error: Error) => ({ tag: 'error' as const, value: error.message }),
        ),
      },
    })),
  );
  return { baseDir: migrationsDir, lockfile: { path: LOCKFILE, content }, shadowDbInitScript: '', migrationDirectories };
}

// Node 20 cannot `import` a .wasm file, which the package's main entry does: instantiate it by hand, once.
// (The server's lib settings carry no WebAssembly types; this is the part used.)
declare const WebAssembly: {
  instantiate(bytes: Uint8Array, imports: object): Promise<{ instance: { exports: Record<string, unknown> } }>;
};
let engineGlue: Promise<typeof glue> | undefined;
function loadEngine(): Promise<typeof glue> {
  engineGlue ??= (async () => {
    const entry = createRequire(import.meta.url).resolve('@prisma/schema-engine-wasm/schema_engine_bg');
    const bytes = await readFile(path.join(path.dirname(entry), 'schema_engine_bg.wasm'));
    const imports: Record<string, unknown> = { ...glue };
    const setTimeoutImport = Object.keys(imports).find((key) => key.startsWith('__wbg_setTimeout_'));
    if (setTimeoutImport) imports[setTimeoutImport] = trackedSetTimeout;
    const { instance } = await WebAssembly.instantiate(bytes, { './schema_engine_bg.js': imports });
    glue.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
    return glue;
  })();
  return engineGlue;
}

// The engine arms a timer for its advisory-lock timeout and never clears it, which would keep Node alive
// for 10 s after a run. Track its timers and clear the leftovers whenever no engine is running.
const engineTimers = new Set<NodeJS.Timeout>();
let runningEngines = 0;
function trackedSetTimeout(callback: () => void, ms: number): NodeJS.Timeout {
  const timer = setTimeout(() => {
    engineTimers.delete(timer);
    callback();
  }, ms >>> 0);
  engineTimers.add(timer);
  return timer;
}

/** One engine per call, on adapters that are all closed afterwards (a given PGlite stays open). */
async function withEngine<T>(target: MigrationTarget, run: (engine: SchemaEngine) => Promise<T>): Promise<T> {
  const { SchemaEngine } = await loadEngine();
  const adapters = target.kind === 'pg' ? pgAdapters(target.url) : pgliteAdapters(target.pglite);
  runningEngines++;
  try {
    const engine = await SchemaEngine.new({ datamodels: undefined }, () => {}, bindMigrationAwareSqlAdapterFactory(adapters));
    try {
      return await run(engine);
    } finally {
      engine.free();
    }
  } catch (error) {
    throw engineError(error);
  } finally {
    await adapters.close();
    if (--runningEngines === 0) {
      for (const timer of engineTimers) clearTimeout(timer);
      engineTimers.clear();
    }
  }
}

/**
 * Engine errors end with a Rust span trace ("   0: sql_schema_connector::…"): keep the sentence, and name
 * the migration that failed, which only the trace mentions.
 */
function engineError(error: unknown): Error {
  if (!(error instanceof Error) || error.name !== 'SchemaConnectorError') return error as Error;
  const sentence = error.message.split(/\n\s+0: /)[0].replace(/^external connector error\n/, '').trim();
  const migration = /Applying migration\s+with migration_name="([^"]+)"/.exec(error.message)?.[1];
  return new Error(migration ? `migration ${migration} failed: ${sentence}` : sentence, { cause: error });
}

type Adapters = SqlMigrationAwareDriverAdapterFactory & { close(): Promise<void> };

/** Tracks every adapter handed to the engine so that all of them get disposed, whatever the engine does. */
function tracking(
  adapterName: string,
  connect: () => Promise<SqlDriverAdapter>,
  connectToShadowDb: () => Promise<SqlDriverAdapter>,
): Adapters {
  const open = new Set<SqlDriverAdapter>();
  const track = async (adapter: SqlDriverAdapter) => {
    const dispose = adapter.dispose.bind(adapter);
    open.add(adapter);
    adapter.dispose = async () => {
      if (open.delete(adapter)) await dispose();
    };
    return adapter;
  };
  return {
    provider: 'postgres',
    adapterName,
    connect: async () => track(await connect()),
    connectToShadowDb: async () => track(await connectToShadowDb()),
    close: async () => {
      await Promise.allSettled([...open].map((adapter) => adapter.dispose()));
    },
  };
}

/** Database errors as the engine expects them, so that it reports e.g. which statement of a migration failed. */
function driverError(error: unknown): unknown {
  const e = error as { code?: unknown; severity?: unknown; message: string; detail?: string; column?: string; hint?: string };
  if (typeof e?.code !== 'string' || typeof e.severity !== 'string') return error;
  return new DriverAdapterError({
    kind: 'postgres',
    code: e.code,
    severity: e.severity,
    message: e.message,
    detail: e.detail,
    column: e.column,
    hint: e.hint,
  });
}

/**
 * Both adapters' executeScript are unfit for migrations: pg's splits the script at every ";" (breaking
 * `DO $$ … $$` blocks and literals) and PGlite's does not await the script (errors escape, the migration
 * is recorded as applied). Run the whole script as one simple query, as Prisma's native engine does.
 */
function runScriptsWith(adapter: SqlDriverAdapter, exec: (script: string) => Promise<unknown>): SqlDriverAdapter {
  adapter.executeScript = async (script) => {
    await exec(script).catch((error: unknown) => {
      throw driverError(error);
    });
  };
  return adapter;
}

const CHAR_OID = 18;
const NAME_OID = 19;
const TEXT_OID = 25;

// Prisma's pg adapter rejects columns of type "char", which the engine's catalog queries return (e.g.
// pg_constraint.contype): relabel "char" and "name" as text before pg builds the result (a pg internal, the
// hook every result goes through). Their values are plain strings either way. Only the engine's pools use it.
const handleRowDescription = (pg.Client.prototype as unknown as Record<string, (msg: unknown) => void>)
  ._handleRowDescription;
class CatalogTextClient extends pg.Client {
  _handleRowDescription(msg: { fields: { dataTypeID: number }[] }) {
    for (const field of msg.fields) {
      if (field.dataTypeID === CHAR_OID || field.dataTypeID === NAME_OID) field.dataTypeID = TEXT_OID;
    }
    handleRowDescription.call(this, msg);
  }
}

function pgAdapters(url: string): Adapters {
  const connect = async (connectionString: string) => {
    const adapter = await new PrismaPg({ connectionString, Client: CatalogTextClient }).connect();
    return runScriptsWith(adapter, (script) => adapter.underlyingDriver().query(script));
  };
  // PrismaPg's own shadow database is broken with a URL (it connects back to the main database, then
  // drops the shadow without FORCE): create a scratch database, point a copy of the URL at it, drop it after.
  const connectToShadowDb = async () => {
    const name = `prisma_shadow_${randomUUID().replaceAll('-', '')}`;
    await adminQuery(url, `CREATE DATABASE "${name}"`);
    const dropShadow = () => adminQuery(url, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    try {
      const adapter = await connect(withDatabase(url, name));
      const dispose = adapter.dispose.bind(adapter);
      adapter.dispose = () => dispose().finally(dropShadow);
      return adapter;
    } catch (error) {
      await dropShadow();
      throw error;
    }
  };
  return tracking('@prisma/adapter-pg', () => connect(url), connectToShadowDb);
}

/** The URL with another database name; every other setting (host, credentials, sslmode…) is kept. */
function withDatabase(url: string, database: string): string {
  if (!URL.canParse(url)) throw new Error('cannot derive a shadow database URL: write the URL as postgres://user@host:port/db');
  const copy = new URL(url);
  copy.pathname = `/${encodeURIComponent(database)}`;
  return copy.toString();
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {}); // a dropped connection surfaces as the query's error
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function pgliteAdapters(db: PGlite): Adapters {
  const connect = async (instance: PGlite) =>
    runScriptsWith(await new PrismaPGlite(instance).connect(), (script) => instance.exec(script));
  // The adapter's own shadow database is a PGlite that is never closed; use one we close.
  const connectToShadowDb = async () => {
    const shadow = createPGlite();
    const adapter = await connect(shadow);
    adapter.dispose = () => shadow.close();
    return adapter;
  };
  // The main adapter's dispose leaves the caller's PGlite open, as the server keeps using it.
  return tracking('pglite-prisma-adapter', () => connect(db), connectToShadowDb);
}

// Prisma's engine takes pg_advisory_lock(72707369) itself, but on a pooled connection and giving up after a
// short timeout, so a replica starting during a long migration would fail. Hold our own lock on a dedicated
// session for the whole run instead: processes starting together queue, and the later ones find nothing to apply.
const MIGRATION_LOCK_KEY = 72707370;
const pgliteRuns = new WeakMap<PGlite, Promise<unknown>>();

async function withMigrationLock<T>(target: MigrationTarget, run: () => Promise<T>): Promise<T> {
  if (target.kind === 'pglite') {
    // One PGlite is one session inside this process: queue the runs on it.
    const result = (pgliteRuns.get(target.pglite) ?? Promise.resolve()).then(run, run);
    pgliteRuns.set(target.pglite, result.catch(() => {}));
    return result;
  }
  const client = new pg.Client({ connectionString: target.url });
  client.on('error', () => {}); // losing the session only releases the lock early
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    return await run();
  } finally {
    await client.end(); // ends the session, which releases the lock
  }
}

/**
 * What it would take to bring a database with every migration applied to prisma/schema.prisma, as SQL; an empty
 * string when the two agree. `prisma migrate diff --from-migrations … --to-schema-datamodel …`: the engine
 * replays the migrations on a shadow database of the target's kind and compares. A guard for a schema edit
 * that has no migration (or a migration edited by hand).
 */
export async function schemaDrift(
  target: MigrationTarget,
  { from = 'migrations', schemaText }: { from?: 'migrations' | 'database'; schemaText?: string } = {},
): Promise<string> {
  const schema = { files: [{ path: schemaPath, content: schemaText ?? (await readFile(schemaPath, 'utf8')) }] };
  return withEngine(target, async (engine) => {
    const { stdout } = await engine.diff({
      from: from === 'migrations' ? { tag: 'migrations', ...(await readMigrations()) } : { tag: 'schemaDatasource', ...schema, configDir: path.dirname(schemaPath) },
      to: { tag: 'schemaDatamodel', ...schema },
      script: true,
      exitCode: true,
      filters,
    });
    const script = (stdout ?? '').trim();
    // With nothing to do the engine still prints an empty migration's comment.
    return script === '-- This is an empty migration.' ? '' : script;
  });
}
