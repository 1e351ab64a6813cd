import { createHash, randomUUID } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import { CsvError } from 'csv-parse';
import { canonicalLicenseKey, isKeyforgeKey, LICENSE_KEY_FORMAT } from '../../crypto/license-key.js';
import { AppError } from '../../domain/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import { requireAdmin, requireMember } from '../auth/actor.js';
import type { ServiceContext } from '../context.js';
import { isUuid } from '../listing.js';
import { parseInput } from '../validation.js';
import { EXPORT_COLUMNS, FORMULA_START } from './export.js';
import { createLicense, IMPORTED_KEY_REFUSED, LicenseAttributesSchema, type LicenseInput } from './management.js';
import { canonicalKeyDigest } from './license-record.js';
import { planLicenseValues } from '../plans.js';
import { LicenseAttributesObject } from './attributes.js';

// Importing licenses from CSV (docs/integrate/management-api.md "Importing licenses from CSV"): a dry run that reports every bad cell by line
// and column, then a bulk job (action "import", services/licenses/bulk.ts runs it with its lease) that creates each
// row's license with createLicense, so an imported license obeys the rules of, and is audited and emitted like,
// one created by hand. A row's idempotency key is the file's SHA-256 and its line (license_import_records, written
// in the creating transaction): a re-run of the same file, or a job resumed after its worker died, creates nothing
// twice. Generated keys are kept encrypted until the job's keys are downloaded, once.

/** The largest file accepted (UTF-8 bytes): the management API's request limit is 256 KiB. */
export const MAX_IMPORT_BYTES = 200_000;
/** Rows (licenses) of one file at most; a larger migration is split into several files. */
export const MAX_IMPORT_ROWS = 2_000;
/** Errors a report lists (every one is counted in errorCount). */
export const MAX_REPORTED_ERRORS = 1_000;
export const IMPORT_ACTION = 'import';

/** CSV columns and the license attribute each sets ('product', 'plan', 'key' and 'notes' are not attributes). */
const COLUMN_ATTRIBUTES = {
  product: 'productId',
  plan: 'planId',
  key: 'key',
  customer_email: 'customerEmail',
  max_activations: 'maxActivations',
  seats: 'maxActivations',
  expires_at: 'expiresAt',
  is_trial: 'isTrial',
  node_locked: 'nodeLocked',
  floating_seats: 'floatingSeats',
  features: 'features',
  custom_fields: 'customFields',
  min_version: 'minVersion',
  max_version: 'maxVersion',
  maintenance_expires_at: 'maintenanceExpiresAt',
  offline_grace_days: 'offlineGraceDays',
  grace_period_days: 'gracePeriodDays',
  notes: 'notes',
} as const;
type Column = keyof typeof COLUMN_ATTRIBUTES;
export const IMPORT_COLUMNS = Object.keys(COLUMN_ATTRIBUTES) as Column[];
/** Columns of the export (services/licenses/export.ts) that an import cannot set: ignored, so an export re-imports. */
const IGNORED_COLUMNS = new Set<string>(EXPORT_COLUMNS.filter((column) => !(column in COLUMN_ATTRIBUTES)));
/** `custom.<name>`: one custom field per column (the other service's metadata). */
const CUSTOM_COLUMN = /^custom[.:](.+)$/;
const MAX_NOTES = 2_000;

export interface ImportError {
  line: number;
  /** The column as the file names it; null for the whole row or file. */
  column: string | null;
  message: string;
}

export interface ImportReport {
  /** SHA-256 of the file, hex: with a line, a row's idempotency key. */
  fileDigest: string;
  rows: number;
  /** Rows without an error (including those already imported). */
  valid: number;
  /** Valid rows imported before from this same file (skipped by an import). */
  alreadyImported: number;
  errorCount: number;
  /** The first MAX_REPORTED_ERRORS errors, in line order. */
  errors: ImportError[];
}

/** A valid row as the job stores it (never the key: that is sealed apart). */
interface ImportedRow {
  line: number;
  productId: string;
  /** The plan the row's license is created from: its values copied, the row's own cells overriding them. */
  planId?: string;
  attributes: LicenseInput;
  notes: string | null;
  key: string | null;
  alreadyImported: boolean;
}

/** A provided key that cannot be used (management.ts KEY_UNUSABLE), as a cell's error. */
const KEY_UNUSABLE_CELL = 'cannot be used; leave it empty to generate a new key';

