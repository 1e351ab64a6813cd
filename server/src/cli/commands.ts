import { releaseCommands } from './releases.js';
import { closeSync, createWriteStream, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { JWK } from 'jose';
import { exportAuditLog, findCheckpointTokens, verifyAuditExport, type AuditExport } from '../services/audit/checkpoints.js';
import { checkAuditIntegrity, checkpointFile, verifyLog } from '../services/audit/verification.js';
import { loadConfig } from '../config.js';
import { AppError } from '../domain/errors.js';
import { createTenant, getTenantByPrefix } from '../services/tenants.js';
import { createProduct, getProductByName } from '../services/products.js';
import { createPlan, deletePlan, listPlans, updatePlan, type PlanInput, type PlanWithCount } from '../services/plans.js';
import { createLicense, findByKey, revokeLicense, showLicenseByKey, type LicenseFilter } from '../services/licenses/management.js';
import { exportLicensesCsv } from '../services/licenses/export.js';
import { reissueLicenseKey } from '../services/licenses/reissue.js';
import { checkLicenseImport, getLicenseImportJob, licenseImportFailures, MAX_IMPORT_BYTES, startLicenseImport, takeLicenseImportKeys } from '../services/licenses/import.js';
import { runBulkJobUntilFinished } from '../services/licenses/bulk.js';
import { loadTokenSigner, rotateSigningKey } from '../services/signing/signing-keys.js';
import { listActiveFloatingSessions } from '../services/floating/management.js';
import { removeMeterQuota, setMeterQuota, usageTotals } from '../services/metering/management.js';
import { METER_PERIODS, type MeterPeriod } from '../services/metering/periods.js';
import { createUser } from '../services/users.js';
import { reactivateUserByEmail, resetMfa, resetPassword, unlockAccount } from '../services/auth/recovery.js';
import { jobCommands } from './jobs.js';
import { importKeygenAccount } from '../services/keygen-import/import.js';
import { readApi, readDirectory } from '../services/keygen-import/source.js';
import { operatorIn, systemActor } from '../services/auth/actor.js';
import { int, keyValues, list, need, str, type CliCommand } from './command.js';

const PLAN_FLAGS =
  '[--duration P1Y|perpetual] [--trial] [--node-locked] [--features a,b] [--custom k=v,...] [--min-version V] [--max-version V] [--offline-grace-days N] [--grace-days N] [--maintenance-period P1Y|none] [--floating-seats N] [--quotas event:period:limit,...]';
const PLAN_OPTIONS = [
  '--duration <period>', '--trial', '--node-locked', '--features <list>', '--custom <pairs>', '--min-version <V>', '--max-version <V>', '--offline-grace-days <N>',
  '--grace-days <N>', '--maintenance-period <period>', '--floating-seats <N>', '--quotas <list>',
];
/** A period option: "perpetual" / "none" clear it (null), absent leaves it. */
const periodOption = (value: string | undefined) => (value === undefined ? undefined : ['perpetual', 'none'].includes(value.toLowerCase()) ? null : value);
/** The options a plan and a license share (`--trial`, `--node-locked`, `--features`, …); absent ones undefined. */
function sharedAttributeOptions(opts: Record<string, string | boolean | undefined>) {
  return {
    isTrial: opts.trial === true ? true : undefined,
    nodeLocked: opts.nodeLocked === true ? true : undefined,
    features: list(opts.features),
    customFields: keyValues(opts.custom),
    minVersion: str(opts, 'minVersion'),
    maxVersion: str(opts, 'maxVersion'),
    offlineGraceDays: int(opts.offlineGraceDays, 'offline-grace-days'),
    gracePeriodDays: int(opts.graceDays, 'grace-days'),
  };
}
/** The plan fields of the options given (absent ones left out, so an update leaves them as they are). */
function planOptions(opts: Record<string, string | boolean | undefined>): PlanInput {
  const quotas = list(opts.quotas)?.map((item) => {
    const [event, period, limit] = item.split(':');
    return { event, period, limit: int(limit, 'quotas') };
  });
  const fields: PlanInput = {
    duration: periodOption(str(opts, 'duration')),
    ...sharedAttributeOptions(opts),
    maintenancePeriod: periodOption(str(opts, 'maintenancePeriod')),
    floatingSeats: int(opts.floatingSeats, 'floating-seats'),
    quotas,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}
/** A plan of a product by id or name (archived ones too). */
async function findPlan(ctx: Parameters<typeof listPlans>[0], productId: string, ref: string) {
  const plans = await listPlans(ctx, { productId, includeArchived: true });
  const plan = plans.find((candidate) => candidate.id === ref) ?? plans.find((candidate) => candidate.name.toLowerCase() === ref.toLowerCase());
  if (!plan) throw new AppError('NotFound', `No plan "${ref}" of this product.`);
  return plan;
}
async function planOf(ctx: Parameters<typeof listPlans>[0], opts: Record<string, string | boolean | undefined>) {
  const inTenant = operatorIn(ctx, (await getTenantByPrefix(ctx, need(opts, 'tenant'))).id);
  const product = await getProductByName(inTenant, need(opts, 'product'));
  return { inTenant, plan: await findPlan(inTenant, product.id, need(opts, 'plan')) };
}
const shownPlan = ({ product, ...plan }: PlanWithCount & { product: { name: string } }) => ({ ...plan, productName: product.name });

/** Who the activity log names for changes made here: the system actor, given a tenant once one is named. */
/** Standard input as text (a secret piped in), at most 64 kB. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > 65_536) throw new AppError('InvalidRequest', 'standard input is longer than a token');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export const CLI_ACTOR = systemActor(null, 'system (cli)');

export const commands: Record<string, CliCommand> = {
  'tenant:create': {
    usage: 'tenant:create --name <name> --prefix <WORD> [--subscription-ends <ISO date>]',
    options: ['--name <name>', '--prefix <WORD>', '--subscription-ends <date>'],
    async run(ctx, opts) {
      const tenant = await createTenant(ctx, { name: need(opts, 'name'), keyPrefix: need(opts, 'prefix'), subscriptionEndsAt: str(opts, 'subscriptionEnds') });
      return { tenant };
    },
  },
  'product:create': {
    usage: 'product:create --tenant <PREFIX> --name <name> [--bundle-of <name,name>]',
    options: ['--tenant <PREFIX>', '--name <name>', '--bundle-of <names>'],
    async run(ctx, opts) {
      const tenant = await getTenantByPrefix(ctx, need(opts, 'tenant'));
      const product = await createProduct(operatorIn(ctx, tenant.id), { name: need(opts, 'name'), bundleOf: list(opts.bundleOf) });
      const { bundleMembers, _count, ...rest } = product;
      return { product: { ...rest, bundleOf: bundleMembers.map((member) => member.product.name) } };
    },
  },
  'plan:list': {
    usage: 'plan:list --tenant <PREFIX> [--product <name>] [--archived]   (--archived: archived plans too)',
    options: ['--tenant <PREFIX>', '--product <name>', '--archived'],
    async run(ctx, opts) {
      const inTenant = operatorIn(ctx, (await getTenantByPrefix(ctx, need(opts, 'tenant'))).id);
      const product = str(opts, 'product') ? await getProductByName(inTenant, need(opts, 'product')) : undefined;
      return { plans: (await listPlans(inTenant, { productId: product?.id, includeArchived: opts.archived === true })).map(shownPlan) };
    },
  },
  'plan:create': {
    usage: `plan:create --tenant <PREFIX> --product <name> --name <name> --max-activations N ${PLAN_FLAGS}`,
    options: ['--tenant <PREFIX>', '--product <name>', '--name <name>', '--max-activations <N>', ...PLAN_OPTIONS],
    async run(ctx, opts) {
      const inTenant = operatorIn(ctx, (await getTenantByPrefix(ctx, need(opts, 'tenant'))).id);
      const product = await getProductByName(inTenant, need(opts, 'product'));
      const plan = await createPlan(inTenant, { productId: product.id, name: need(opts, 'name'), maxActivations: int(need(opts, 'maxActivations', 'max-activations'), 'max-activations')!, ...planOptions(opts) });
      return { plan: shownPlan(plan) };
    },
  },
  'plan:update': {
    usage: `plan:update --tenant <PREFIX> --product <name> --plan <name or id> [--name <new name>] [--max-activations N] ${PLAN_FLAGS} [--archive | --unarchive]`,
    options: ['--tenant <PREFIX>', '--product <name>', '--plan <plan>', '--name <name>', '--max-activations <N>', ...PLAN_OPTIONS, '--archive', '--unarchive'],
    async run(ctx, opts) {
      const { inTenant, plan } = await planOf(ctx, opts);
      const archived = opts.archive === true ? true : opts.unarchive === true ? false : undefined;
      const updated = await updatePlan(inTenant, plan.id, { name: str(opts, 'name'), maxActivations: int(opts.maxActivations, 'max-activations'), ...planOptions(opts), archived });
      return { plan: shownPlan(updated) };
    },
  },
  'plan:delete': {
    usage: 'plan:delete --tenant <PREFIX> --product <name> --plan <name or id>   (a plan licenses were sold from: archive it with plan:update --archive)',
    options: ['--tenant <PREFIX>', '--product <name>', '--plan <plan>'],
    async run(ctx, opts) {
      const { inTenant, plan } = await planOf(ctx, opts);
      return { deletedPlanId: await deletePlan(inTenant, plan.id) };
    },
  },
  'license:create': {
    usage:
      'license:create --tenant <PREFIX> --product <name> (--max-activations N | --plan <name or id>) [--expires-at ISO] [--trial] [--node-locked] [--features a,b] [--custom k=v,...] [--min-version V] [--max-version V] [--offline-grace-days N] [--grace-days N] [--maintenance-expires-at ISO] [--customer-email E] [--floating-seats N]',
    options: [
      '--tenant <PREFIX>', '--product <name>', '--plan <plan>', '--max-activations <N>', '--expires-at <ISO>', '--trial', '--node-locked', '--features <list>',
      '--custom <pairs>', '--min-version <V>', '--max-version <V>', '--offline-grace-days <N>', '--grace-days <N>', '--maintenance-expires-at <ISO>',
      '--customer-email <email>', '--floating-seats <N>',
    ],
    async run(ctx, opts) {
      const tenant = await getTenantByPrefix(ctx, need(opts, 'tenant'));
      const product = await getProductByName(operatorIn(ctx, tenant.id), need(opts, 'product'));
      const plan = str(opts, 'plan') ? await findPlan(operatorIn(ctx, tenant.id), product.id, need(opts, 'plan')) : undefined;
      // With a plan, an option given overrides the plan's value; one not given leaves it.
      const { key, license } = await createLicense(operatorIn(ctx, tenant.id), {
        productId: product.id,
        planId: plan?.id,
        maxActivations: plan ? int(opts.maxActivations, 'max-activations') : int(need(opts, 'maxActivations', 'max-activations'), 'max-activations')!,
        expiresAt: str(opts, 'expiresAt'),
        ...sharedAttributeOptions(opts),
        maintenanceExpiresAt: str(opts, 'maintenanceExpiresAt'),
        customerEmail: str(opts, 'customerEmail'),
        floatingSeats: int(opts.floatingSeats, 'floating-seats'),
      });
      const { product: _product, ...shown } = license;
      return { key, license: { ...shown, productName: product.name } };
    },
  },
  'license:revoke': {
    usage: 'license:revoke --key <license key>',
    options: ['--key <key>'],
    async run(ctx, opts) {
      const found = await findByKey(ctx, need(opts, 'key'));
      const { product: _product, ...license } = await revokeLicense(operatorIn(ctx, found.tenantId), found.id);
      return { license };
    },
  },
  'license:reissue': {
    usage: 'license:reissue --key <license key> [--overlap-hours N]   (a new key for the same license, shown this once; the old key stops at once, or after N hours, at most 168)',
    options: ['--key <key>', '--overlap-hours <N>'],
    async run(ctx, opts) {
      const found = await findByKey(ctx, need(opts, 'key'));
      const { key, previousKeyValidUntil, license: { product: _product, ...license } } = await reissueLicenseKey(operatorIn(ctx, found.tenantId), {
        id: found.id,
        overlapHours: int(opts.overlapHours, 'overlap-hours'),
      });
      return { key, previousKeyValidUntil, license };
    },
  },
  'license:export': {
    usage:
      'license:export --tenant <PREFIX> --out <file.csv> [--product <name>] [--status active|expired|suspended|revoked] [--expiring-within-days N] [--search <text>]   (streamed, newest first; never the keys)',
    options: ['--tenant <PREFIX>', '--out <file>', '--product <name>', '--status <status>', '--expiring-within-days <N>', '--search <text>'],
    async run(ctx, opts) {
      const tenant = await getTenantByPrefix(ctx, need(opts, 'tenant'));
      const inTenant = operatorIn(ctx, tenant.id);
      const product = str(opts, 'product') ? await getProductByName(inTenant, need(opts, 'product')) : undefined;
      const filter = { productId: product?.id, status: str(opts, 'status') as LicenseFilter['status'], expiringWithinDays: int(opts.expiringWithinDays, 'expiring-within-days'), search: str(opts, 'search') };
      const out = need(opts, 'out');
      let licenses = 0;
      // The first chunk checks the filter: a bad one is refused before --out is opened (and an existing file emptied).
      const chunks = exportLicensesCsv(inTenant, filter)[Symbol.asyncIterator]();
      const first = await chunks.next();
      const text = async function* () {
        for (let step = first; !step.done; step = await chunks.next()) {
          licenses += step.value.rows;
          yield step.value.csv;
        }
      };
      await pipeline(Readable.from(text()), createWriteStream(out));
      return { tenant: tenant.keyPrefix, file: out, licenses };
    },
  },
  'license:import': {
    usage:
      'license:import <file.csv> --tenant <PREFIX> [--dry-run] [--out <keys.csv>]   (docs/integrate/management-api.md "Importing licenses from CSV"; the generated keys go to --out (mode 0600), else are printed: once)',
    options: ['--tenant <PREFIX>', '--dry-run', '--out <file>'],
    argument: '<file>',
    exitCode: (result: { report: { errorCount: number }; job?: { failed: number } }) => (result.report.errorCount > 0 || (result.job?.failed ?? 0) > 0 ? 1 : 0),
    async run(ctx, opts) {
      const tenant = await getTenantByPrefix(ctx, need(opts, 'tenant'));
      const inTenant = operatorIn(ctx, tenant.id);
      const file = need(opts, 'file');
      if (statSync(file).size > MAX_IMPORT_BYTES) throw new AppError('InvalidRequest', `${file} is larger than ${MAX_IMPORT_BYTES} bytes, the most an import takes: split it`);
      const csv = readFileSync(file, 'utf8');
      const report = await checkLicenseImport(inTenant, csv);
      if (opts.dryRun || report.errorCount > 0) return { tenant: tenant.keyPrefix, dryRun: Boolean(opts.dryRun), report };
      // The keys file is created (new, 0600) before anything is imported: the keys are taken once, and a file that
      // cannot be written, or one that exists with wider permissions, must not be found out after that.
      const out = str(opts, 'out');
      let fd: number | undefined;
      try {
        fd = out ? openSync(out, 'wx', 0o600) : undefined;
      } catch (error) {
        throw new AppError('InvalidRequest', `--out ${out}: ${(error as NodeJS.ErrnoException).code === 'EEXIST' ? 'exists already (the keys go to a new file only)' : (error as Error).message}`);
      }
      try {
        const { job } = await startLicenseImport(inTenant, csv);
        // Run here (or, through the channel, in the server), as a worker would; another worker may hold it: wait.
        await runBulkJobUntilFinished({ db: ctx.db, now: ctx.now }, job.id);
        const done = (await getLicenseImportJob(inTenant, job.id))!;
        const imported = { tenant: tenant.keyPrefix, report, job: { id: job.id, total: done.total, created: done.created, skipped: done.skipped, failed: done.failed }, failures: await licenseImportFailures(inTenant, done, 100) };
        if (done.keysToDownload === 0) return imported;
        const { csv: keys, generated } = await takeLicenseImportKeys(inTenant, job.id);
        if (fd === undefined) return { ...imported, keys: generated };
        writeFileSync(fd, keys);
        return { ...imported, keysFile: out };
      } finally {
        if (fd !== undefined) {
          closeSync(fd);
          if (statSync(out!).size === 0) rmSync(out!); // no keys: no empty file left behind
        }
      }
    },
  },
  'import:keygen': {
    usage:
      'import:keygen --tenant <PREFIX> (--dir <pages/> | --url <https://api.keygen.sh/v1/accounts/ID> [--token-stdin] [--license-entitlements]) [--dry-run]   (docs/guide/migrating.md; the token from KEYGEN_TOKEN or, with --token-stdin, standard input)',
    options: ['--tenant <PREFIX>', '--dir <path>', '--url <url>', '--token-stdin', '--license-entitlements', '--dry-run'],
    exitCode: (result: { report: { problemCount: number } }) => (result.report.problemCount > 0 ? 1 : 0),
    async secretInput(opts) {
      if (typeof opts.url !== 'string') return opts;
      const token = opts.tokenStdin ? (await readStdin()).trim() : process.env.KEYGEN_TOKEN?.trim();
      if (!token) throw new AppError('InvalidRequest', opts.tokenStdin ? 'standard input held no token' : 'set KEYGEN_TOKEN to an admin token of the Keygen account (or pass --token-stdin)');
      return { ...opts, keygenToken: token };
    },
    async run(ctx, opts) {
      const tenant = await getTenantByPrefix(ctx, need(opts, 'tenant'));
      const inTenant = operatorIn(ctx, tenant.id);
      const dir = str(opts, 'dir');
      const url = str(opts, 'url');
      if (Boolean(dir) === Boolean(url)) throw new AppError('InvalidRequest', 'give either --dir (saved pages) or --url (the Keygen API)');
      const progress = (line: string) => process.stderr.write(`${line}\n`);
      const account = dir
        ? await readDirectory(dir)
        : await readApi({ url: url!, token: String(opts.keygenToken ?? ''), licenseEntitlements: opts.licenseEntitlements === true, onPage: (pages) => pages % 50 === 0 && progress(`read ${pages} pages`) });
      const report = await importKeygenAccount(inTenant, account, {
        dryRun: opts.dryRun === true,
        onProgress: ({ phase, done, total }) => done > 0 && done % 1000 === 0 && progress(`${phase}: ${done} of ${total}`),
      });
      return { tenant: tenant.keyPrefix, report };
    },
  },
  'license:show': {
    usage: 'license:show --key <license key>   (with its newest 100 activations and activationCount)',
    options: ['--key <key>'],
    async run(ctx, opts) {
      return { license: await showLicenseByKey(ctx, need(opts, 'key')) };
    },
  },
  'user:create': {
    usage: 'user:create --tenant <PREFIX> --email <email> --password <password> --role CompanyAdmin|ReadOnly [--name <name>]',
    options: ['--tenant <PREFIX>', '--email <email>', '--password <password>', '--role <role>', '--name <name>'],
    async run(ctx, opts) {
      const tenant = await getTenantByPrefix(ctx, need(opts, 'tenant'));
      const role = need(opts, 'role');
      if (role !== 'CompanyAdmin' && role !== 'ReadOnly') throw new AppError('InvalidRequest', '--role must be CompanyAdmin or ReadOnly');
      const user = await createUser(operatorIn(ctx, tenant.id), { email: need(opts, 'email'), password: need(opts, 'password'), role, name: str(opts, 'name') });
      const { mfaSecretEncrypted: _secret, ...shown } = user;
      return { user: shown };
    },
  },
  'user:reset-password': {
    usage: 'user:reset-password --email <email> [--password <new password>]   (ends their sessions and lifts a lock; without --password one is generated and shown once)',
    options: ['--email <email>', '--password <password>'],
    async run(ctx, opts) {
      return resetPassword(ctx, need(opts, 'email'), str(opts, 'password'));
    },
  },
  'user:unlock': {
    usage: 'user:unlock --email <email>   (lifts the lock after too many failed sign-ins)',
    options: ['--email <email>'],
    async run(ctx, opts) {
      return unlockAccount(ctx, need(opts, 'email'));
    },
  },
  'user:reset-mfa': {
    usage: 'user:reset-mfa --email <email>   (turns two-factor authentication off: lost authenticator and backup codes)',
    options: ['--email <email>'],
    async run(ctx, opts) {
      return resetMfa(ctx, need(opts, 'email'));
    },
  },
  'user:reactivate': {
    usage: 'user:reactivate --email <email>   (a deactivated user can sign in again)',
    options: ['--email <email>'],
    async run(ctx, opts) {
      return reactivateUserByEmail(ctx, need(opts, 'email'));
    },
  },
  'license:quota': {
    usage: 'license:quota --key <license key> --event <name> (--period day|month|year|lifetime --limit N | --remove)',
    options: ['--key <key>', '--event <name>', '--period <period>', '--limit <N>', '--remove'],
    async run(ctx, opts) {
      const license = await findByKey(ctx, need(opts, 'key'));
      const event = need(opts, 'event');
      if (opts.remove === true) return removeMeterQuota(operatorIn(ctx, license.tenantId), license.id, event);
      const period = need(opts, 'period') as MeterPeriod;
      return { quota: await setMeterQuota(operatorIn(ctx, license.tenantId), license.id, { event, period, limit: int(need(opts, 'limit'), 'limit')! }) };
    },
  },
  'license:sessions': {
    usage: 'license:sessions --key <license key>',
    options: ['--key <key>'],
    async run(ctx, opts) {
      const license = await findByKey(ctx, need(opts, 'key'));
      return listActiveFloatingSessions(operatorIn(ctx, license.tenantId), license.id);
    },
  },
  'license:usage': {
    usage: 'license:usage --key <license key> [--event <name>]',
    options: ['--key <key>', '--event <name>'],
    async run(ctx, opts) {
      const license = await findByKey(ctx, need(opts, 'key'));
      const event = str(opts, 'event');
      const byPeriod = await Promise.all(METER_PERIODS.map((period) => usageTotals(operatorIn(ctx, license.tenantId), license.id, { event, period })));
      // One row per event: its totals in the current day, month and year (UTC) and over the lifetime.
      const rows = new Map<string, { event: string; quota: unknown } & Record<MeterPeriod, number>>();
      for (const { period, totals } of byPeriod) {
        for (const total of totals) {
          // A quota's terms: its license and event are the row's already.
          const quota = total.quota && { period: total.quota.period, limit: total.quota.limit };
          const row = rows.get(total.event) ?? { event: total.event, quota, day: 0, month: 0, year: 0, lifetime: 0 };
          row[period] = total.total;
          rows.set(total.event, row);
        }
      }
      const periods = Object.fromEntries(byPeriod.map(({ period, periodStart, periodEnd }) => [period, { start: periodStart, end: periodEnd }]));
      return { usage: [...rows.values()], periods };
    },
  },
  'signing-key:rotate': {
    usage: 'signing-key:rotate [--immediately]   (the new key is published now and signs 5 minutes later, the JWKS cache lifetime; --immediately: signs at once, for a compromised key)',
    options: ['--immediately'],
    async run(ctx, flags) {
      return rotateSigningKey(ctx, { immediately: flags.immediately === true });
    },
  },
  'audit:checkpoints': {
    usage: 'audit:checkpoints --tenant <PREFIX> [--all] [--out <file.json>]   (the newest signed checkpoint of the activity log — every one with --all — to keep apart from the database)',
    options: ['--tenant <PREFIX>', '--all', '--out <file>'],
    async run(ctx, opts) {
      const tenant = await getTenantByPrefix(ctx, need(opts, 'tenant'));
      const signer = await loadTokenSigner(ctx, loadConfig().publicUrl);
      const file = await checkpointFile(operatorIn(ctx, tenant.id), signer, { all: opts.all === true });
      const out = str(opts, 'out');
      if (out) writeFileSync(out, JSON.stringify(file, null, 2));
      return out ? { tenant: tenant.keyPrefix, file: out, checkpoints: file.checkpoints.length, latestCheckpointSeq: file.checkpoints.at(-1)?.seq ?? null } : file;
    },
  },
  'audit:check': {
    usage: 'audit:check --tenant <PREFIX> [--checkpoints <file>]   (verifies the live activity log under the server secret, against the checkpoints you kept; exit 1 when broken)',
    options: ['--tenant <PREFIX>', '--checkpoints <file>'],
    exitCode: (result: { valid: boolean }) => (result.valid ? 0 : 1),
    async run(ctx, opts) {
      const tenant = await getTenantByPrefix(ctx, need(opts, 'tenant'));
      const file = str(opts, 'checkpoints');
      const kept = file ? findCheckpointTokens(readFileSync(file, 'utf8'), 500) : [];
      if (file && kept.length === 0) throw new AppError('InvalidRequest', `${file} holds no checkpoint (expected checkpoint files, audit.checkpoint webhook payloads or log lines)`);
      return { tenant: tenant.keyPrefix, ...(await verifyLog(ctx, tenant.id, kept)) };
    },
  },
  'audit:export': {
    usage: 'audit:export --tenant <PREFIX> --out <file.json>   (the activity log with signed checkpoints, for offline verification)',
    options: ['--tenant <PREFIX>', '--out <file>'],
    async run(ctx, opts) {
      const tenant = await getTenantByPrefix(ctx, need(opts, 'tenant'));
      const signer = await loadTokenSigner(ctx, loadConfig().publicUrl);
      await checkAuditIntegrity(ctx, tenant.id, signer); // anchors the head first
      const doc = await exportAuditLog(ctx, tenant.id);
      const out = need(opts, 'out');
      writeFileSync(out, JSON.stringify(doc));
      return { tenant: tenant.keyPrefix, file: out, entries: doc.entries.length, checkpoints: doc.checkpoints.length, latestCheckpointSeq: doc.checkpoints.at(-1)?.seq ?? null };
    },
  },
  'audit:verify': {
    usage: 'audit:verify --file <export.json> [--checkpoints <file>] [--jwks <jwks.json>] [--with-secret]   (offline: public keys only unless --with-secret)',
    options: ['--file <file>', '--checkpoints <file>', '--jwks <file>', '--with-secret'],
    offline: true,
    exitCode: (result: { valid: boolean }) => (result.valid ? 0 : 1),
    async run(ctx, opts) {
      const doc = JSON.parse(readFileSync(need(opts, 'file'), 'utf8')) as AuditExport;
      const jwksFile = str(opts, 'jwks');
      const jwks = jwksFile ? (JSON.parse(readFileSync(jwksFile, 'utf8')) as { keys: JWK[] }) : undefined;
      const keptFile = str(opts, 'checkpoints');
      const kept = keptFile ? findCheckpointTokens(readFileSync(keptFile, 'utf8'), 500) : undefined;
      if (keptFile && !kept?.length) throw new AppError('InvalidRequest', `${keptFile} holds no checkpoint (expected checkpoint files, audit.checkpoint webhook payloads or log lines)`);
      const result = await verifyAuditExport(doc, { jwks, key: opts.withSecret ? ctx.secrets.auditChainKey : null, kept });
      return { tenantId: doc.tenantId, keys: jwks ? 'from --jwks' : 'embedded in the export (pass --jwks with a copy you trust)', ...result };
    },
  },
  ...jobCommands,
  ...releaseCommands,
};
