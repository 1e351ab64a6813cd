import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { AppError } from '../domain/errors.js';
import { renderInvitationEmail } from '../email/invitation.js';
import { recordAudit } from './audit/audit-log.js';
import { auditActor, requireAdmin, requireMember } from './auth/actor.js';
import { requireRecentReauth } from './auth/recent-reauth.js';
import { EmailSchema, PasswordSchema, hashPassword } from './auth/passwords.js';
import { signInNewAccount, type SignedIn } from './auth/sessions.js';
import type { SecretsContext, ServiceContext } from './context.js';
import type { Prisma } from '../generated/prisma/client.js';
import { isUuid } from './listing.js';
import { userData } from './users.js';
import { emitEvent } from './webhooks/events.js';
import { deliverDueEmails, type MailTransport } from './notifications/delivery.js';
import { enqueueEmails } from './notifications/outbox.js';
import { sealEmailToken, tokenPlaceholder } from './notifications/sealed-token.js';
import { isUniqueViolation, parseInput } from './validation.js';

// Invite a team member by email: a one-time link (`/accept-invite#token=kfi_…`, a URL fragment so the token
// reaches no server log, proxy or Referer) valid for 7 days. Only an HMAC digest of the token is stored.


export const INVITATION_LIFETIME_MS = 7 * 24 * 3600_000;
const INVALID_LINK = 'This invitation link is invalid, used or expired: ask an admin for a new one.';

const InviteInputSchema = z.object({
  email: EmailSchema,
  name: z.string().trim().min(1).max(200).nullable().optional(),
  role: z.enum(['CompanyAdmin', 'ReadOnly']),
});

const AcceptInputSchema = z.object({
  token: z.string().min(1).max(200),
  password: PasswordSchema,
  name: z.string().trim().min(1).max(200).nullable().optional(),
});

/** The columns the API shows of an invitation: never the token digest. */
export const INVITATION_COLUMNS = { id: true, email: true, name: true, role: true, expiresAt: true, createdAt: true } as const;
/** An invitation as the API shows it: its columns and who invited. */
export const PUBLIC_INVITATION_FIELDS = { ...INVITATION_COLUMNS, createdBy: { select: { email: true, name: true } } } as const;

/** Relations a caller wants loaded with the invitation rows, in the same query (the GraphQL layer's planned selection). */
export interface InvitationQuery {
  select?: Prisma.InvitationSelect;
}

/** The only form of an invitation token that is kept (also the key of its sign-in rate limit). */
export const invitationTokenDigest = (ctx: Pick<ServiceContext, 'secrets'>, token: string) => ctx.secrets.digest(`invite:${token}`);

/**
 * Invites a member (CompanyAdmin): a pending invitation of the same address is replaced. The email goes through
 * the outbox and is delivered at once when a transport runs in this process (else by the delivery job).
 */
export async function inviteUser(
  ctx: ServiceContext & { publicUrl: string; transport?: MailTransport | null },
  input: z.input<typeof InviteInputSchema>,
) {
  const admin = requireAdmin(ctx);
  const data = parseInput(InviteInputSchema, input);
  // Inviting an admin hands someone the company's account security.
  if (data.role === 'CompanyAdmin') await requireRecentReauth(ctx);
  // Only the company's own members are refused: whether the address has an account with another company is not
  // this company's business (the invitee, accepting, is the one told that the address already has an account).
  if (await ctx.db.prisma.user.findFirst({ where: { email: data.email, tenantId: admin.tenantId }, select: { id: true } })) {
    throw new AppError('Conflict', `${data.email} is already a member of your company.`);
  }
  const token = `kfi_${randomBytes(32).toString('base64url')}`;
  const expiresAt = new Date(ctx.now.getTime() + INVITATION_LIFETIME_MS);
  const tenant = await ctx.db.prisma.tenant.findUniqueOrThrow({ where: { id: admin.tenantId }, select: { name: true } });
  const invitedBy = admin.kind === 'user' ? admin.email : admin.kind === 'apiKey' ? `${admin.label} (API key)` : admin.label;
  // The stored email holds a placeholder; the token travels sealed and is rendered in at send time (sealed-token.ts).
  const email = await renderInvitationEmail({ tenantName: tenant.name, to: data.email, invitedBy, role: data.role, expiresAt, acceptUrl: `${ctx.publicUrl}/accept-invite#token=${tokenPlaceholder(token)}` });
  const invitation = await ctx.db.prisma.$transaction(async (tx) => {
    await tx.invitation.updateMany({ where: { tenantId: admin.tenantId, email: data.email, acceptedAt: null, revokedAt: null }, data: { revokedAt: ctx.now } });
    const created = await tx.invitation.create({
      data: {
        tenantId: admin.tenantId, email: data.email, name: data.name ?? null, role: data.role, tokenDigest: invitationTokenDigest(ctx, token), expiresAt,
        createdById: admin.kind === 'user' ? admin.userId : null, createdAt: ctx.now,
      },
      select: PUBLIC_INVITATION_FIELDS,
    });
    const idempotencyKey = `invitation:${created.id}`;
    const sealedToken = sealEmailToken(ctx.secrets, { idempotencyKey, to: data.email }, token);
    await enqueueEmails(tx, [{ tenantId: admin.tenantId, kind: 'invitation', idempotencyKey, to: data.email, ...email, sealedToken }], ctx.now);
    await recordAudit(tx, { tenantId: admin.tenantId, action: 'InviteUser', entityType: 'Invitation', entityId: created.id, entity: data.email, details: { role: data.role, name: data.name ?? null } }, auditActor(ctx), ctx.now);
    return created;
  });
  if (ctx.transport) await deliverDueEmails(ctx, ctx.transport, { maxBatches: 1 });
  return invitation;
}

