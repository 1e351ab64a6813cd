import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { renderPasswordResetEmail } from '../../email/password-reset.js';
import { recordAudit, type AuditActor } from '../audit/audit-log.js';
import type { SecretsContext, ServiceContext } from '../context.js';
import { deliverDueEmails, type MailTransport } from '../notifications/delivery.js';
import { enqueueEmails } from '../notifications/outbox.js';
import { sealEmailToken, tokenPlaceholder } from '../notifications/sealed-token.js';
import { parseInput } from '../validation.js';
import { EmailSchema, PasswordSchema, hashPassword } from './passwords.js';
import { issueResetToken, resetTokenDigest, spendResetLinks, type ResetReason } from './reset-tokens.js';
import { revokeSessions } from './sessions.js';

// "Forgot password?" and an admin's "Send reset link": an emailed single-use link (reset-tokens.ts). Using it sets
// the new password, ends every session of the user and lifts a sign-in lock (the link proves the mailbox).

type MailCtx = ServiceContext & { publicUrl: string; transport?: MailTransport | null };

const INVALID_LINK = 'This password reset link is invalid, used or expired: ask for a new one.';
/** A request answers no sooner than this, known email or not, so the work done for a known one is not told by timing. */
export const RESET_REQUEST_MIN_MS = 400;

/**
 * Emails a reset link to a user (in a transaction: the link, its email in the outbox and the activity-log entry
 * are one change). `requestedBy` is the actor the activity log names.
 */
export async function emailResetLink(ctx: MailCtx, user: { id: string; tenantId: string; email: string }, reason: Exclude<ResetReason, 'must-change'>, by: AuditActor) {
  const tenant = await ctx.db.prisma.tenant.findUniqueOrThrow({ where: { id: user.tenantId }, select: { name: true } });
  await ctx.db.prisma.$transaction(async (tx) => {
    const link = await issueResetToken(tx, ctx, user.id, reason);
    // The stored email holds a placeholder; the token travels sealed and is rendered in at send time (sealed-token.ts).
    const email = await renderPasswordResetEmail({
      tenantName: tenant.name,
      to: user.email,
      requestedBy: reason === 'admin' ? { kind: 'admin', email: by.label } : { kind: 'self' },
      lifetimeMinutes: link.lifetimeMinutes,
      resetUrl: `${ctx.publicUrl}/reset-password#token=${tokenPlaceholder(link.token)}`,
    });
    const idempotencyKey = `password-reset:${link.id}`;
    const sealedToken = sealEmailToken(ctx.secrets, { idempotencyKey, to: user.email }, link.token);
    await enqueueEmails(tx, [{ tenantId: user.tenantId, kind: 'password-reset', idempotencyKey, to: user.email, ...email, sealedToken }], ctx.now);
    await recordAudit(tx, { tenantId: user.tenantId, action: 'SendPasswordResetLink', entityType: 'User', entityId: user.id, entity: user.email, details: reason === 'admin' ? { by: 'admin' } : { via: reason } }, by, ctx.now);
  });
}

/**
 * Public "Forgot password?": a known, active user gets a reset link by email; an unknown or deactivated address gets
 * nothing. Both answer the same, no sooner than RESET_REQUEST_MIN_MS; delivery happens after the answer.
 */
export async function requestPasswordReset(ctx: MailCtx, input: { email: string }): Promise<void> {
  const started = performance.now();
  const { email } = parseInput(z.object({ email: EmailSchema }), input);
  const user = await ctx.db.prisma.user.findUnique({ where: { email }, select: { id: true, tenantId: true, email: true, deactivatedAt: true } });
  if (user && !user.deactivatedAt) {
    await emailResetLink(ctx, user, 'forgot-password', { id: null, label: `${user.email} (forgot password)`, ip: ctx.meta.ip });
    // After the answer: a provider's latency must not tell a known address from an unknown one.
    if (ctx.transport) void deliverDueEmails(ctx, ctx.transport, { maxBatches: 1 }).catch(() => undefined);
  }
  const remaining = RESET_REQUEST_MIN_MS - (performance.now() - started);
  if (remaining > 0) await new Promise((resolve) => setTimeout(resolve, remaining));
}

/** Public: the address a usable reset link is for (the page shows it); null for any unusable token (never why). */
export async function passwordResetByToken(ctx: SecretsContext, token: string) {
  if (!token || token.length > 200) return null;
  const reset = await ctx.db.prisma.passwordReset.findFirst({
    where: { tokenDigest: resetTokenDigest(ctx, token), usedAt: null, expiresAt: { gt: ctx.now }, user: { deactivatedAt: null } },
    select: { reason: true, expiresAt: true, user: { select: { email: true } } },
  });
  return reset && { email: reset.user.email, reason: reset.reason as ResetReason, expiresAt: reset.expiresAt };
}

/**
 * Public: sets the new password with a reset link. The link is claimed by one conditional UPDATE (it works once,
 * also under concurrent use); every session of the user ends, the password no longer needs changing, and the
 * sign-in lock of the address is lifted.
 */
export async function completePasswordReset(ctx: ServiceContext, input: { token: string; password: string }): Promise<{ userId: string; email: string }> {
  const data = parseInput(z.object({ token: z.string().min(1).max(200), password: PasswordSchema }), input);
  const passwordHash = await hashPassword(data.password);
  return ctx.db.prisma.$transaction(async (tx) => {
    const [claimed] = await tx.$queryRaw<{ user_id: string; reason: string }[]>`
      UPDATE password_resets SET used_at = ${ctx.now}
       WHERE token_digest = ${resetTokenDigest(ctx, data.token)} AND used_at IS NULL AND expires_at > ${ctx.now}
      RETURNING user_id, reason`;
    const user = claimed && (await tx.user.findUnique({ where: { id: claimed.user_id } }));
    if (!user || user.deactivatedAt) throw new AppError('InvalidRequest', INVALID_LINK);
    await tx.user.update({ where: { id: user.id }, data: { passwordHash, passwordChangedAt: ctx.now, passwordMustChange: false } });
    await spendResetLinks(tx, user.id, ctx.now);
    await revokeSessions(tx, user.id, ctx.now);
    await tx.loginFailure.deleteMany({ where: { email: user.email } });
    await recordAudit(tx, { tenantId: user.tenantId, action: 'ResetPassword', entityType: 'User', entityId: user.id, entity: user.email, details: { via: claimed.reason } }, { id: user.id, label: user.email, ip: ctx.meta.ip }, ctx.now);
    return { userId: user.id, email: user.email };
  });
}
