import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { JWK } from 'jose';
import { exportAuditLog, verifyAuditExport, type AuditExport } from './services/audit/checkpoints.js';
import { ConfigError, loadConfig } from './config.js';
import { ServerSecrets, loadServerSecret } from './crypto/secrets.js';
import { openDatabase, type Database } from './db/database.js';
import { AppError } from './domain/errors.js';
import { createTenant, getTenantByPrefix } from './services/tenants.js';
import { createProduct, getProductByName } from './services/products.js';
import { createLicense, findByKey, revokeLicense, showLicenseByKey } from './services/licenses/management.js';
import { loadTokenSigner, rotateSigningKey } from './services/signing/signing-keys.js';
import { listActiveFloatingSessions } from './services/floating/management.js';
import { removeMeterQuota, setMeterQuota, usageTotals } from './services/metering/management.js';
import { METER_PERIODS, type MeterPeriod } from './services/metering/periods.js';
import { createUser } from './services/users.js';
import { reactivateUserByEmail, resetMfa, resetPassword, unlockAccount } from './services/auth/recovery.js';
import { jobCommands } from './jobs/cli.js';
import { NO_META, operatorIn, systemActor } from './services/auth/actor.js';
import type { ServiceContext } from './services/context.js';

/**
 * Operator CLI: `pnpm cli <command> [--flags] [--json]`. Works on the embedded database (while the server
 * is stopped) and on DATABASE_URL. With --json, prints exactly one JSON object.
 */
type Ctx = ServiceContext;
type Flags = Record<string, string | boolean | undefined>;
/** Who the activity log names for changes made here: the system actor, given a tenant once one is named. */
const CLI_ACTOR = systemActor(null, 'system (cli)');

const list = (value: unknown) => (typeof value === 'string' ? value.split(',').map((item) => item.trim()).filter(Boolean) : undefined);
const int = (value: unknown, flag: string) => {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number)) throw new AppError('InvalidRequest', `--${flag} must be a whole number`);
  return number;
};
const need = (flags: Flags, name: string): string => {
  const value = flags[name];
  if (typeof value !== 'string' || value === '') throw new AppError('InvalidRequest', `--${name} is required`);
  return value;
};
function keyValues(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'string') return undefined;
  return Object.fromEntries(
    value.split(',').map((pair) => {
      const at = pair.indexOf('=');
      if (at < 1) throw new AppError('InvalidRequest', `--custom expects key=value pairs, got "${pair}"`);
      return [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
    }),
  );
}

type Command = {
  options: Record<string, { type: 'string' | 'boolean' }>;
  usage: string;
  positional?: string;
  /** Runs without opening the database (ctx.db is not available). */
  offline?: boolean;
  /** A non-zero exit for a result that reports a failure (e.g. a broken chain). */
  exitCode?: (result: any) => number;
  run(ctx: Ctx, flags: Flags): Promise<unknown>;
};

