import { builder, EXPENSIVE_FIELD_COST, screamingEnumValues } from '../builder.js';
import { keysetPage, pageConnection } from '../connections.js';
import { queryFromInfo } from '@pothos/plugin-prisma';
import { serviceCtx } from '../context.js';
import { ACTIVITY_COLUMNS, listActivity } from '../../services/audit/activity.js';
import { checkpointData } from '../../services/audit/checkpoints.js';
import { activityLogIntegrity, checkpointFile, INTEGRITY_VISIT_ENTRIES, verifyActivityLog, type CheckpointReport, type IntegrityReport, type LogVerification, type VerdictSummary } from '../../services/audit/verification.js';
import type { GraphQLContext } from '../context.js';
import { AUDIT_ACTIONS } from '../../services/audit/audit-log.js';

const ActivityActionEnum = builder.enumType('ActivityAction', { values: screamingEnumValues(AUDIT_ACTIONS) });

/** The vendor is a "company" in this API (the role is COMPANY_ADMIN); the activity log stores its entity type as Tenant. */
const entityTypeOut = (entityType: string) => (entityType === 'Tenant' ? 'Company' : entityType);
const entityTypeIn = (entityType: string | null | undefined) => (entityType === 'Company' ? 'Tenant' : entityType);

// Select mode: never the chain's hashes. The actor is a label and an id kept with the entry (no relation: an entry
// outlives the user or key who acted), so there is nothing to load per entry.
const ActivityEntryType = builder.prismaObject('AuditLogEntry', {
  name: 'ActivityEntry',
  select: ACTIVITY_COLUMNS,
  description: 'One activity log entry (append-only).',
  fields: (t) => ({
    id: t.exposeID('id'),
    seq: t.exposeInt('seq', { description: "Position in the company's hash chain." }),
    action: t.field({ type: ActivityActionEnum, resolve: (entry) => entry.action as (typeof AUDIT_ACTIONS)[number] }),
    entity: t.exposeString('entity', { description: 'The affected record: a product name, a user email, a key hint…' }),
    entityType: t.string({ resolve: (entry) => entityTypeOut(entry.entityType) }),
    entityId: t.exposeString('entityId', { nullable: true }),
    user: t.exposeString('actor', { description: 'Who acted: a user email, "api-key <name> (<hint>)", or "system".' }),
    userId: t.exposeString('actorId', { nullable: true }),
    ip: t.exposeString('ip', { nullable: true }),
    timestamp: t.expose('createdAt', { type: 'DateTime' }),
    details: t.expose('details', { type: 'JSON', nullable: true, description: 'For updates: { before, after } of the changed fields.' }),
  }),
});

const ActivityFilterInput = builder.inputType('ActivityFilter', {
  fields: (t) => ({
    action: t.field({ type: ActivityActionEnum }),
    userId: t.id({ description: "The acting user's (or API key's) id." }),
    user: t.string({ description: "Part of the actor's label (e.g. an email), case-insensitive." }),
    entity: t.string({ description: 'Part of the entity text, case-insensitive.' }),
    entityType: t.string({ description: 'License, Product, User, Activation, ApiKey, Company…' }),
    entityId: t.id(),
    from: t.field({ type: 'DateTime', description: 'Inclusive.' }),
    to: t.field({ type: 'DateTime', description: 'Exclusive.' }),
  }),
});