/** What each cell becomes: a value for the attributes, or an error message. */
type Cell = { value: unknown } | { error: string };
const ok = (value: unknown): Cell => ({ value });
const bad = (error: string): Cell => ({ error });

const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;
const TRUE = new Set(['true', 'yes', 'y', '1']);
const FALSE = new Set(['false', 'no', 'n', '0']);

/** The export writes a text cell a spreadsheet would run as a formula with a leading `'`: read back without it. */
const unneutralised = (text: string) => (text.startsWith("'") && FORMULA_START.test(text.slice(1)) ? text.slice(1) : text);

function wholeNumber(text: string): Cell {
  return /^\d{1,9}$/.test(text) ? ok(Number(text)) : bad('must be a whole number');
}

/** A date cell: ISO 8601, a time without a zone read as UTC. */
export function date(text: string): Cell {
  if (!ISO_DATE.test(text)) return bad('must be an ISO 8601 date, such as 2027-01-31 or 2027-01-31T12:00:00Z');
  // A time without a zone is UTC, as a date alone is.
  const withZone = /[T ]\d{2}:\d{2}/i.test(text) && !/(Z|[+-]\d{2}:?\d{2})$/i.test(text) ? `${text}Z` : text;
  // Date.parse rolls 2027-02-30 over to March: the day must exist in its month.
  const [year, month, day] = text.slice(0, 10).split('-').map(Number);
  const calendar = new Date(Date.UTC(year, month - 1, day));
  const real = calendar.getUTCMonth() === month - 1 && calendar.getUTCDate() === day && !Number.isNaN(Date.parse(withZone.replace(' ', 'T')));
  return real ? ok(withZone.replace(' ', 'T')) : bad('is not a real date');
}

/** A list cell: a JSON array of strings, or items separated by ; or ,. */
export function list(text: string): Cell {
  if (text.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(text);
      return Array.isArray(parsed) && parsed.every((item) => typeof item === 'string') ? ok(parsed) : bad('must be a JSON array of strings or a list separated by ; or ,');
    } catch {
      return bad('is not valid JSON');
    }
  }
  return ok(text.split(/[;,]/).map((item) => item.trim()).filter(Boolean));
}

function jsonObject(text: string): Cell {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? ok(parsed) : bad('must be a JSON object such as {"plan":"pro"}');
  } catch {
    return bad('must be a JSON object such as {"plan":"pro"}');
  }
}

/** A cell's value for its column (empty: not set), or why it is wrong. Products and keys are resolved later. */
function readCell(column: Column, raw: string): Cell {
  const text = raw.trim();
  if (text === '') return ok(undefined);
  switch (column) {
    case 'max_activations':
    case 'seats':
    case 'floating_seats':
    case 'offline_grace_days':
    case 'grace_period_days':
      return wholeNumber(text);
    case 'is_trial':
    case 'node_locked':
      return TRUE.has(text.toLowerCase()) ? ok(true) : FALSE.has(text.toLowerCase()) ? ok(false) : bad('must be true or false');
    case 'expires_at':
    case 'maintenance_expires_at':
      return date(text);
    case 'features':
      return list(unneutralised(text));
    case 'custom_fields':
      return jsonObject(text);
    case 'notes':
      return text.length > MAX_NOTES ? bad(`must be at most ${MAX_NOTES} characters`) : ok(unneutralised(text));
    case 'key':
      // Exactly as written (trimmed): an imported key may start with = + - @ or ' (no export writes keys to neutralise).
      return ok(text);
    default:
      return ok(unneutralised(text));
  }
}

interface Header {
  /** Per cell index: a known column, a custom field's name, or null (ignored). */
  cells: ({ column: Column } | { custom: string } | null)[];
  /** The file's name of each attribute's column, for errors about that attribute. */
  columnOf: Map<string, string>;
}

/** A header cell's column name (lower case, spaces and dashes as `_`) and, for `custom.<name>`, the custom field. */
export function headerName(raw: string): { name: string; custom: string | null } {
  return { name: raw.trim().toLowerCase().replace(/[\s-]+/g, '_'), custom: CUSTOM_COLUMN.exec(raw.trim())?.[1] ?? null };
}

