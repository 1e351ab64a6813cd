import { builder, screamingEnumValues } from '../builder.js';
import { queryFromInfo } from '@pothos/plugin-prisma';
import { serviceCtx, type GraphQLContext } from '../context.js';
import { BULK_ACTIONS, BULK_JOB_COLUMNS, bulkJobFailures, countBulkSelection, getBulkJob, startBulkLicenseAction, MAX_SELECTED } from '../../services/licenses/bulk.js';
import { LicenseFilterInput } from './licenses.js';
import { COUNT_CAP, SEARCH_COUNT_CAP, type Count } from '../../services/listing.js';

// Bulk license actions (services/licenses/bulk.ts): the count a confirmation states, the job, its progress.

type BulkJobShape = NonNullable<Awaited<ReturnType<typeof getBulkJob>>>;

const BulkLicenseActionEnum = builder.enumType('BulkLicenseAction', { values: screamingEnumValues(BULK_ACTIONS) });

const BulkJobFailureType = builder.objectRef<{ licenseId: string; keyHint: string; error: string }>('BulkJobFailure').implement({
  description: 'A license the bulk action could not change, and why.',
  fields: (t) => ({ licenseId: t.exposeID('licenseId'), keyHint: t.exposeString('keyHint'), error: t.exposeString('error') }),
});

// Select mode: the job's columns only. Its failures are read by the service (a join with the licenses' key hints the
// schema has no relation for), for the one job a query asks about.
const BulkJobType = builder.prismaObject('BulkJob', {
  select: BULK_JOB_COLUMNS,
  description: 'A bulk action running in the background: done + failed of total licenses so far.',
  fields: (t) => ({
    id: t.exposeID('id'),
    action: t.field({ type: BulkLicenseActionEnum, resolve: (job) => job.action as (typeof BULK_ACTIONS)[number] }),
    total: t.exposeInt('total'),
    done: t.exposeInt('done', { description: 'Licenses changed, or already as asked.' }),
    failed: t.exposeInt('failed', { description: 'Licenses refused (revoked, perpetual for a renewal…): see failures.' }),
    finished: t.boolean({ resolve: (job) => job.finishedAt !== null }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true }),
    failures: t.field({
      type: [BulkJobFailureType],
      description: 'The first failed licenses (1–100, default 20).',
      args: { first: t.arg.int() },
      resolve: (job, args, ctx) => bulkJobFailures(serviceCtx(ctx), job, args.first ?? 20),
    }),
  }),
});

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
const selectionFields = (t: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>) => ({
  licenseIds: t.idList({ description: `These licenses (1–${MAX_SELECTED}); or give filter.` }),
  filter: t.field({ type: LicenseFilterInput, description: 'Every license matching this filter when the action starts; or give licenseIds.' }),
});
const BulkSelectionInput = builder.inputType('BulkLicenseSelection', { fields: (t) => selectionFields(t) });
const StartBulkLicenseActionInput = builder.inputType('StartBulkLicenseActionInput', {
  fields: (t) => ({
    action: t.field({ type: BulkLicenseActionEnum, required: true }),
    ...selectionFields(t),
    expiresAt: t.field({ type: 'DateTime', description: 'RENEW: the new expiry of every license (later than now and than its current expiry).' }),
    customerEmail: t.string({ description: 'TRANSFER: the new customer email of every license.' }),
  }),
});
const StartBulkLicenseActionPayload = builder.objectRef<BulkJobShape>('StartBulkLicenseActionPayload').implement({
  fields: (t) => ({ job: t.field({ type: BulkJobType, resolve: (job) => job }) }),
});

const selection = (input: { licenseIds?: (string | number)[] | null; filter?: { productId?: string | number | null; planId?: string | number | null } | null }) => ({
  licenseIds: input.licenseIds?.map(String),
  filter: input.filter ? { ...input.filter, productId: input.filter.productId?.toString(), planId: input.filter.planId?.toString() } : input.filter,
});

const BulkSelectionTotalType = builder.objectRef<Count>('BulkSelectionTotal').implement({
  description: `How many licenses a bulk action on a selection would change now: exactly up to ${COUNT_CAP.toLocaleString('en-US')}.`,
  fields: (t) => ({
    totalCount: t.exposeInt('totalCount', { description: 'Licenses selected; when totalCountCapped, the cap: more than that many are.' }),
    totalCountCapped: t.exposeBoolean('totalCountCapped', { description: `True when more than totalCount licenses are selected (a filter matching over ${COUNT_CAP.toLocaleString('en-US')}).` }),
  }),
});

builder.queryFields((t) => ({
  bulkSelectionCount: t.int({
    description: 'How many licenses a bulk action on this selection would change now, exactly (counts every match: a broad filter of a large company takes long; bulkSelectionTotal stops at a cap).',
    args: { selection: t.arg({ type: BulkSelectionInput, required: true }) },
    resolve: async (_root, args, ctx) => (await countBulkSelection(serviceCtx(ctx), selection(args.selection))).totalCount,
  }),
  bulkSelectionTotal: t.field({
    type: BulkSelectionTotalType,
    description: `What the confirmation of a bulk action states: how many licenses it would change now, counted up to ${COUNT_CAP.toLocaleString('en-US')} (then totalCountCapped: "more than 10,000"); a filter with a text search up to ${SEARCH_COUNT_CAP.toLocaleString('en-US')}, as the license list counts it.`,
    args: { selection: t.arg({ type: BulkSelectionInput, required: true }) },
    resolve: (_root, args, ctx) => countBulkSelection(serviceCtx(ctx), selection(args.selection), COUNT_CAP),
  }),
  bulkJob: t.field({
    type: BulkJobType,
    nullable: true,
    description: 'Null when there is no such bulk job in your company.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx, info) => getBulkJob(serviceCtx(ctx), String(args.id), queryFromInfo({ context: ctx, info, typeName: 'BulkJob' })),
  }),
}));

/** Wakes a worker for a queued bulk job or import now; without one here, the every-minute schedule picks it up. */
export async function wakeBulkRunner(ctx: GraphQLContext, what: string) {
  await ctx.deps.jobs?.runNow('bulk-license-jobs').catch((error: Error) => ctx.deps.logger.warn({ err: error.message }, `could not wake a worker for ${what}`));
}

builder.mutationFields((t) => ({
  startBulkLicenseAction: t.field({
    type: StartBulkLicenseActionPayload,
    description:
      'Suspends, reinstates, revokes, renews or transfers the selected licenses in the background (COMPANY_ADMIN); each change is audited and emitted as a single one would be. Poll bulkJob(id) for progress. A selection matching nothing is InvalidRequest.',
    args: { input: t.arg({ type: StartBulkLicenseActionInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const job = await startBulkLicenseAction(serviceCtx(ctx), { ...selection(input), action: input.action, expiresAt: input.expiresAt, customerEmail: input.customerEmail });
      await wakeBulkRunner(ctx, 'a bulk job');
      return job;
    },
  }),
}));
