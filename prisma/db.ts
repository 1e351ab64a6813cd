// `pnpm db:migrate | db:migration <name> | db:status`: Prisma-format migrations run by the WebAssembly schema
// engine (server/src/db/migrate.ts), since Prisma's CLI cannot download its native engine here.
// Target: MIGRATION_DATABASE_URL (the owner role) or else DATABASE_URL when set, else the embedded PGlite
// database in ${DATA_DIR:-./data}/pglite. With both URLs, `migrate` also sets up the app role of DATABASE_URL.
import path from 'node:path';
import { DatabaseLockedError, lockEmbedded } from '../server/src/db/database.js';
import {
  applyMigrations,
  createMigration,
  migrationsDir,
  migrationStatus,
  type MigrationTarget,
} from '../server/src/db/migrate.js';
import { createPGlite } from '../server/src/db/pglite.js';
import { grantAppRole, sameRole } from '../server/src/db/roles.js';

const USAGE = 'usage: pnpm db:migrate | pnpm db:migration <name> | pnpm db:status';

/** An expected failure: printed as one message, without a stack trace. */
class CliError extends Error {}

interface Target {
  target: MigrationTarget;
  where: string;
  close(): Promise<void>;
}

async function main(command: string | undefined, args: string[]): Promise<number> {
  if (command === 'create' && !args[0]?.trim()) {
    console.error('usage: pnpm db:migration <name>   e.g. pnpm db:migration add_license_notes');
    return 2;
  }
  if (command !== 'migrate' && command !== 'create' && command !== 'status') {
    console.error(USAGE);
    return 2;
  }
  const { target, where, close } = await openTarget();
  try {
    if (command === 'migrate') {
      const { applied, unsetDefaults } = await applyMigrations(target);
      if (applied.length === 0) console.log(`No pending migrations: ${where} is up to date.`);
      else console.log(`Applied ${applied.length} migration(s) to ${where}:\n${list(applied)}`);
      if (unsetDefaults.length) console.log(`This role does not own the database: have its owner run once\n${list(unsetDefaults)}`);
      const ownerUrl = process.env.MIGRATION_DATABASE_URL;
      const appUrl = process.env.DATABASE_URL;
      if (ownerUrl && appUrl && !sameRole(ownerUrl, appUrl)) {
        const { role, created } = await grantAppRole(ownerUrl, appUrl);
        console.log(`${created ? 'Created' : 'Updated'} the app role ${role}: read/write on the tables, append-only on the audit log.`);
      } else if (target.kind === 'pg') {
        console.log('One database role for migrations and the server: set MIGRATION_DATABASE_URL (owner) and DATABASE_URL (app role) to make the audit log append-only for the server.');
      }
      return 0;
    }
    if (command === 'create') {
      const { created, applied } = await createMigration(target, args.join(' '));
      if (applied.length) console.log(`Applied ${applied.length} pending migration(s) to ${where} first:\n${list(applied)}`);
      if (!created) console.log('No schema changes: prisma/schema.prisma matches the migrations. Nothing created.');
      else console.log(`Created ${path.relative(process.cwd(), path.join(migrationsDir, created, 'migration.sql'))}\nApply it with: pnpm db:migrate`);
      return 0;
    }
    const { applied, pending, problems } = await migrationStatus(target);
    console.log(`${where}: ${applied.length} applied, ${pending.length} pending`);
    if (applied.length) console.log(`Applied:\n${list(applied)}`);
    if (pending.length) console.log(`Pending (run pnpm db:migrate):\n${list(pending)}`);
    if (problems.length) console.log(`Problems:\n${list(problems)}`);
    // Like `prisma migrate status`: non-zero unless the database is up to date, so CI can check it.
    return pending.length || problems.length ? 1 : 0;
  } finally {
    await close();
  }
}

async function openTarget(): Promise<Target> {
  const url = process.env.MIGRATION_DATABASE_URL || process.env.DATABASE_URL;
  if (url) return { target: { kind: 'pg', url }, where: redact(url), close: async () => {} };

  const dataDir = path.resolve(process.env.DATA_DIR || './data');
  const dir = path.join(dataDir, 'pglite');
  // The same lock the server holds while it has the database open.
  const release = await lockEmbedded(dataDir).catch((error: unknown) => {
    throw error instanceof DatabaseLockedError ? new CliError(error.message) : error;
  });
  try {
    const pglite = createPGlite(dir);
    await pglite.waitReady;
    return {
      target: { kind: 'pglite', pglite },
      where: `the embedded database in ${dir.startsWith(process.cwd() + path.sep) ? path.relative(process.cwd(), dir) : dir}`,
      close: async () => {
        await pglite.close();
        await release();
      },
    };
  } catch (error) {
    await release();
    throw error;
  }
}

function list(items: string[]): string {
  return items.map((item) => `  - ${item}`).join('\n');
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'DATABASE_URL';
  }
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET']);

function describe(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  if (e?.code && UNREACHABLE.has(e.code)) {
    const url = process.env.MIGRATION_DATABASE_URL || process.env.DATABASE_URL;
    return `cannot reach the database${url ? ` at ${redact(url)}` : ''} (${e.code}). Is PostgreSQL running?`;
  }
  return (e?.message || String(error)).trim();
}

const [command, ...args] = process.argv.slice(2);
// Exit explicitly, a safety net: the schema engine arms timers it never clears (migrate.ts clears them too).
main(command, args).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const script = { migrate: 'db:migrate', create: 'db:migration', status: 'db:status' }[command] ?? command;
    console.error(`${script} failed: ${describe(error)}`);
    if (process.env.DEBUG && !(error instanceof CliError)) console.error(error);
    process.exit(1);
  },
);
