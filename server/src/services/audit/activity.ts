import { z } from 'zod';
import { requireMember } from '../auth/actor.js';
import type { ServiceContext } from '../context.js';
import { Prisma } from '../../generated/prisma/client.js';
import { cappedCount, COUNT_CAP, countUpTo, keyset, searchMatches, toPage, type PageArgs } from '../listing.js';
import { parseInput, StorableDate } from '../validation.js';
import { AUDIT_ACTIONS } from './audit-log.js';

// The activity log as the management API reads it (docs/integrate/management-api.md "Activity log"). Writing happens in audit-log.ts, inside
// each change's own transaction.

/** The columns of an entry the API shows: not the chain's hashes (verification.ts reads those). */
export const ACTIVITY_COLUMNS = {
  id: true, tenantId: true, seq: true, action: true, entityType: true, entityId: true, entity: true, actorId: true, actor: true, ip: true, details: true, createdAt: true,
} as const satisfies Prisma.AuditLogEntrySelect;


export const ActivityFilterSchema = z.object({
  action: z.enum(AUDIT_ACTIONS).nullish(),
  /** The acting user's or API key's id. */
  actorId: z.string().trim().max(100).nullish(),
  /** Part of the actor's label (a user email, "api-key …", "system"), case-insensitive. */
  user: z.string().trim().max(200).nullish(),
  /** Part of the entity text (a product name, a user email, a key hint), case-insensitive. */
  entity: z.string().trim().max(200).nullish(),
  entityType: z.string().trim().max(50).nullish(),
  entityId: z.string().trim().max(100).nullish(),
  /** Inclusive lower bound of the timestamp. */
  from: StorableDate.nullish(),
  /** Exclusive upper bound of the timestamp. */
  to: StorableDate.nullish(),
});
export type ActivityFilter = z.input<typeof ActivityFilterSchema>;

// seq is an int4 column: a larger number is no cursor of this list.
const ActivityCursor = z.tuple([z.number().int().positive().max(2 ** 31 - 1)]);

/** The filter as SQL over `audit_log`, for the capped count (the same conditions as the Prisma `where`). */
function activityConditions(tenantId: string, filter: z.output<typeof ActivityFilterSchema>): Prisma.Sql {
  const and: Prisma.Sql[] = [Prisma.sql`tenant_id = ${tenantId}::uuid`];
  if (filter.action) and.push(Prisma.sql`action = ${filter.action}`);
  if (filter.actorId) and.push(Prisma.sql`actor_id = ${filter.actorId}`);
  if (filter.user) and.push(Prisma.sql`actor ILIKE ('%' || ${filter.user} || '%')`);
  if (filter.entity) and.push(Prisma.sql`entity ILIKE ('%' || ${filter.entity} || '%')`);
  if (filter.entityType) and.push(Prisma.sql`entity_type = ${filter.entityType}`);
  if (filter.entityId) and.push(Prisma.sql`entity_id = ${filter.entityId}`);
  if (filter.from) and.push(Prisma.sql`created_at >= ${filter.from.toISOString()}::timestamptz`);
  if (filter.to) and.push(Prisma.sql`created_at < ${filter.to.toISOString()}::timestamptz`);
  return Prisma.join(and, ' AND ');
}

/** Newest first, in chain order (seq); a cursor is an entry's seq. Both directions (see `keyset`), filtered either way. */
/** What a caller wants loaded with the entries, in the same query (the GraphQL layer's planned selection). */
export interface ActivityQuery {
  select?: Prisma.AuditLogEntrySelect;
}

export async function listActivity(ctx: ServiceContext, filterInput: ActivityFilter = {}, pageArgs: PageArgs = {}, query: ActivityQuery = {}) {
  const tenantId = requireMember(ctx);
  const filter = parseInput(ActivityFilterSchema, filterInput);
  const page = keyset(pageArgs, ActivityCursor);
  const insensitive = (text: string) => ({ contains: text, mode: 'insensitive' as const });
  const where: Prisma.AuditLogEntryWhereInput = {
    tenantId,
    ...(filter.action && { action: filter.action }),
    ...(filter.actorId && { actorId: filter.actorId }),
    ...(filter.user && { actor: insensitive(filter.user) }),
    ...(filter.entity && { entity: insensitive(filter.entity) }),
    ...(filter.entityType && { entityType: filter.entityType }),
    ...(filter.entityId && { entityId: filter.entityId }),
    ...((filter.from || filter.to) && { createdAt: { ...(filter.from && { gte: filter.from }), ...(filter.to && { lt: filter.to }) } }),
  };
  // The caller's selection rides along (never the hashes: it plans over ACTIVITY_COLUMNS); the rows are typed as the view.
  const columns = { ...query.select, ...ACTIVITY_COLUMNS } as typeof ACTIVITY_COLUMNS;
  const cursor = page.cursor?.[0] ?? null;
  const conditions = activityConditions(tenantId, filter);
  const walk = () => ctx.db.prisma.auditLogEntry.findMany({
    where: cursor === null ? where : { ...where, seq: page.backward ? { gt: cursor } : { lt: cursor } },
    orderBy: { seq: page.order },
    take: page.size + 1,
    select: columns,
  });
  if (!filter.user && !filter.entity) {
    const [rows, totalCount] = await Promise.all([walk(), cappedCount(countUpTo(ctx.db, Prisma.sql`audit_log`, conditions), COUNT_CAP)]);
    return toPage(rows, page, totalCount, (row) => [row.seq]);
  }
  // A text filter: few matches are paged from the matches themselves (trigram indexes), many by walking the log.
  const cursorSql = cursor === null ? Prisma.empty : Prisma.sql`WHERE seq ${page.sqlCmp} ${cursor}`;
  const { count, keys } = await searchMatches<number>(
    ctx.db,
    Prisma.sql`SELECT seq FROM audit_log WHERE ${conditions}`,
    Prisma.sql`SELECT seq FROM counted ${cursorSql} ORDER BY seq ${page.sqlOrder} LIMIT ${page.size + 1}`,
  );
  if (!keys) return toPage(await walk(), page, count, (row) => [row.seq]);
  const rows = await ctx.db.prisma.auditLogEntry.findMany({
    where: { tenantId, seq: { in: keys } },
    orderBy: { seq: page.order },
    select: columns,
  });
  return toPage(rows, page, count, (row) => [row.seq]);
}
