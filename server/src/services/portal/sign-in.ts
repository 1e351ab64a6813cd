import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { renderPortalSignInEmail } from '../../email/portal-sign-in.js';
import { recordAudit, type AuditActor } from '../audit/audit-log.js';
import type { RequestMeta } from '../auth/actor.js';
import { EmailSchema } from '../auth/passwords.js';
import type { SecretsContext } from '../context.js';
import { deliverDueEmails, type MailTransport } from '../notifications/delivery.js';
import { enqueueEmails } from '../notifications/outbox.js';
import { sealEmailToken, tokenPlaceholder } from '../notifications/sealed-token.js';
import { parseInput } from '../validation.js';

// The customer portal's sign-in (docs/guide/customer-portal.md): no password. A customer asks for a link at
// `/portal/<handle>`; when the address is the customerEmail of one of that company's licenses, a single-use link
// (`#token=kfp_…`: a URL fragment, so it reaches no server log or Referer) is emailed, valid LINK_LIFETIME_MS. Using
// it opens a portal session of that company only: an opaque `kfs_…` token in an httpOnly cookie scoped to the
// company's portal, valid SESSION_LIFETIME_MS with no refresh (nothing is shared with the staff sessions' refresh
// families). Only HMAC digests of both tokens are stored.

export const LINK_LIFETIME_MS = 15 * 60_000;
export const SESSION_LIFETIME_MS = 8 * 60 * 60_000;
/** A request answers no sooner than this, known address or not, so the work done for a known one is not told by timing. */
export const LINK_REQUEST_MIN_MS = 400;
/** Links emailed to one address of one company per LINK_LIFETIME_MS at most; more requests answer the same, sending nothing. */
export const LINKS_PER_WINDOW = 3;

/** A company whose portal is on, as a customer may see it. */
export interface PortalCompany {
  id: string;
  name: string;
  handle: string;
  logoUrl: string | null;
  accentColor: string | null;
  supportEmail: string | null;
  renewalUrl: string | null;
}

/** A signed-in customer: one email at one company, through one session. */
export interface PortalCustomer {
  tenantId: string;
  email: string;
  sessionId: string;
  expiresAt: Date;
}

export type PortalContext = SecretsContext & { meta: RequestMeta };
type MailCtx = PortalContext & { publicUrl: string; transport?: MailTransport | null };

const linkDigest = (ctx: Pick<SecretsContext, 'secrets'>, token: string) => ctx.secrets.digest(`portal-link:${token}`);
const sessionDigest = (ctx: Pick<SecretsContext, 'secrets'>, token: string) => ctx.secrets.digest(`portal-session:${token}`);

/** How the activity log names a customer's action. */
export const customerActor = (email: string, meta: RequestMeta): AuditActor => ({ id: null, label: `customer ${email}`, ip: meta.ip });

const HANDLE = /^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/;

/** The company whose portal has this handle; null for none (the portal answers the same for an unknown handle and a switched-off one). */
export async function portalCompany(ctx: Pick<SecretsContext, 'db'>, handle: string): Promise<PortalCompany | null> {
  if (!HANDLE.test(handle)) return null;
  const tenant = await ctx.db.prisma.tenant.findUnique({
    where: { portalHandle: handle },
    select: { id: true, name: true, portalHandle: true, portalLogoUrl: true, portalAccentColor: true, supportEmail: true, renewalUrl: true },
  });
  if (!tenant?.portalHandle) return null;
  return { id: tenant.id, name: tenant.name, handle: tenant.portalHandle, logoUrl: tenant.portalLogoUrl, accentColor: tenant.portalAccentColor, supportEmail: tenant.supportEmail, renewalUrl: tenant.renewalUrl };
}

/** The lower-cased address and its domain, as the licenses' email-domain index reads them. */
export function emailParts(email: string) {
  const lower = email.trim().toLowerCase();
  return { email: lower, domain: lower.slice(lower.lastIndexOf('@') + 1) };
}

/** Whether any license of the company is for this customer email (case-insensitive), through the email-domain index. */
export async function isCustomerOf(client: Pick<Prisma.TransactionClient, '$queryRaw'>, tenantId: string, email: string): Promise<boolean> {
  const parts = emailParts(email);
  const rows = await client.$queryRaw<unknown[]>`
    SELECT 1 FROM licenses WHERE tenant_id = ${tenantId}::uuid AND customer_email_domain = ${parts.domain} AND lower(customer_email) = ${parts.email} LIMIT 1`;
  return rows.length > 0;
}

/**
 * Public: emails a sign-in link to a customer of the company. An address on none of its licenses gets nothing, and
 * an address that already got LINKS_PER_WINDOW links in the last LINK_LIFETIME_MS gets no more; every request
 * answers the same, no sooner than LINK_REQUEST_MIN_MS, and delivery happens after the answer.
 */