// Include mode: the integrity report hands over the checkpoint row it wrote or verified (services/audit/verification.ts),
// and its fields read that row: reloading it would show a row changed since its signature was checked.
const CheckpointType = builder.prismaObject('AuditCheckpoint', {
  name: 'ActivityLogCheckpoint',
  description: 'A signed checkpoint of the activity log: keep it apart from the service; the log must extend it later.',
  fields: (t) => ({
    seq: t.exposeInt('seq', { description: 'The entry it pins: entries #1 to seq are covered.' }),
    hash: t.exposeString('hash', { description: "That entry's chain hash." }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was signed.' }),
    checkpoint: t.exposeString('signature', { description: 'The checkpoint itself: an EdDSA-signed JWS (verify with /.well-known/jwks.json).' }),
  }),
});

// Not a prismaObject: a verdict row read through its MAC (a record this server did not seal says nothing), computed by the service.
const VerdictType = builder.objectRef<VerdictSummary>('ActivityLogVerdict').implement({
  description: 'The outcome of a full verification (every entry re-hashed, against the checkpoints).',
  fields: (t) => ({
    verifiedAt: t.expose('verifiedAt', { type: 'DateTime' }),
    valid: t.exposeBoolean('valid'),
    entries: t.exposeInt('entries', { description: 'Entries verified before the first break (all of them when valid).' }),
    brokenAtSeq: t.exposeInt('brokenAtSeq', { nullable: true }),
    problem: t.exposeString('problem', { nullable: true, description: 'What is wrong, at the first entry concerned.' }),
    keptCheckpoints: t.exposeInt('keptCheckpoints', { description: 'Checkpoints given from outside (0: the nightly verification).' }),
  }),
});

const IntegrityType = builder.objectRef<IntegrityReport>('ActivityLogIntegrity').implement({
  fields: (t) => ({
    valid: t.exposeBoolean('valid', { description: 'False when this check or the last full verification found the log altered.' }),
    entries: t.exposeInt('entries', { description: 'Entries verified before the first break (all of them when valid and pendingEntries is 0).' }),
    pendingEntries: t.exposeInt('pendingEntries', {
      description: `Newer entries this check did not reach: one check re-hashes at most ${INTEGRITY_VISIT_ENTRIES.toLocaleString('en')} entries since the newest checkpoint (anchoring what it verified); the rest at the next check or by the 15-minute checkpoint job. 0 when it reached the head.`,
    }),
    brokenAtSeq: t.exposeInt('brokenAtSeq', { nullable: true }),
    problem: t.exposeString('problem', { nullable: true, description: 'What is wrong, at the first entry concerned.' }),
    lastFullVerification: t.field({ type: VerdictType, nullable: true, resolve: (report) => report.lastFullVerification }),
    latestCheckpoint: t.field({ type: CheckpointType, nullable: true, resolve: (report) => report.latestCheckpoint }),
  }),
});

const CheckpointReportStatusEnum = builder.enumType('ActivityCheckpointStatus', {
  values: {
    EXTENDS: { value: 'extends', description: 'The log still holds every entry it covers, unchanged.' },
    MISSING: { value: 'missing', description: 'Entries it covers are gone.' },
    DIFFERS: { value: 'differs', description: 'Entries it covers were changed.' },
    UNVERIFIABLE: { value: 'unverifiable', description: "Its signature does not verify with this server's keys." },
    OTHER_COMPANY: { value: 'otherCompany', description: "Another company's checkpoint." },
  } as const,
});

const CheckpointReportType = builder.objectRef<CheckpointReport>('ActivityCheckpointReport').implement({
  fields: (t) => ({
    seq: t.exposeInt('seq', { nullable: true }),
    signedAt: t.expose('signedAt', { type: 'DateTime', nullable: true }),
    status: t.field({ type: CheckpointReportStatusEnum, resolve: (report) => report.status }),
    message: t.exposeString('message'),
  }),
});

const VerificationType = builder.objectRef<LogVerification>('ActivityLogVerification').implement({
  description: 'A full verification against kept checkpoints: every entry re-hashed, every checkpoint checked.',
  fields: (t) => ({
    valid: t.exposeBoolean('valid', { description: 'True when the log verifies and extends every checkpoint given.' }),
    entries: t.exposeInt('entries', { description: 'Entries verified before the first break (all of them when valid).' }),
    brokenAtSeq: t.exposeInt('brokenAtSeq', { nullable: true, description: 'The first entry that differs (null when valid, or when only a checkpoint was unusable).' }),
    problem: t.exposeString('problem', { nullable: true }),
    verifiedAt: t.expose('verifiedAt', { type: 'DateTime' }),
    checkpoints: t.field({ type: [CheckpointReportType], resolve: (result) => result.checkpoints }),
  }),
});

/** A checkpoint this request signed also leaves through the process log (webhook receivers get it as an event). */
function logWritten(ctx: GraphQLContext, report: IntegrityReport) {
  if (report.written) ctx.deps.logger.info({ tenantId: report.written.tenantId, auditCheckpoint: checkpointData(report.written) }, 'activity log checkpoint');
}

builder.queryFields((t) => ({
  activityLog: t.connection(
    {
      type: ActivityEntryType,
      description: 'Newest first; totalCount counts up to 10,000 (1,000 with a user or entity text filter). first/last: 1–100 (default 20); after: an endCursor (with first), before: a startCursor (with last); not both directions at once.',
      args: { filter: t.arg({ type: ActivityFilterInput }) },
      resolve: async (_root, args, ctx, info) => {
        const { filter } = args;
        const page = await listActivity(
          serviceCtx(ctx),
          { ...filter, entityType: entityTypeIn(filter?.entityType), actorId: filter?.userId?.toString(), entityId: filter?.entityId?.toString() },
          keysetPage(args),
          queryFromInfo({ context: ctx, info, paths: [['nodes'], ['edges', 'node']], typeName: 'ActivityEntry' }),
        );
        return pageConnection(page);
      },
    },
    { name: 'ActivityConnection' },
    { name: 'ActivityEdge' },
  ),
  activityLogIntegrity: t.field({
    type: IntegrityType,
    complexity: EXPENSIVE_FIELD_COST,
    description: "Checks your company's activity-log hash chain since its newest checkpoint (anchoring the head in a new one), with the last full verification's verdict.",
    resolve: async (_root, _args, ctx) => {
      const report = await activityLogIntegrity(serviceCtx(ctx), ctx.deps.signer);
      logWritten(ctx, report);
      return report;
    },
  }),
  activityLogCheckpointFile: t.field({
    type: 'JSON',
    complexity: EXPENSIVE_FIELD_COST,
    description: 'The newest signed checkpoint (the head anchored first) with the public keys that verify it: the file to keep apart from the service.',
    resolve: (_root, _args, ctx) => checkpointFile(serviceCtx(ctx), ctx.deps.signer),
  }),
  activityLogVerification: t.field({
    type: VerificationType,
    complexity: EXPENSIVE_FIELD_COST,
    description:
      'Re-hashes every entry and proves the log extends every checkpoint you kept, or names the first entry that differs. `checkpoints`: any text holding checkpoints (downloaded files, audit.checkpoint webhook payloads, log lines), up to 250,000 characters. Recorded as a full verification.',
    args: { checkpoints: t.arg.string({ required: true }) },
    resolve: (_root, { checkpoints }, ctx) => verifyActivityLog(serviceCtx(ctx), { checkpoints }),
  }),
}));