function readHeader(names: string[], errors: ImportError[]): Header | null {
  const header: Header = { cells: [], columnOf: new Map() };
  const seen = new Set<string>();
  for (const raw of names) {
    const { name, custom } = headerName(raw);
    if (name !== '' && seen.has(name)) errors.push({ line: 1, column: raw, message: 'appears twice in the header' });
    seen.add(name);
    if (custom) {
      header.cells.push({ custom });
    } else if (name in COLUMN_ATTRIBUTES) {
      const column = name as Column;
      const attribute = COLUMN_ATTRIBUTES[column];
      if (header.columnOf.has(attribute)) errors.push({ line: 1, column: raw, message: `sets the same field as ${header.columnOf.get(attribute)}` });
      header.columnOf.set(attribute, raw);
      header.cells.push({ column });
    } else if (IGNORED_COLUMNS.has(name)) {
      header.cells.push(null);
    } else {
      errors.push({ line: 1, column: raw, message: `is not a column an import knows (${IMPORT_COLUMNS.join(', ')}, custom.<name>)` });
      header.cells.push(null);
    }
  }
  if (!header.columnOf.has('productId')) errors.push({ line: 1, column: null, message: 'the header has no product column' });
  // With a plan column, the seats come from each row's plan unless the row gives them.
  if (!header.columnOf.has('maxActivations') && !header.columnOf.has('planId')) errors.push({ line: 1, column: null, message: 'the header has no max_activations (or seats) column, nor a plan column' });
  return errors.length ? null : header;
}

/** The records of a CSV text with the line each starts on; a syntax error (an unclosed quote) is the last error. */
function readRecords(csv: string, errors: ImportError[]): { line: number; cells: string[] }[] {
  try {
    const records = parse(csv, { info: true, bom: true, relax_column_count: true, skip_empty_lines: true, record_delimiter: ['\r\n', '\n', '\r'], max_record_size: MAX_IMPORT_BYTES }) as unknown as {
      record: string[];
      info: { bytes: number };
    }[];
    // Lines are counted here from each record's bytes: csv-parse's own count takes a CRLF inside quotes for two.
    const bytes = Buffer.from(csv, 'utf8');
    const breaks = (text: string) => text.match(/\r\n|\r|\n/g)?.length ?? 0;
    let offset = 0;
    let line = 1;
    return records.map(({ record, info }) => {
      const text = bytes.subarray(offset, info.bytes).toString('utf8');
      const blank = /^[\r\n]*/.exec(text)![0];
      const start = line + breaks(blank);
      line = start + breaks(text.slice(blank.length));
      offset = info.bytes;
      return { line: start, cells: record };
    });
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    errors.push({ line: (error as CsvError & { lines?: number }).lines ?? 1, column: null, message: `the file is not valid CSV: ${error.message}` });
    return [];
  }
}

interface Checked {
  report: ImportReport;
  rows: ImportedRow[];
}