export async function requestPortalSignIn(ctx: MailCtx, company: PortalCompany, input: { email: string }): Promise<void> {
  const started = performance.now();
  const { email } = emailParts(parseInput(z.object({ email: EmailSchema }), input).email);
  if (await isCustomerOf(ctx.db.prisma, company.id, email)) {
    const sent = await ctx.db.prisma.$transaction(async (tx) => {
      // One request at a time per address, so the per-window cap holds under concurrent requests.
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('keyforge.portal-link'), hashtext(${`${company.id}:${email}`}))`;
      const recent = await tx.portalSignInLink.count({ where: { tenantId: company.id, email, createdAt: { gt: new Date(ctx.now.getTime() - LINK_LIFETIME_MS) } } });
      if (recent >= LINKS_PER_WINDOW) return false;
      const token = `kfp_${randomBytes(32).toString('base64url')}`;
      const link = await tx.portalSignInLink.create({
        data: { tenantId: company.id, email, tokenDigest: linkDigest(ctx, token), expiresAt: new Date(ctx.now.getTime() + LINK_LIFETIME_MS), createdAt: ctx.now },
        select: { id: true },
      });
      const rendered = await renderPortalSignInEmail({
        companyName: company.name,
        to: email,
        lifetimeMinutes: LINK_LIFETIME_MS / 60_000,
        signInUrl: `${ctx.publicUrl}/portal/${company.handle}/sign-in#token=${tokenPlaceholder(token)}`,
      });
      const idempotencyKey = `portal-sign-in:${link.id}`;
      const sealedToken = sealEmailToken(ctx.secrets, { idempotencyKey, to: email }, token);
      await enqueueEmails(tx, [{ tenantId: company.id, kind: 'portal-sign-in', idempotencyKey, to: email, ...rendered, sealedToken }], ctx.now);
      return true;
    });
    // After the answer: a provider's latency must not tell a known address from an unknown one.
    if (sent && ctx.transport) void deliverDueEmails(ctx, ctx.transport, { maxBatches: 1 }).catch(() => undefined);
  }
  const remaining = LINK_REQUEST_MIN_MS - (performance.now() - started);
  if (remaining > 0) await new Promise((resolve) => setTimeout(resolve, remaining));
}

const INVALID_LINK = 'This sign-in link is invalid, used or expired: ask for a new one.';

/**
 * Public: signs in with an emailed link of this company. The link is claimed by one conditional UPDATE (it works
 * once, also under concurrent use, and only at the portal of the company that sent it); the customer must still be
 * one (a license with the address). Returns the new session's token, to be set as the portal cookie.
 */
export async function signInWithPortalLink(ctx: PortalContext, company: PortalCompany, input: { token: string }): Promise<{ token: string; customer: PortalCustomer }> {
  const { token } = parseInput(z.object({ token: z.string().min(1).max(200) }), input);
  return ctx.db.prisma.$transaction(async (tx) => {
    const [claimed] = await tx.$queryRaw<{ email: string }[]>`
      UPDATE portal_sign_in_links SET used_at = ${ctx.now}
       WHERE token_digest = ${linkDigest(ctx, token)} AND tenant_id = ${company.id}::uuid AND used_at IS NULL AND expires_at > ${ctx.now}
      RETURNING email`;
    if (!claimed || !(await isCustomerOf(tx, company.id, claimed.email))) throw new AppError('InvalidRequest', INVALID_LINK);
    const sessionToken = `kfs_${randomBytes(32).toString('base64url')}`;
    const expiresAt = new Date(ctx.now.getTime() + SESSION_LIFETIME_MS);
    const session = await tx.portalSession.create({
      data: { tenantId: company.id, email: claimed.email, tokenDigest: sessionDigest(ctx, sessionToken), expiresAt, createdAt: ctx.now },
      select: { id: true },
    });
    await recordAudit(tx, { tenantId: company.id, action: 'CustomerSignIn', entityType: 'Customer', entityId: null, entity: claimed.email, details: { via: 'portal link' } }, customerActor(claimed.email, ctx.meta), ctx.now);
    return { token: sessionToken, customer: { tenantId: company.id, email: claimed.email, sessionId: session.id, expiresAt } };
  });
}

/** The customer a portal session token stands for at this company; null for any token that is not a live session of it. */
export async function authenticatePortalSession(ctx: SecretsContext, company: PortalCompany, token: string | null | undefined): Promise<PortalCustomer | null> {
  if (!token || token.length > 200 || !token.startsWith('kfs_')) return null;
  const session = await ctx.db.prisma.portalSession.findFirst({
    where: { tokenDigest: sessionDigest(ctx, token), tenantId: company.id, revokedAt: null, expiresAt: { gt: ctx.now } },
    select: { id: true, tenantId: true, email: true, expiresAt: true },
  });
  return session && { tenantId: session.tenantId, email: session.email, sessionId: session.id, expiresAt: session.expiresAt };
}

/** Signs out this session, or (everywhere) every session of the customer at this company. Returns how many ended. */
export async function signOutPortal(ctx: PortalContext, customer: PortalCustomer, { everywhere }: { everywhere: boolean }): Promise<number> {
  return ctx.db.prisma.$transaction(async (tx) => {
    const where = everywhere ? { tenantId: customer.tenantId, email: customer.email } : { id: customer.sessionId, tenantId: customer.tenantId };
    const { count } = await tx.portalSession.updateMany({ where: { ...where, revokedAt: null, expiresAt: { gt: ctx.now } }, data: { revokedAt: ctx.now } });
    await recordAudit(tx, { tenantId: customer.tenantId, action: 'CustomerSignOut', entityType: 'Customer', entityId: null, entity: customer.email, details: { everywhere, sessions: count } }, customerActor(customer.email, ctx.meta), ctx.now);
    return count;
  });
}

/** Housekeeping: links and sessions past their end (a day after, so a just-expired one still answers "expired"). */
export async function purgePortalSignIns(ctx: Pick<SecretsContext, 'db' | 'now'>): Promise<number> {
  const before = new Date(ctx.now.getTime() - 24 * 60 * 60_000);
  const [links, sessions] = await Promise.all([
    ctx.db.prisma.portalSignInLink.deleteMany({ where: { expiresAt: { lt: before } } }),
    ctx.db.prisma.portalSession.deleteMany({ where: { expiresAt: { lt: before } } }),
  ]);
  return links.count + sessions.count;
}
