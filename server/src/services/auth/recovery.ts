import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { recordAudit } from '../audit/audit-log.js';
import { auditActor, requireOperator } from './actor.js';
import type { ServiceContext } from '../context.js';
import { parseInput } from '../validation.js';
import { EmailSchema, PasswordSchema, hashPassword } from './passwords.js';
import { revokeSessions } from './sessions.js';
import { reactivate } from '../users.js';

// Operator recovery, for whoever runs the server (the CLI): a locked-out admin, a lost password or a lost
// authenticator, when no other admin of the tenant can help. Every step is in the tenant's activity log.

type Ctx = ServiceContext;

async function userByEmail(ctx: Ctx, emailInput: string) {
  requireOperator(ctx);
  const { email } = parseInput(z.object({ email: EmailSchema }), { email: emailInput });
  const user = await ctx.db.prisma.user.findUnique({ where: { email } });
  if (!user) throw new AppError('NotFound', `No user with the email ${email}.`);
  return user;
}

const audit = (ctx: Ctx, user: { id: string; tenantId: string; email: string }, action: 'ChangePassword' | 'DisableMfa' | 'UnlockAccount', details?: Record<string, unknown>) =>
  (tx: Parameters<typeof recordAudit>[0]) =>
    recordAudit(tx, { tenantId: user.tenantId, action, entityType: 'User', entityId: user.id, entity: user.email, details: { ...details, by: 'operator' } }, auditActor(ctx), ctx.now);

/**
 * Sets a new password (generated when none is given, and then returned once), ends every session of the
 * user and lifts a sign-in lock on the email.
 */
export async function resetPassword(ctx: Ctx, email: string, newPassword?: string): Promise<{ email: string; generatedPassword: string | null }> {
  const user = await userByEmail(ctx, email);
  const generated = newPassword === undefined ? randomBytes(15).toString('base64url') : null;
  const { password } = parseInput(z.object({ password: PasswordSchema }), { password: newPassword ?? generated });
  const passwordHash = await hashPassword(password);
  await ctx.db.prisma.$transaction(async (tx) => {
    await tx.user.update({ where: { id: user.id }, data: { passwordHash, passwordChangedAt: ctx.now } });
    await revokeSessions(tx, user.id, ctx.now);
    await tx.loginFailure.deleteMany({ where: { email: user.email } });
    await audit(ctx, user, 'ChangePassword', { reset: true })(tx);
  });
  return { email: user.email, generatedPassword: generated };
}

/** Lifts the sign-in lock (and forgets the failed attempts) of an email. */
export async function unlockAccount(ctx: Ctx, email: string): Promise<{ email: string; wasLocked: boolean }> {
  const user = await userByEmail(ctx, email);
  return ctx.db.prisma.$transaction(async (tx) => {
    const failures = await tx.loginFailure.findUnique({ where: { email: user.email } });
    const wasLocked = Boolean(failures?.lockedUntil && failures.lockedUntil > ctx.now);
    await tx.loginFailure.deleteMany({ where: { email: user.email } });
    await audit(ctx, user, 'UnlockAccount', { wasLocked })(tx);
    return { email: user.email, wasLocked };
  });
}

/** Turns two-factor authentication off (lost authenticator and backup codes); the user can enrol again. */
export async function resetMfa(ctx: Ctx, email: string): Promise<{ email: string; mfaWasEnabled: boolean }> {
  const user = await userByEmail(ctx, email);
  await ctx.db.prisma.$transaction(async (tx) => {
    await tx.user.update({ where: { id: user.id }, data: { mfaSecretEncrypted: null, mfaPendingEncrypted: null, mfaLastStep: null } });
    await tx.backupCode.deleteMany({ where: { userId: user.id } });
    await audit(ctx, user, 'DisableMfa', { reset: true })(tx);
  });
  return { email: user.email, mfaWasEnabled: user.mfaSecretEncrypted !== null };
}

/** Lets a deactivated user sign in again (their old sessions and API keys stay revoked). */
export async function reactivateUserByEmail(ctx: Ctx, email: string): Promise<{ email: string; wasDeactivated: boolean }> {
  const user = await userByEmail(ctx, email);
  return { email: user.email, wasDeactivated: await reactivate(ctx, user, auditActor(ctx)) };
}