/** Checks a whole file for the caller's company: every error of every row, and the valid rows. */
async function checkImport(ctx: ServiceContext, tenantId: string, csv: string): Promise<Checked> {
  if (typeof csv !== 'string') throw new AppError('InvalidRequest', 'Invalid input: csv: must be the text of a CSV file', { fields: { csv: 'must be the text of a CSV file' } });
  const size = Buffer.byteLength(csv, 'utf8');
  if (size > MAX_IMPORT_BYTES) {
    const message = `is ${size} bytes; an import takes at most ${MAX_IMPORT_BYTES} bytes (split the file)`;
    throw new AppError('InvalidRequest', `Invalid input: csv: ${message}`, { fields: { csv: message } });
  }
  const fileDigest = createHash('sha256').update(csv, 'utf8').digest('hex');
  const errors: ImportError[] = [];
  const records = readRecords(csv, errors);
  const [first, ...body] = records;
  if (!first && errors.length === 0) errors.push({ line: 1, column: null, message: 'the file is empty: it needs a header line and a row per license' });
  const header = first ? readHeader(first.cells, errors) : null;
  const report = (rows: ImportedRow[]): Checked => {
    errors.sort((a, b) => a.line - b.line);
    const invalidLines = new Set(errors.map((error) => error.line));
    return {
      report: {
        fileDigest, rows: body.length, valid: body.filter((record) => !invalidLines.has(record.line)).length, alreadyImported: rows.filter((row) => row.alreadyImported).length,
        errorCount: errors.length, errors: errors.slice(0, MAX_REPORTED_ERRORS),
      },
      rows,
    };
  };
  if (!header) return report([]);
  if (body.length > MAX_IMPORT_ROWS) {
    errors.push({ line: body[MAX_IMPORT_ROWS].line, column: null, message: `the file has ${body.length} rows; an import takes at most ${MAX_IMPORT_ROWS} (split the file)` });
    return report([]);
  }
  if (body.length === 0) errors.push({ line: 2, column: null, message: 'the file has a header but no rows' });

  const tenant = await ctx.db.prisma.tenant.findUniqueOrThrow({ where: { id: tenantId }, select: { keyPrefix: true } });
  const products = await ctx.db.prisma.product.findMany({ where: { tenantId }, select: { id: true, name: true, allowImportedKeys: true } });
  const takesImportedKeys = new Set(products.filter((product) => product.allowImportedKeys).map((product) => product.id));
  const productByName = new Map(products.map((product) => [product.name.toLowerCase(), product.id]));
  const productIds = new Set(products.map((product) => product.id));
  const plans = header.columnOf.has('planId')
    ? await ctx.db.prisma.plan.findMany({ where: { tenantId } })
    : [];
  const imported = new Set(
    (await ctx.db.prisma.licenseImportRecord.findMany({ where: { tenantId, fileDigest }, select: { line: true } })).map((record) => record.line),
  );

  const candidates: (ImportedRow & { digest: string | null })[] = [];
  const keyLines = new Map<string, number>();
  for (const record of body) {
    const rowErrors: ImportError[] = [];
    const fail = (column: string | null, message: string) => rowErrors.push({ line: record.line, column, message });
    if (record.cells.length !== header.cells.length) fail(null, `has ${record.cells.length} cells; the header has ${header.cells.length}`);
    const values: Record<string, unknown> = {};
    const customFields: Record<string, string> = {};
    header.cells.forEach((cell, index) => {
      const raw = record.cells[index] ?? '';
      if (!cell) return;
      const columnName = first.cells[index];
      if ('custom' in cell) {
        if (raw.trim() !== '') customFields[cell.custom] = unneutralised(raw.trim());
        return;
      }
      const read = readCell(cell.column, raw);
      if ('error' in read) fail(columnName, read.error);
      else values[COLUMN_ATTRIBUTES[cell.column]] = read.value;
    });
    const { productId: productRef, planId: planRef, key: keyText, notes, ...attributes } = values as Record<string, unknown> & LicenseInput;
    // custom.<name> columns join the custom_fields object.
    if (Object.keys(customFields).length) attributes.customFields = { ...((attributes.customFields as object | undefined) ?? {}), ...customFields };

    let productId: string | undefined;
    if (typeof productRef !== 'string') fail(header.columnOf.get('productId')!, 'is required (a product name or id)');
    else {
      productId = productByName.get(productRef.toLowerCase()) ?? (isUuid(productRef) && productIds.has(productRef) ? productRef : undefined);
      if (!productId) fail(header.columnOf.get('productId')!, `no product named "${productRef}"`);
    }
    // A plan by id, or by name among the row's product's plans (case-insensitive); not archived.
    let plan: (typeof plans)[number] | undefined;
    if (typeof planRef === 'string') {
      const planColumn = header.columnOf.get('planId')!;
      plan = plans.find((candidate) => candidate.id === planRef) ?? plans.find((candidate) => candidate.productId === productId && candidate.name.toLowerCase() === planRef.toLowerCase());
      if (!plan) fail(planColumn, productId ? `no plan named "${planRef}" of this product` : `no plan "${planRef}"`);
      else if (productId && plan.productId !== productId) fail(planColumn, `is a plan of another product`);
      else if (plan.archivedAt) fail(planColumn, `the plan "${plan.name}" is archived`);
    }
    const seatsColumn = header.columnOf.get('maxActivations') ?? header.columnOf.get('planId')!;
    if (attributes.maxActivations === undefined && !plan && !rowErrors.some((error) => error.column === seatsColumn)) {
      fail(seatsColumn, header.columnOf.has('maxActivations') ? 'is required (the seats: a whole number from 1), or a plan' : 'is required without a max_activations (or seats) column');
    }
    // The attributes obey exactly the rules of createLicense (seats stood in for when missing: reported above); a
    // plan's values under the row's own, as createLicense merges them (its dates as of now, the job's are later).
    const given = Object.fromEntries(Object.entries(attributes).filter(([, value]) => value !== undefined));
    let parsed: LicenseInput = attributes;
    try {
      const merged = plan ? { ...planLicenseValues(plan, ctx.now), ...given } : { ...attributes, maxActivations: attributes.maxActivations ?? 1 };
      parseInput(LicenseAttributesSchema, merged);
      parsed = parseInput(LicenseAttributesObject.partial(), attributes) as LicenseInput;
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      for (const [field, message] of Object.entries(error.details.fields ?? {})) {
        const attribute = field.split('.')[0];
        const column = header.columnOf.get(attribute) ?? (attribute === 'customFields' ? 'custom fields' : null);
        if (!rowErrors.some((known) => known.column === column)) fail(column, message);
      }
    }
    let key: string | null = null;
    let digest: string | null = null;
    if (typeof keyText === 'string') {
      // A product with allowImportedKeys takes a key of any format (canonicalLicenseKey); another product only a
      // Keyforge key with the company's prefix. The message never repeats the key.
      key = canonicalLicenseKey(keyText);
      const keyColumn = header.columnOf.get('key')!;
      const anyFormat = productId !== undefined && takesImportedKeys.has(productId);
      const keyforgeOnly = `must be a license key like ${tenant.keyPrefix}-XXXX-XXXX-XXXX-XXXX, or empty to generate one`;
      if (!key) fail(keyColumn, anyFormat ? `${LICENSE_KEY_FORMAT}; or leave it empty to generate one` : keyforgeOnly);
      else if (!isKeyforgeKey(key) && !anyFormat) fail(keyColumn, productId ? IMPORTED_KEY_REFUSED : keyforgeOnly);
      else if (isKeyforgeKey(key) && !anyFormat && !key.startsWith(`${tenant.keyPrefix}-`)) fail(keyColumn, `must start with your key prefix ${tenant.keyPrefix}-`);
      else {
        digest = canonicalKeyDigest(ctx.secrets, key);
        const earlier = keyLines.get(digest);
        if (earlier) fail(keyColumn, `is the same key as line ${earlier}`);
        else keyLines.set(digest, record.line);
      }
    }
    // In the header's order: column by column, as a person reads the row.
    const order = (column: string | null) => (column === null ? -1 : first.cells.indexOf(column));
    errors.push(...rowErrors.sort((a, b) => order(a.column) - order(b.column)));
    if (rowErrors.length === 0) {
      candidates.push({ line: record.line, productId: productId!, ...(plan && { planId: plan.id }), attributes: parsed, notes: (notes as string | undefined) ?? null, key, digest, alreadyImported: imported.has(record.line) });
    }
  }

  // A provided key that any license of the installation has or had (live or retired, this company or another) is
  // reported, in words that do not say which (a row imported before from this file has it: skipped).
  const digests = candidates.filter((row) => row.digest && !row.alreadyImported).map((row) => row.digest!);
  const taken = new Set(digests.length ? (await ctx.db.prisma.licenseKeyDigest.findMany({ where: { keyDigest: { in: digests } }, select: { keyDigest: true } })).map((row) => row.keyDigest) : []);
  const rows: ImportedRow[] = [];
  for (const { digest, ...row } of candidates) {
    if (digest && !row.alreadyImported && taken.has(digest)) errors.push({ line: row.line, column: header.columnOf.get('key')!, message: KEY_UNUSABLE_CELL });
    else rows.push(row);
  }
  return report(rows);
}

