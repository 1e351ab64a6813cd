import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { recordAudit, type AuditActor } from '../audit/audit-log.js';
import { auditActor, requireAdmin, requireOperator } from './actor.js';
import { requireRecentReauth } from './recent-reauth.js';
import type { ServiceContext, SystemContext } from '../context.js';
import type { MailTransport } from '../notifications/delivery.js';
import { deliverDueEmails } from '../notifications/delivery.js';
import { parseInput } from '../validation.js';
import { EmailSchema, PasswordSchema, hashPassword } from './passwords.js';
import { emailResetLink } from './password-reset.js';
import { revokeSessions } from './sessions.js';
import { spendResetLinks } from './reset-tokens.js';
import { findTenantUser, publicUser, reactivate } from '../users.js';

// Account recovery. The operator (the CLI, whoever runs the server) recovers any account by email, also a
// company's last admin; a company's admins recover their own members from the Team page (unlock, reset MFA, send a
// reset link), never a user of another company. Every step is in the tenant's activity log.

type Tx = Parameters<typeof recordAudit>[0];
type Target = { id: string; tenantId: string; email: string; mfaSecretEncrypted: string | null };

async function userByEmail(ctx: ServiceContext, emailInput: string) {
  requireOperator(ctx);
  const { email } = parseInput(z.object({ email: EmailSchema }), { email: emailInput });
  const user = await ctx.db.prisma.user.findUnique({ where: { email } });
  if (!user) throw new AppError('NotFound', `No user with the email ${email}.`);
  return user;
}

/** A member of the admin's own company (CompanyAdmin); another company's user is "not found". */
async function memberOf(ctx: ServiceContext, userId: string) {
  const admin = requireAdmin(ctx);
  return { admin, user: await findTenantUser(ctx, admin.tenantId, userId) };
}

/** Until when an address's sign-in is locked by failed attempts; null when it is not (now). */
const lockedUntilOf = (failures: { lockedUntil: Date | null } | null, now: Date) => (failures?.lockedUntil && failures.lockedUntil > now ? failures.lockedUntil : null);

/** Until when the member's sign-in is locked (the Team page's badge); null when it is not. */
export async function memberLockedUntil(ctx: SystemContext, email: string): Promise<Date | null> {
  return lockedUntilOf(await ctx.db.prisma.loginFailure.findUnique({ where: { email }, select: { lockedUntil: true } }), ctx.now);
}

const by = (ctx: ServiceContext) => (ctx.actor?.kind === 'system' ? 'operator' : 'admin');

const audit = (ctx: ServiceContext, user: Target, action: 'ChangePassword' | 'DisableMfa' | 'UnlockAccount', details?: Record<string, unknown>) => (tx: Tx) =>
  recordAudit(tx, { tenantId: user.tenantId, action, entityType: 'User', entityId: user.id, entity: user.email, details: { ...details, by: by(ctx) } }, auditActor(ctx), ctx.now);

/**
 * Sets a new password (generated when none is given, and then returned once), ends every session of the
 * user and lifts a sign-in lock on the email. Someone else chose it: the user must choose their own at next sign-in.
 */
export async function resetPassword(ctx: ServiceContext, email: string, newPassword?: string): Promise<{ email: string; generatedPassword: string | null }> {
  const user = await userByEmail(ctx, email);
  const generated = newPassword === undefined ? randomBytes(15).toString('base64url') : null;
  const { password } = parseInput(z.object({ password: PasswordSchema }), { password: newPassword ?? generated });
  const passwordHash = await hashPassword(password);
  await ctx.db.prisma.$transaction(async (tx) => {
    await tx.user.update({ where: { id: user.id }, data: { passwordHash, passwordChangedAt: ctx.now, passwordMustChange: true } });
    // A pending reset link would let its holder set another password and clear the "must change" flag.
    await spendResetLinks(tx, user.id, ctx.now);
    await revokeSessions(tx, user.id, ctx.now);
    await tx.loginFailure.deleteMany({ where: { email: user.email } });
    await audit(ctx, user, 'ChangePassword', { reset: true, mustChange: true })(tx);
  });
  return { email: user.email, generatedPassword: generated };
}

/**
 * Forgets the failed sign-ins of the user's address (and so its lock); whether it was locked. Only lifting a real
 * lock is an activity-log entry: unlocking an address that was not locked changes nothing anyone relies on.
 */
