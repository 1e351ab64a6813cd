import { builder } from '../builder.js';
import { serviceCtx } from '../context.js';
import { wakeBulkRunner } from './bulk.js';
import {
  checkLicenseImport, getLicenseImportJob, licenseImportFailures, MAX_IMPORT_BYTES, MAX_IMPORT_ROWS, startLicenseImport, takeLicenseImportKeys, type ImportError, type ImportReport,
} from '../../services/licenses/import.js';

// Importing licenses from CSV (services/licenses/import.ts): the dry run's report, the job and its progress, the
// generated keys once.

type ImportJobShape = NonNullable<Awaited<ReturnType<typeof getLicenseImportJob>>>;

const ImportErrorType = builder.objectRef<ImportError>('LicenseImportError').implement({
  description: 'A bad cell (or row, or the file) of an import: its line in the file (the header is line 1) and column.',
  fields: (t) => ({
    line: t.exposeInt('line'),
    column: t.exposeString('column', { nullable: true, description: 'As the file names it; null when the whole row or file is wrong.' }),
    message: t.exposeString('message'),
  }),
});

const ImportReportType = builder.objectRef<ImportReport>('LicenseImportReport').implement({
  description: 'What the dry run found in a file: every error by line and column, and how many rows are valid.',
  fields: (t) => ({
    fileDigest: t.exposeString('fileDigest', { description: 'SHA-256 of the file: with a line, the idempotency key of a row.' }),
    rows: t.exposeInt('rows'),
    valid: t.exposeInt('valid'),
    alreadyImported: t.exposeInt('alreadyImported', { description: 'Valid rows imported before from this same file: an import skips them.' }),
    errorCount: t.exposeInt('errorCount'),
    errors: t.field({ type: [ImportErrorType], description: 'The errors in line order (the first 1,000; errorCount counts them all).', resolve: (report) => report.errors }),
  }),
});

const ImportFailureType = builder.objectRef<{ line: number; error: string }>('LicenseImportFailure').implement({
  description: 'A row the import could not create (its product deleted or its key taken since the dry run…), and why.',
  fields: (t) => ({ line: t.exposeInt('line'), error: t.exposeString('error') }),
});

// Not a prismaObject: a view computed by getLicenseImportJob (shared with the CLI), a job row with three counts of its
// rows by status, which one Prisma selection cannot hold (one `_count` per relation); it is read one job at a time.
const ImportJobType = builder.objectRef<ImportJobShape>('LicenseImportJob').implement({
  description: 'A CSV import running in the background: done + failed of total rows so far.',
  fields: (t) => ({
    id: t.exposeID('id'),
    total: t.exposeInt('total'),
    done: t.exposeInt('done', { description: 'Rows created or skipped.' }),
    created: t.exposeInt('created'),
    skipped: t.exposeInt('skipped', { description: 'Rows imported before from the same file (no duplicate is created).' }),
    failed: t.exposeInt('failed'),
    finished: t.boolean({ resolve: (job) => job.finishedAt !== null }),
    keysToDownload: t.exposeInt('keysToDownload', { description: 'Generated keys not downloaded yet (takeLicenseImportKeys, once).' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true }),
    failures: t.field({
      type: [ImportFailureType],
      description: 'The first failed rows (1–100, default 20).',
      args: { first: t.arg.int() },
      resolve: (job, args, ctx) => licenseImportFailures(serviceCtx(ctx), job, args.first ?? 20),
    }),
  }),
});

const csvField = { required: true, description: `The CSV text (at most ${MAX_IMPORT_BYTES} bytes and ${MAX_IMPORT_ROWS} rows).` } as const;
const CheckLicenseImportInput = builder.inputType('CheckLicenseImportInput', { fields: (t) => ({ csv: t.string(csvField) }) });
const StartLicenseImportInput = builder.inputType('StartLicenseImportInput', { fields: (t) => ({ csv: t.string(csvField) }) });
const TakeLicenseImportKeysInput = builder.inputType('TakeLicenseImportKeysInput', { fields: (t) => ({ jobId: t.id({ required: true }) }) });

const CheckLicenseImportPayload = builder.objectRef<ImportReport>('CheckLicenseImportPayload').implement({
  fields: (t) => ({ report: t.field({ type: ImportReportType, resolve: (report) => report }) }),
});
const StartLicenseImportPayload = builder.objectRef<{ job: ImportJobShape; report: ImportReport }>('StartLicenseImportPayload').implement({
  fields: (t) => ({ job: t.field({ type: ImportJobType, resolve: (payload) => payload.job }), report: t.field({ type: ImportReportType, resolve: (payload) => payload.report }) }),
});
const TakeLicenseImportKeysPayload = builder.objectRef<{ csv: string; keys: number }>('TakeLicenseImportKeysPayload').implement({
  fields: (t) => ({
    csv: t.exposeString('csv', { description: 'line,license_id,key: every generated key, this once.' }),
    keys: t.exposeInt('keys'),
  }),
});

builder.queryFields((t) => ({
  licenseImportJob: t.field({
    type: ImportJobType,
    nullable: true,
    description: 'Null when there is no such import in your company.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => getLicenseImportJob(serviceCtx(ctx), String(args.id)),
  }),
}));

builder.mutationFields((t) => ({
  checkLicenseImport: t.field({
    type: CheckLicenseImportPayload,
    description: 'The dry run of a CSV import (COMPANY_ADMIN): every bad cell by line and column; changes nothing.',
    args: { input: t.arg({ type: CheckLicenseImportInput, required: true }) },
    resolve: (_root, { input }, ctx) => checkLicenseImport(serviceCtx(ctx), input.csv),
  }),
  startLicenseImport: t.field({
    type: StartLicenseImportPayload,
    description:
      'Imports the licenses of a CSV file without errors in the background (COMPANY_ADMIN); each is created, audited and emitted as a single one. A line of a file imported before is skipped. Poll licenseImportJob(id).',
    args: { input: t.arg({ type: StartLicenseImportInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const started = await startLicenseImport(serviceCtx(ctx), input.csv);
      await wakeBulkRunner(ctx, 'an import'); // the bulk job runner runs imports
      return started;
    },
  }),
  takeLicenseImportKeys: t.field({
    type: TakeLicenseImportKeysPayload,
    description: 'The generated keys of a finished import as CSV, once (COMPANY_ADMIN): a second call is Conflict.',
    args: { input: t.arg({ type: TakeLicenseImportKeysInput, required: true }) },
    resolve: (_root, { input }, ctx) => takeLicenseImportKeys(serviceCtx(ctx), String(input.jobId)),
  }),
}));
