import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/database.js';
import { Prisma } from '../../generated/prisma/client.js';
import { CreatedAtIdCursor, cappedCount, countUpTo, createdAtIdWhere, isUuid, keyset, toPage, type Page, type PageArgs } from '../listing.js';
import { requireAdmin } from '../auth/actor.js';
import type { ActorContext, ServiceContext } from '../context.js';
import { redactSingleUseTokens, renderToken, unsealEmailToken } from './sealed-token.js';

// The email outbox. Every email is written here first under an idempotency key (tenant + kind + period/threshold
// + recipient), with or after the decision to send it (expiry.ts, digest.ts); delivery (delivery.ts) reads it
// afterwards. A rerun of a job produces the same keys, so it adds nothing.

export const EMAIL_KINDS = ['weekly-digest', 'expiry-admin', 'expiry-customer', 'test', 'invitation', 'password-reset', 'webhook-disabled', 'license-key', 'portal-sign-in'] as const;
export type EmailKind = (typeof EMAIL_KINDS)[number];
export const EMAIL_STATUSES = ['pending', 'sent', 'failed'] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

export interface OutgoingEmail {
  tenantId: string | null;
  kind: EmailKind;
  idempotencyKey: string;
  to: string;
  subject: string;
  html: string;
  text: string;
  /** A single-use token the bodies carry as its placeholder, sealed (sealed-token.ts); null for other emails. */
  sealedToken?: string | null;
}

/**
 * Writes emails to the outbox; one whose key is already there is skipped. Returns how many were new.
 * One statement over arrays: createMany costs ~3× the time and memory for the expiry job's batches of bodies.
 */
export async function enqueueEmails(tx: Pick<Db, '$executeRaw'>, emails: OutgoingEmail[], now: Date): Promise<number> {
  if (!emails.length) return 0;
  const column = <K extends keyof OutgoingEmail>(key: K) => emails.map((email) => email[key]);
  return tx.$executeRaw`
    INSERT INTO email_outbox (id, tenant_id, kind, idempotency_key, to_address, subject, html, text, sealed_token, created_at, next_attempt_at)
    SELECT id, tenant_id, kind, idempotency_key, to_address, subject, html, text, sealed_token, ${now}, ${now}
      FROM unnest(${emails.map(() => randomUUID())}::uuid[], ${column('tenantId')}::uuid[], ${column('kind')}::text[], ${column('idempotencyKey')}::text[],
                  ${column('to')}::text[], ${column('subject')}::text[], ${column('html')}::text[], ${column('text')}::text[],
                  ${emails.map((email) => email.sealedToken ?? null)}::text[])
           AS e(id, tenant_id, kind, idempotency_key, to_address, subject, html, text, sealed_token)
    ON CONFLICT (idempotency_key) DO NOTHING`;
}

export interface OutboxFilter extends PageArgs {
  status?: EmailStatus | null;
  kind?: EmailKind | null;
  /** Include the HTML and text bodies (the development outbox is read this way). */
  includeBody?: boolean;
}

/** The columns an email is listed with: never its bodies (see previewOutboxBody). */
export const EMAIL_SUMMARY = {
  id: true,
  tenantId: true,
  kind: true,
  toAddress: true,
  subject: true,
  status: true,
  attempts: true,
  nextAttemptAt: true,
  lastError: true,
  providerMessageId: true,
  createdAt: true,
  sentAt: true,
} as const;

/** The operator (a system actor without a tenant) sees every tenant's emails; anyone else needs the admin role. */
const outboxTenant = (ctx: ActorContext): string | null =>
  ctx.actor?.kind === 'system' && ctx.actor.tenantId === null ? null : requireAdmin(ctx).tenantId;

/** Relations or bodies a caller wants loaded with the email rows, in the same query (the GraphQL layer's planned selection). */
export interface OutboxQuery {
  select?: Prisma.EmailOutboxSelect;
}

/**
 * Emails of the caller's tenant (CompanyAdmin), newest first (createdAt, then id), paginated both ways
 * (`first`/`after`, `last`/`before`: see `keyset`); the operator CLI without a tenant lists every tenant's.
 */