const commands: Record<string, Command> = {
  'tenant:create': {
    usage: 'tenant:create --name <name> --prefix <WORD> [--subscription-ends <ISO date>]',
    options: { name: { type: 'string' }, prefix: { type: 'string' }, 'subscription-ends': { type: 'string' } },
    async run(ctx, flags) {
      const tenant = await createTenant(ctx, { name: need(flags, 'name'), keyPrefix: need(flags, 'prefix'), subscriptionEndsAt: flags['subscription-ends'] as string | undefined });
      return { tenant };
    },
  },
  'product:create': {
    usage: 'product:create --tenant <PREFIX> --name <name> [--bundle-of <name,name>]',
    options: { tenant: { type: 'string' }, name: { type: 'string' }, 'bundle-of': { type: 'string' } },
    async run(ctx, flags) {
      const tenant = await getTenantByPrefix(ctx, need(flags, 'tenant'));
      const product = await createProduct(operatorIn(ctx, tenant.id), { name: need(flags, 'name'), bundleOf: list(flags['bundle-of']) });
      const { bundleMembers, _count, ...rest } = product;
      return { product: { ...rest, bundleOf: bundleMembers.map((member) => member.product.name) } };
    },
  },
  'license:create': {
    usage:
      'license:create --tenant <PREFIX> --product <name> --max-activations N [--expires-at ISO] [--trial] [--node-locked] [--features a,b] [--custom k=v,...] [--min-version V] [--max-version V] [--offline-grace-days N] [--grace-days N] [--maintenance-expires-at ISO] [--customer-email E] [--floating-seats N]',
    options: {
      tenant: { type: 'string' },
      product: { type: 'string' },
      'max-activations': { type: 'string' },
      'expires-at': { type: 'string' },
      trial: { type: 'boolean' },
      'node-locked': { type: 'boolean' },
      features: { type: 'string' },
      custom: { type: 'string' },
      'min-version': { type: 'string' },
      'max-version': { type: 'string' },
      'offline-grace-days': { type: 'string' },
      'grace-days': { type: 'string' },
      'maintenance-expires-at': { type: 'string' },
      'customer-email': { type: 'string' },
      'floating-seats': { type: 'string' },
    },
    async run(ctx, flags) {
      const tenant = await getTenantByPrefix(ctx, need(flags, 'tenant'));
      const product = await getProductByName(operatorIn(ctx, tenant.id), need(flags, 'product'));
      const { key, license } = await createLicense(operatorIn(ctx, tenant.id), {
        productId: product.id,
        maxActivations: int(need(flags, 'max-activations'), 'max-activations')!,
        expiresAt: flags['expires-at'] as string | undefined,
        isTrial: flags.trial === true,
        nodeLocked: flags['node-locked'] === true,
        features: list(flags.features),
        customFields: keyValues(flags.custom),
        minVersion: flags['min-version'] as string | undefined,
        maxVersion: flags['max-version'] as string | undefined,
        offlineGraceDays: int(flags['offline-grace-days'], 'offline-grace-days'),
        gracePeriodDays: int(flags['grace-days'], 'grace-days'),
        maintenanceExpiresAt: flags['maintenance-expires-at'] as string | undefined,
        customerEmail: flags['customer-email'] as string | undefined,
        floatingSeats: int(flags['floating-seats'], 'floating-seats'),
      });
      const { product: _product, ...shown } = license;
      return { key, license: { ...shown, productName: product.name } };
    },
  },
  'license:revoke': {
    usage: 'license:revoke --key <license key>',
    options: { key: { type: 'string' } },
    async run(ctx, flags) {
      const found = await findByKey(ctx, need(flags, 'key'));
      const { product: _product, ...license } = await revokeLicense(operatorIn(ctx, found.tenantId), found.id);
      return { license };
    },
  },
  'license:show': {
    usage: 'license:show --key <license key>   (with its newest 100 activations and activationCount)',
    options: { key: { type: 'string' } },
    async run(ctx, flags) {
      return { license: await showLicenseByKey(ctx, need(flags, 'key')) };
    },
  },
  'user:create': {
    usage: 'user:create --tenant <PREFIX> --email <email> --password <password> --role CompanyAdmin|ReadOnly [--name <name>]',
    options: { tenant: { type: 'string' }, email: { type: 'string' }, password: { type: 'string' }, role: { type: 'string' }, name: { type: 'string' } },
    async run(ctx, flags) {
      const tenant = await getTenantByPrefix(ctx, need(flags, 'tenant'));
      const role = need(flags, 'role');
      if (role !== 'CompanyAdmin' && role !== 'ReadOnly') throw new AppError('InvalidRequest', '--role must be CompanyAdmin or ReadOnly');
      const user = await createUser(operatorIn(ctx, tenant.id), { email: need(flags, 'email'), password: need(flags, 'password'), role, name: flags.name as string | undefined });
      const { mfaSecretEncrypted: _secret, ...shown } = user;
      return { user: shown };
    },
  },
  'user:reset-password': {
    usage: 'user:reset-password --email <email> [--password <new password>]   (ends their sessions and lifts a lock; without --password one is generated and shown once)',
    options: { email: { type: 'string' }, password: { type: 'string' } },
    async run(ctx, flags) {
      return resetPassword(ctx, need(flags, 'email'), flags.password as string | undefined);
    },
  },
  'user:unlock': {
    usage: 'user:unlock --email <email>   (lifts the lock after too many failed sign-ins)',
    options: { email: { type: 'string' } },
    async run(ctx, flags) {
      return unlockAccount(ctx, need(flags, 'email'));
    },
  },
  'user:reset-mfa': {
    usage: 'user:reset-mfa --email <email>   (turns two-factor authentication off: lost authenticator and backup codes)',
    options: { email: { type: 'string' } },
    async run(ctx, flags) {
      return resetMfa(ctx, need(flags, 'email'));
    },
  },
  'user:reactivate': {
    usage: 'user:reactivate --email <email>   (a deactivated user can sign in again)',
    options: { email: { type: 'string' } },
    async run(ctx, flags) {
      return reactivateUserByEmail(ctx, need(flags, 'email'));
    },
  },
  'license:quota': {
    usage: 'license:quota --key <license key> --event <name> (--period day|month|year|lifetime --limit N | --remove)',
    options: { key: { type: 'string' }, event: { type: 'string' }, period: { type: 'string' }, limit: { type: 'string' }, remove: { type: 'boolean' } },
    async run(ctx, flags) {
      const license = await findByKey(ctx, need(flags, 'key'));
      const event = need(flags, 'event');
      if (flags.remove === true) return removeMeterQuota(operatorIn(ctx, license.tenantId), license.id, event);
      const period = need(flags, 'period') as MeterPeriod;
      return { quota: await setMeterQuota(operatorIn(ctx, license.tenantId), license.id, { event, period, limit: int(need(flags, 'limit'), 'limit')! }) };
    },
  },
  'license:sessions': {
    usage: 'license:sessions --key <license key>',
    options: { key: { type: 'string' } },
    async run(ctx, flags) {
      const license = await findByKey(ctx, need(flags, 'key'));
      return listActiveFloatingSessions(operatorIn(ctx, license.tenantId), license.id);
    },
  },
  'license:usage': {
    usage: 'license:usage --key <license key> [--event <name>]',
    options: { key: { type: 'string' }, event: { type: 'string' } },
    async run(ctx, flags) {
      const license = await findByKey(ctx, need(flags, 'key'));
      const event = flags.event as string | undefined;
      const byPeriod = await Promise.all(METER_PERIODS.map((period) => usageTotals(operatorIn(ctx, license.tenantId), license.id, { event, period })));
      // One row per event: its totals in the current day, month and year (UTC) and over the lifetime.
      const rows = new Map<string, { event: string; quota: unknown } & Record<MeterPeriod, number>>();
      for (const { period, totals } of byPeriod) {
        for (const total of totals) {
          const row = rows.get(total.event) ?? { event: total.event, quota: total.quota, day: 0, month: 0, year: 0, lifetime: 0 };
          row[period] = total.total;
          rows.set(total.event, row);
        }
      }
      const periods = Object.fromEntries(byPeriod.map(({ period, periodStart, periodEnd }) => [period, { start: periodStart, end: periodEnd }]));
      return { usage: [...rows.values()], periods };
    },
  },
  'signing-key:rotate': {
    usage: 'signing-key:rotate',
    options: {},
    async run(ctx) {
      return rotateSigningKey(ctx);
    },
  },
  'audit:export': {
    usage: 'audit:export --tenant <PREFIX> --out <file.json>   (the activity log with signed checkpoints, for offline verification)',
    options: { tenant: { type: 'string' }, out: { type: 'string' } },
    async run(ctx, flags) {
      const tenant = await getTenantByPrefix(ctx, need(flags, 'tenant'));
      const signer = await loadTokenSigner(ctx, loadConfig().publicUrl);
      const doc = await exportAuditLog(ctx, tenant.id, signer);
      const out = need(flags, 'out');
      writeFileSync(out, JSON.stringify(doc));
      return { tenant: tenant.keyPrefix, file: out, entries: doc.entries.length, checkpoints: doc.checkpoints.length, latestCheckpointSeq: doc.checkpoints.at(-1)?.seq ?? null };
    },
  },
  'audit:verify': {
    usage: 'audit:verify --file <export.json> [--jwks <jwks.json>] [--with-secret]   (offline: public keys only unless --with-secret)',
    options: { file: { type: 'string' }, jwks: { type: 'string' }, 'with-secret': { type: 'boolean' } },
    offline: true,
    exitCode: (result: { valid: boolean }) => (result.valid ? 0 : 1),
    async run(ctx, flags) {
      const doc = JSON.parse(readFileSync(need(flags, 'file'), 'utf8')) as AuditExport;
      const jwks = typeof flags.jwks === 'string' ? (JSON.parse(readFileSync(flags.jwks, 'utf8')) as { keys: JWK[] }) : undefined;
      const result = await verifyAuditExport(doc, { jwks, key: flags['with-secret'] ? ctx.secrets.auditChainKey : null });
      return { tenantId: doc.tenantId, keys: jwks ? 'from --jwks' : 'embedded in the export (pass --jwks with a copy you trust)', ...result };
    },
  },
  ...jobCommands,
};