/** The dry run (CompanyAdmin): every error of the file by line and column, and how many rows would be imported. */
export async function checkLicenseImport(ctx: ServiceContext, csv: string): Promise<ImportReport> {
  const { tenantId } = requireAdmin(ctx);
  return (await checkImport(ctx, tenantId, csv)).report;
}

/**
 * Queues the import of a file without errors (CompanyAdmin; a file with errors is InvalidRequest: fix it after the
 * dry run) as a bulk job; the caller wakes a worker. Returns the job and the file's report.
 */
export async function startLicenseImport(ctx: ServiceContext, csv: string) {
  const admin = requireAdmin(ctx);
  const { report, rows } = await checkImport(ctx, admin.tenantId, csv);
  if (report.errorCount > 0) {
    const message = `has ${report.errorCount} error${report.errorCount === 1 ? '' : 's'}: check it (the dry run lists each by line and column) and fix them first`;
    throw new AppError('InvalidRequest', `Invalid input: csv: ${message}`, { fields: { csv: message } });
  }
  const id = randomUUID();
  await ctx.db.prisma.$transaction(async (tx) => {
    await tx.bulkJob.create({
      data: {
        id, tenantId: admin.tenantId, action: IMPORT_ACTION, params: { fileDigest: report.fileDigest }, total: rows.length, createdAt: ctx.now, leasedUntil: ctx.now,
        requestedBy: { actor: admin, meta: ctx.meta } as unknown as Prisma.InputJsonObject,
      },
    });
    await tx.licenseImportRow.createMany({
      data: rows.map((row) => ({
        jobId: id, line: row.line, keyGenerated: row.key === null, sealedKey: row.key === null ? null : ctx.secrets.encrypt(row.key),
        input: { productId: row.productId, ...(row.planId && { planId: row.planId }), attributes: row.attributes, notes: row.notes } as Prisma.InputJsonObject,
      })),
    });
  });
  return { job: (await getLicenseImportJob(ctx, id))!, report };
}