export async function listOutbox(ctx: ServiceContext, filter: OutboxFilter = {}, query: OutboxQuery = {}) {
  const tenantId = outboxTenant(ctx);
  const page = keyset(filter, CreatedAtIdCursor);
  const where = {
    ...(tenantId !== null && { tenantId }),
    ...(filter.status && { status: filter.status }),
    ...(filter.kind && { kind: filter.kind }),
  };
  const view = { ...EMAIL_SUMMARY, html: filter.includeBody === true, text: filter.includeBody === true };
  // The operator's CLI reads the development outbox as the mailbox: its bodies come with their token rendered.
  const operatorBodies = filter.includeBody === true && ctx.actor?.kind === 'system';
  const [rows, totalCount] = await Promise.all([
    ctx.db.prisma.emailOutbox.findMany({
      where: { AND: [where, createdAtIdWhere(page)] },
      // The caller's selection rides along; the rows are typed as the summary (with the bodies when asked for).
      select: { ...view, ...query.select, ...(operatorBodies && { idempotencyKey: true, sealedToken: true }) } as typeof view,
      orderBy: [{ createdAt: page.order }, { id: page.order }],
      take: page.size + 1,
    }).then((found) => (operatorBodies ? found.map((row) => withTokenRendered(ctx, row)) : found)),
    cappedCount(countUpTo(ctx.db, Prisma.sql`email_outbox`, outboxConditions(tenantId, filter))),
  ]);
  return toPage(rows, page, totalCount, (row) => [row.createdAt.toISOString(), row.id]);
}

/** The same filter as the `where` of `listOutbox`, as SQL (for its capped count, which Prisma cannot write). */
function outboxConditions(tenantId: string | null, filter: OutboxFilter): Prisma.Sql {
  const and: Prisma.Sql[] = [Prisma.sql`true`];
  if (tenantId !== null) and.push(Prisma.sql`tenant_id = ${tenantId}::uuid`);
  if (filter.status) and.push(Prisma.sql`status = ${filter.status}::email_status`);
  if (filter.kind) and.push(Prisma.sql`kind = ${filter.kind}`);
  return Prisma.join(and, ' AND ');
}

export type OutboxEntry = Awaited<ReturnType<typeof listOutbox>> extends Page<infer T> ? T : never;

/** One email of a tenant by its idempotency key, as listed. */
export async function getOutboxEntry(ctx: Pick<ServiceContext, 'db'>, tenantId: string, idempotencyKey: string): Promise<OutboxEntry> {
  return ctx.db.prisma.emailOutbox.findFirstOrThrow({ where: { idempotencyKey, tenantId }, select: { ...EMAIL_SUMMARY, html: true, text: true } });
}

/** A row read for the operator with its sealed token rendered into its bodies (and the sealed value left out). */
function withTokenRendered<T extends { html?: string; text?: string; idempotencyKey?: string; sealedToken?: string | null; toAddress: string }>(ctx: ServiceContext, row: T): T {
  const { sealedToken, idempotencyKey, ...rest } = row;
  if (!sealedToken || !idempotencyKey || rest.html === undefined || rest.text === undefined) return rest as T;
  let token: string;
  try {
    token = unsealEmailToken(ctx.secrets, { idempotencyKey, to: row.toAddress, sealedToken });
  } catch {
    return rest as T;
  }
  return { ...rest, html: renderToken(rest.html, token), text: renderToken(rest.text, token) } as T;
}

export { redactSingleUseTokens };

/**
 * A body (HTML or text) of an email already read, as a preview for the caller (CompanyAdmin; null when the email is
 * not the caller's tenant's). Single-use tokens are redacted for everyone, the addressee included: such a token
 * travels by email only (stored bodies hold a placeholder, sealed-token.ts; older rows are redacted here).
 */
export function previewOutboxBody(ctx: ActorContext, email: { tenantId: string | null; toAddress: string }, body: string) {
  const { tenantId } = requireAdmin(ctx);
  if (email.tenantId !== tenantId) return null;
  return redactSingleUseTokens(body);
}

/** The bodies of one email of the caller's tenant as previews (previewOutboxBody); null when it is not that tenant's. */
export async function getOutboxBodies(ctx: ServiceContext, id: string) {
  const { tenantId } = requireAdmin(ctx);
  if (!isUuid(id)) return null;
  const email = await ctx.db.prisma.emailOutbox.findFirst({ where: { id, tenantId }, select: { tenantId: true, html: true, text: true, toAddress: true } });
  if (!email) return null;
  return { html: previewOutboxBody(ctx, email, email.html)!, text: previewOutboxBody(ctx, email, email.text)! };
}