async function liftLock(ctx: ServiceContext, user: Target): Promise<boolean> {
  return ctx.db.prisma.$transaction(async (tx) => {
    // Locked (lockedUntilOf's rule) is decided by the delete itself: of two unlocks at once, one finds the lock.
    const { count: locked } = await tx.loginFailure.deleteMany({ where: { email: user.email, lockedUntil: { gt: ctx.now } } });
    await tx.loginFailure.deleteMany({ where: { email: user.email } });
    if (locked) await audit(ctx, user, 'UnlockAccount')(tx);
    return locked > 0;
  });
}

/**
 * Turns MFA off (lost authenticator and backup codes): the user can enrol again. Whether it was on; only then is it
 * an activity-log entry (a reset of MFA that was off changes nothing but a pending enrollment).
 */
async function turnMfaOff(ctx: ServiceContext, user: Target): Promise<boolean> {
  return ctx.db.prisma.$transaction(async (tx) => {
    const { count } = await tx.user.updateMany({ where: { id: user.id, mfaSecretEncrypted: { not: null } }, data: { mfaSecretEncrypted: null, mfaPendingEncrypted: null, mfaLastStep: null } });
    if (count === 0) {
      await tx.user.update({ where: { id: user.id }, data: { mfaPendingEncrypted: null } });
      return false;
    }
    await tx.backupCode.deleteMany({ where: { userId: user.id } });
    await audit(ctx, user, 'DisableMfa', { reset: true })(tx);
    return true;
  });
}

/** Operator: lifts the sign-in lock (and forgets the failed attempts) of an email. */
export async function unlockAccount(ctx: ServiceContext, email: string): Promise<{ email: string; wasLocked: boolean }> {
  const user = await userByEmail(ctx, email);
  return { email: user.email, wasLocked: await liftLock(ctx, user) };
}

/** Operator: turns two-factor authentication off (lost authenticator and backup codes); the user can enrol again. */
export async function resetMfa(ctx: ServiceContext, email: string): Promise<{ email: string; mfaWasEnabled: boolean }> {
  const user = await userByEmail(ctx, email);
  return { email: user.email, mfaWasEnabled: await turnMfaOff(ctx, user) };
}

/** Operator: lets a deactivated user sign in again (their old sessions and API keys stay revoked). */
export async function reactivateUserByEmail(ctx: ServiceContext, email: string): Promise<{ email: string; wasDeactivated: boolean }> {
  const user = await userByEmail(ctx, email);
  return { email: user.email, wasDeactivated: await reactivate(ctx, user, auditActor(ctx)) };
}

/** Team page: lifts a member's sign-in lock (CompanyAdmin, own company). */
export async function unlockMember(ctx: ServiceContext, userId: string) {
  const { user } = await memberOf(ctx, userId);
  const wasLocked = await liftLock(ctx, user);
  return { user: await publicUser(ctx, user.id), wasLocked };
}

/**
 * Team page: turns a member's MFA off (CompanyAdmin, own company). Not one's own: with a session, turning it off
 * takes a code (disableMfa), so a stolen session cannot remove the second factor; a lost authenticator of the only
 * admin is the operator's `user:reset-mfa`.
 */
export async function resetMemberMfa(ctx: ServiceContext, userId: string) {
  const { admin, user } = await memberOf(ctx, userId);
  await requireRecentReauth(ctx);
  if (admin.kind === 'user' && admin.userId === user.id) {
    throw new AppError('Conflict', 'Turn your own MFA off on your profile (it takes a code); without your authenticator, ask another admin.');
  }
  const mfaWasEnabled = await turnMfaOff(ctx, user);
  return { user: await publicUser(ctx, user.id), mfaWasEnabled };
}

/** Team page: emails a member a single-use link to choose a new password (CompanyAdmin, own company). */
export async function sendMemberResetLink(ctx: ServiceContext & { publicUrl: string; transport?: MailTransport | null }, userId: string) {
  const { user } = await memberOf(ctx, userId);
  await requireRecentReauth(ctx);
  if (user.deactivatedAt) throw new AppError('Conflict', `${user.email} is deactivated: reactivate them first.`);
  const actor: AuditActor = auditActor(ctx);
  await emailResetLink(ctx, user, 'admin', actor);
  if (ctx.transport) await deliverDueEmails(ctx, ctx.transport, { maxBatches: 1 });
  return { user: await publicUser(ctx, user.id) };
}