/** An import job of the caller's company, with its counts per row status, or null. */
export async function getLicenseImportJob(ctx: ServiceContext, id: string) {
  const tenantId = requireMember(ctx);
  if (!isUuid(id)) return null;
  const job = await ctx.db.prisma.bulkJob.findFirst({ where: { id, tenantId, action: IMPORT_ACTION }, omit: { requestedBy: true, leaseOwner: true, leasedUntil: true } });
  if (!job) return null;
  const counts = await ctx.db.prisma.licenseImportRow.groupBy({ by: ['status'], where: { jobId: id }, _count: true });
  const count = (status: string) => counts.find((row) => row.status === status)?._count ?? 0;
  const keysToDownload = await ctx.db.prisma.licenseImportRow.count({ where: { jobId: id, keyGenerated: true, sealedKey: { not: null } } });
  return { ...job, created: count('created'), skipped: count('skipped'), keysToDownload };
}

/** The failed rows of an import job (line and reason), at most `first`. */
export async function licenseImportFailures(ctx: ServiceContext, job: { id: string; tenantId: string }, first = 20) {
  if (requireMember(ctx) !== job.tenantId) return [];
  return ctx.db.prisma.licenseImportRow.findMany({
    where: { jobId: job.id, status: 'failed' }, orderBy: { line: 'asc' }, take: Math.min(Math.max(first, 1), 100), select: { line: true, error: true },
  }) as Promise<{ line: number; error: string }[]>;
}

/**
 * The generated keys of a finished import job as CSV (`line,license_id,key`), once (CompanyAdmin): they are erased
 * as they are read, so a second call is Conflict. Provided keys are not in it (the vendor has them).
 */
export async function takeLicenseImportKeys(ctx: ServiceContext, jobId: string) {
  const { tenantId } = requireAdmin(ctx);
  const job = isUuid(jobId) ? await ctx.db.prisma.bulkJob.findFirst({ where: { id: jobId, tenantId, action: IMPORT_ACTION }, select: { finishedAt: true } }) : null;
  if (!job) throw new AppError('NotFound', 'Import not found.');
  if (!job.finishedAt) throw new AppError('Conflict', 'The import is still running: its keys can be downloaded once it has finished.');
  // Erased and decrypted in one transaction: a key that cannot be decrypted rolls the erasure back.
  const generated = await ctx.db.prisma.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ line: number; licenseId: string; sealedKey: string }[]>`
      UPDATE license_import_rows r SET sealed_key = NULL FROM (SELECT line, sealed_key FROM license_import_rows WHERE job_id = ${jobId}::uuid AND key_generated AND sealed_key IS NOT NULL FOR UPDATE) old
       WHERE r.job_id = ${jobId}::uuid AND r.line = old.line RETURNING r.line, r.license_id::text AS "licenseId", old.sealed_key AS "sealedKey"`;
    if (rows.length === 0) throw new AppError('Conflict', 'The keys of this import were downloaded already (or it generated none).');
    return rows.sort((a, b) => a.line - b.line).map((row) => ({ line: row.line, licenseId: row.licenseId, key: ctx.secrets.decrypt(row.sealedKey) }));
  });
  const csv = ['line,license_id,key\r\n', ...generated.map((row) => `${row.line},${row.licenseId},${row.key}\r\n`)].join('');
  return { csv, keys: generated.length, generated };
}