function usage(): string {
  return `Usage: pnpm cli <command> [options] [--json]
       pnpm cli help [command]

--json (anywhere on the line) prints exactly one JSON object. The database is DATABASE_URL, or the embedded one
in DATA_DIR (default ./data: run the CLI where the server runs, or set DATA_DIR to the server's).

Commands:
${Object.values(commands).map((command) => `  ${command.usage}`).join('\n')}
`;
}

/**
 * Which database this run uses, told on stderr (stdout stays the result). A missing embedded database is only
 * created by tenant:create — any other command on a DATA_DIR that holds none is most likely run in the wrong
 * directory, and says so instead of answering from a new, empty database.
 */
function announceDatabase(config: { databaseUrl?: string; dataDir: string }, name: string): void {
  if (config.databaseUrl) {
    const url = new URL(config.databaseUrl);
    process.stderr.write(`database: PostgreSQL ${url.hostname}:${url.port || 5432}${url.pathname}\n`);
    return;
  }
  const dir = path.resolve(config.dataDir, 'pglite');
  if (existsSync(dir)) {
    process.stderr.write(`database: embedded, ${dir}\n`);
    return;
  }
  if (name !== 'tenant:create') {
    throw new AppError('NotFound', `no embedded database in ${dir}: run the CLI in the directory the server runs in, or set DATA_DIR (or DATABASE_URL) to the server's; tenant:create starts a new one`);
  }
  process.stderr.write(`database: embedded, ${dir} (new: there was none in DATA_DIR)\n`);
}

