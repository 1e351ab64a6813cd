import { builder, screamingEnumValues } from '../builder.js';
import { forwardPage, pageConnection } from '../connections.js';
import { serviceCtx } from '../context.js';
import { activityLogIntegrity, listActivity } from '../../services/audit/activity.js';
import { AUDIT_ACTIONS } from '../../services/audit/audit-log.js';

type Entry = Awaited<ReturnType<typeof listActivity>>['nodes'][number];

const ActivityActionEnum = builder.enumType('ActivityAction', { values: screamingEnumValues(AUDIT_ACTIONS) });

/** The vendor is a "company" in this API (the role is COMPANY_ADMIN); the activity log stores its entity type as Tenant. */
const entityTypeOut = (entityType: string) => (entityType === 'Tenant' ? 'Company' : entityType);
const entityTypeIn = (entityType: string | null | undefined) => (entityType === 'Company' ? 'Tenant' : entityType);

const ActivityEntryType = builder.objectRef<Entry>('ActivityEntry').implement({
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

const IntegrityType = builder.objectRef<{ valid: boolean; entries: number; brokenAtSeq: number | null }>('ActivityLogIntegrity').implement({
  fields: (t) => ({
    valid: t.exposeBoolean('valid'),
    entries: t.exposeInt('entries', { description: 'Entries verified before the first break (all of them when valid).' }),
    brokenAtSeq: t.exposeInt('brokenAtSeq', { nullable: true }),
  }),
});

builder.queryFields((t) => ({
  activityLog: t.connection(
    {
      type: ActivityEntryType,
      description: 'Newest first; totalCount counts up to 10,000 (1,000 with a user or entity text filter). first: 1–100 (default 20); after: an endCursor (forward only).',
      args: { filter: t.arg({ type: ActivityFilterInput }) },
      resolve: async (_root, args, ctx) => {
        const { filter } = args;
        const page = await listActivity(
          serviceCtx(ctx),
          ctx.actor,
          { ...filter, entityType: entityTypeIn(filter?.entityType), actorId: filter?.userId?.toString(), entityId: filter?.entityId?.toString() },
          forwardPage(args),
        );
        return pageConnection(page, args);
      },
    },
    { name: 'ActivityConnection' },
    { name: 'ActivityEdge' },
  ),
  activityLogIntegrity: t.field({
    type: IntegrityType,
    description: "Recomputes your company's activity-log hash chain.",
    resolve: (_root, _args, ctx) => activityLogIntegrity(serviceCtx(ctx), ctx.actor, ctx.deps.signer),
  }),
}));