/** Rows a run reads at a time. */
const ROW_BATCH = 100;

/**
 * Creates the licenses of an import job's pending rows (bulk.ts runJob calls it under the job's lease), as the
 * person who started it. A row whose line of this file was imported before is skipped; a refusal about the row
 * (its product deleted, its key taken meanwhile) fails it; any other error stops the job, to be resumed. Counts
 * each row in `counts` as it goes.
 */
export async function runImportRows(
  serviceCtx: () => ServiceContext,
  job: { id: string; tenantId: string; params: unknown },
  refusal: string | null,
  counts: { done: number; failed: number },
  failpoint?: (jobId: string, item: string) => void | Promise<void>,
) {
  const { fileDigest } = job.params as { fileDigest: string };
  for (;;) {
    const { db } = serviceCtx();
    const rows = await db.prisma.licenseImportRow.findMany({ where: { jobId: job.id, status: 'pending' }, orderBy: { line: 'asc' }, take: ROW_BATCH });
    if (rows.length === 0) return;
    for (const row of rows) {
      await failpoint?.(job.id, String(row.line));
      const ctx = serviceCtx();
      // A row is marked once, from pending: a second runner of the same job (a lapsed lease) changes nothing it did.
      const pending = { jobId: job.id, line: row.line, status: 'pending' };
      const finish = (data: Prisma.LicenseImportRowUncheckedUpdateManyInput, failed: boolean) =>
        ctx.db.prisma.$transaction(async (tx) => {
          const { count } = await tx.licenseImportRow.updateMany({ where: pending, data: { sealedKey: null, ...data } });
          if (count) await tx.bulkJob.update({ where: { id: job.id }, data: failed ? { failed: { increment: 1 } } : { done: { increment: 1 } } });
        });
      const importedBefore = () => ctx.db.prisma.licenseImportRecord.findUnique({ where: { tenantId_fileDigest_line: { tenantId: job.tenantId, fileDigest, line: row.line } } });
      const before = await importedBefore();
      if (before) {
        await finish({ status: 'skipped', licenseId: before.licenseId }, false);
        counts.done++;
        continue;
      }
      if (refusal) {
        await finish({ status: 'failed', error: refusal }, true);
        counts.failed++;
        continue;
      }
      const input = row.input as { productId: string; planId?: string; attributes: LicenseInput; notes: string | null };
      try {
        await createLicense(ctx, { ...input.attributes, productId: input.productId, planId: input.planId }, {
          key: row.keyGenerated ? undefined : ctx.secrets.decrypt(row.sealedKey!),
          auditDetails: { importedFrom: { fileDigest, line: row.line }, ...(input.notes ? { notes: input.notes } : {}) },
          async inTransaction(tx, license, key) {
            // The idempotency record and the row's mark commit with the license, or neither does.
            const recorded = await tx.$executeRaw`INSERT INTO license_import_records (tenant_id, file_digest, line, license_id, job_id, created_at)
              VALUES (${job.tenantId}::uuid, ${fileDigest}, ${row.line}, ${license.id}::uuid, ${job.id}::uuid, ${ctx.now}) ON CONFLICT DO NOTHING`;
            if (recorded === 0) throw new AppError('Conflict', ALREADY_IMPORTED);
            const { count } = await tx.licenseImportRow.updateMany({ where: pending, data: { status: 'created', licenseId: license.id, sealedKey: row.keyGenerated ? ctx.secrets.encrypt(key) : null } });
            if (count === 0) throw new AppError('Conflict', ALREADY_IMPORTED);
            await tx.bulkJob.update({ where: { id: job.id }, data: { done: { increment: 1 } } });
          },
        });
        counts.done++;
      } catch (caught) {
        if (!(caught instanceof AppError)) throw caught;
        // Imported by another job of the same file meanwhile.
        const other = caught.message === ALREADY_IMPORTED ? await importedBefore() : null;
        if (other) await finish({ status: 'skipped', licenseId: other.licenseId }, false);
        else await finish({ status: 'failed', error: caught.message }, true);
        counts[other ? 'done' : 'failed']++;
      }
    }
  }
}

const ALREADY_IMPORTED = 'This line of this file was imported already.';