async function main(argv: string[]): Promise<number> {
  // --json and --help may stand anywhere on the line.
  const json = argv.includes('--json');
  const wantsHelp = argv.includes('--help') || argv.includes('-h');
  const [name, ...rest] = argv.filter((arg) => arg !== '--json' && arg !== '--help' && arg !== '-h');
  const fail = (code: string, message: string) => {
    if (json) process.stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
    else process.stderr.write(`error: ${message}\n`);
    return 1;
  };
  if (name === 'help' || (wantsHelp && !name)) {
    const topic = name === 'help' ? rest[0] : undefined;
    if (topic && !commands[topic]) return fail('InvalidRequest', `unknown command ${topic}; pnpm cli help lists them`);
    const text = topic ? `usage: pnpm cli ${commands[topic].usage}\n` : usage();
    process.stdout.write(json ? `${JSON.stringify({ usage: text })}\n` : text);
    return 0;
  }
  const command = name ? commands[name] : undefined;
  if (!command) {
    if (json) return fail('InvalidRequest', name ? `unknown command ${name}` : 'no command given');
    process.stderr.write(name ? `unknown command ${name}\n\n${usage()}` : usage());
    return 1;
  }
  if (wantsHelp) {
    process.stdout.write(`usage: pnpm cli ${command.usage}\n`);
    return 0;
  }
  let flags: Flags;
  try {
    const parsed = parseArgs({ args: rest, options: command.options, strict: true, allowPositionals: Boolean(command.positional) });
    if (parsed.positionals.length > 1) throw new Error(`unexpected argument ${parsed.positionals[1]}`);
    flags = { ...(parsed.values as Flags), ...(command.positional && parsed.positionals.length && { [command.positional]: parsed.positionals[0] }) };
  } catch (error) {
    return fail('InvalidRequest', `${(error as Error).message}\nusage: pnpm cli ${command.usage}`);
  }

  let db: Database | undefined;
  try {
    const config = loadConfig();
    // Before the secret: a wrong DATA_DIR must not get a new secret file either.
    if (!command.offline) announceDatabase(config, name!);
    const secrets = new ServerSecrets(loadServerSecret(config.serverSecret, config.dataDir).secret).useForProcess();
    if (!command.offline) db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
    const result = await command.run({ db: db as Database, secrets, now: new Date(), actor: CLI_ACTOR, meta: NO_META }, flags);
    process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${JSON.stringify(result, null, 2)}\n`);
    return command.exitCode?.(result) ?? 0;
  } catch (error) {
    if (error instanceof AppError) return fail(error.code, error.message);
    if (error instanceof ConfigError) return fail('InvalidConfiguration', error.message);
    const message = error instanceof Error ? error.message : String(error);
    return fail('InternalError', message);
  } finally {
    await db?.close();
  }
}

main(process.argv.slice(2)).then((code) => process.exit(code));
