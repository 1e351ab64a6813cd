import { builder } from '../builder.js';
import { serviceCtx } from '../context.js';
import { activityLogIntegrity, listActivity } from '../../services/audit/activity.js';
import { AUDIT_ACTIONS } from '../../services/audit/audit-log.js';
import type { Page } from '../../services/listing.js';
import { PageInfoType } from './licenses.js';

type Entry = Awaited<ReturnType<typeof listActivity>>['nodes'][number];

const ActivityActionEnum = builder.enumType('ActivityAction', { values: AUDIT_ACTIONS });

const ActivityEntryType = builder.objectRef<Entry>('ActivityEntry').implement({
  description: 'One activity log entry (append-only).',
  fields: (t) => ({
    id: t.exposeID('id'),
    seq: t.exposeInt('seq', { description: "Position in the company's hash chain." }),
    action: t.field({ type: ActivityActionEnum, resolve: (entry) => entry.action as (typeof AUDIT_ACTIONS)[number] }),
    entity: t.exposeString('entity', { description: 'The affected record: a product name, a user email, a key hint…' }),
    entityType: t.exposeString('entityType'),
    entityId: t.exposeString('entityId', { nullable: true }),
    user: t.exposeString('actor', { description: 'Who acted: a user email, "api-key <name> (<hint>)", or "system".' }),
    userId: t.exposeString('actorId', { nullable: true }),
    ip: t.exposeString('ip', { nullable: true }),
    timestamp: t.expose('createdAt', { type: 'DateTime' }),
    details: t.expose('details', { type: 'JSON', nullable: true, description: 'For updates: { before, after } of the changed fields.' }),
  }),
});

const ActivityConnectionType = builder.objectRef<Page<Entry>>('ActivityConnection').implement({
  fields: (t) => ({
    nodes: t.field({ type: [ActivityEntryType], resolve: (page) => page.nodes }),
    pageInfo: t.field({ type: PageInfoType, resolve: (page) => page.pageInfo }),
    totalCount: t.exposeInt('totalCount', { description: 'Entries matching the filter, counted up to 10,000 (1,000 with a user or entity text filter).' }),
    totalCountCapped: t.exposeBoolean('totalCountCapped', { description: 'True when more rows match than totalCount says (show "10,000+").' }),
  }),
});

const ActivityFilterInput = builder.inputType('ActivityFilter', {
  fields: (t) => ({
    action: t.field({ type: ActivityActionEnum }),
    userId: t.id({ description: "The acting user's (or API key's) id." }),
    user: t.string({ description: "Part of the actor's label (e.g. an email), case-insensitive." }),
    entity: t.string({ description: 'Part of the entity text, case-insensitive.' }),
    entityType: t.string({ description: 'License, Product, User, Activation, ApiKey, Tenant…' }),
    entityId: t.id(),
    from: t.field({ type: 'DateTime', description: 'Inclusive.' }),
    to: t.field({ type: 'DateTime', description: 'Exclusive.' }),
  }),
});

const IntegrityType = builder.objectRef<{ valid: boolean; entries: number; brokenAtSeq: number | null }>('ActivityLogIntegrity').implement({
  fields: (t) => ({
    valid: t.exposeBoolean('valid'),
    entries: t.exposeInt('entries', { description: 'Entries verified before the first break (all of them when valid).' }),
    brokenAtSeq: t.exposeInt('brokenAtSeq', { nullable: true }),
  }),
});

builder.queryFields((t) => ({
  activityLog: t.field({
    type: ActivityConnectionType,
    description: 'Newest first. first: 1–100 (default 20); after: a pageInfo.endCursor.',
    args: { filter: t.arg({ type: ActivityFilterInput }), first: t.arg.int(), after: t.arg.string() },
    resolve: (_root, { filter, first, after }, ctx) =>
      listActivity(serviceCtx(ctx), { ...filter, actorId: filter?.userId?.toString(), entityId: filter?.entityId?.toString() }, { first, after }),
  }),
  activityLogIntegrity: t.field({
    type: IntegrityType,
    description: "Recomputes your company's activity-log hash chain.",
    resolve: (_root, _args, ctx) => activityLogIntegrity(serviceCtx(ctx), ctx.deps.signer),
  }),
}));