/** Pending invitations of the caller's tenant (not accepted, revoked or expired), newest first. Any role. */
export async function listInvitations(ctx: ServiceContext, query: InvitationQuery = {}) {
  const tenantId = requireMember(ctx);
  return ctx.db.prisma.invitation.findMany({
    where: { tenantId, acceptedAt: null, revokedAt: null, expiresAt: { gt: ctx.now } },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    // The caller's relations ride along; the rows are typed as the public view.
    select: { ...query.select, ...PUBLIC_INVITATION_FIELDS } as typeof PUBLIC_INVITATION_FIELDS,
  });
}

/** Revokes a pending invitation of the caller's tenant (CompanyAdmin); its link stops working. */
export async function revokeInvitation(ctx: ServiceContext, id: string) {
  const admin = requireAdmin(ctx);
  const invitation = isUuid(id) ? await ctx.db.prisma.invitation.findFirst({ where: { id, tenantId: admin.tenantId } }) : null;
  if (!invitation) throw new AppError('NotFound', 'Invitation not found.');
  return ctx.db.prisma.$transaction(async (tx) => {
    const { count } = await tx.invitation.updateMany({ where: { id: invitation.id, tenantId: admin.tenantId, acceptedAt: null, revokedAt: null }, data: { revokedAt: ctx.now } });
    if (count === 1) {
      await recordAudit(tx, { tenantId: admin.tenantId, action: 'RevokeInvitation', entityType: 'Invitation', entityId: invitation.id, entity: invitation.email }, auditActor(ctx), ctx.now);
    }
    return tx.invitation.findUniqueOrThrow({ where: { id: invitation.id }, select: PUBLIC_INVITATION_FIELDS });
  });
}

/** Public: what the accept page shows of a pending invitation; null for any unusable token (never why). */
export async function invitationByToken(ctx: SecretsContext, token: string) {
  if (!token || token.length > 200) return null;
  const invitation = await ctx.db.prisma.invitation.findFirst({
    where: { tokenDigest: invitationTokenDigest(ctx, token), acceptedAt: null, revokedAt: null, expiresAt: { gt: ctx.now } },
    select: { email: true, role: true, name: true, expiresAt: true, tenant: { select: { name: true } } },
  });
  return invitation && { email: invitation.email, role: invitation.role, name: invitation.name, expiresAt: invitation.expiresAt, companyName: invitation.tenant.name };
}

/**
 * Public: creates the invited user with their chosen password. The invitation is claimed by one conditional
 * UPDATE in the same transaction as the user, so two concurrent accepts create one user.
 */
export async function acceptInvitation(ctx: ServiceContext, input: { token: string; password: string; name?: string | null }) {
  const data = parseInput(AcceptInputSchema, input);
  const passwordHash = await hashPassword(data.password);
  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      const [claimed] = await tx.$queryRaw<{ id: string; tenant_id: string; email: string; role: 'CompanyAdmin' | 'ReadOnly'; name: string | null }[]>`
        UPDATE invitations SET accepted_at = ${ctx.now}
         WHERE token_digest = ${invitationTokenDigest(ctx, data.token)} AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ${ctx.now}
        RETURNING id, tenant_id, email, role::text AS role, name`;
      if (!claimed) throw new AppError('InvalidRequest', INVALID_LINK);
      const user = await tx.user.create({
        data: { tenantId: claimed.tenant_id, email: claimed.email, name: data.name ?? claimed.name, role: claimed.role, passwordHash, createdAt: ctx.now },
        select: { id: true, email: true, role: true, name: true, tenantId: true },
      });
      await recordAudit(
        tx,
        { tenantId: user.tenantId, action: 'CreateUser', entityType: 'User', entityId: user.id, entity: user.email, details: { role: user.role, name: user.name, via: 'invitation' } },
        { id: user.id, label: user.email, ip: ctx.meta.ip },
        ctx.now,
      );
      await emitEvent(tx, user.tenantId, 'user.created', userData(user), ctx.now);
      return user;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('Conflict', 'A user with this email already exists: sign in instead.');
    throw error;
  }
}

/** Public: accepts the invitation, then the new member's first session. */
export async function acceptInvitationAndSignIn(ctx: ServiceContext, input: { token: string; password: string; name?: string | null }): Promise<SignedIn & { email: string }> {
  const user = await acceptInvitation(ctx, input);
  return { ...(await signInNewAccount(ctx, user.email, input.password)), email: user.email };
}
