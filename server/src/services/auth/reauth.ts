import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { recordAudit } from '../audit/audit-log.js';
import type { ServiceContext } from '../context.js';
import { parseInput } from '../validation.js';
import { auditActor, requireUser, type ActorContext } from './actor.js';
import { REAUTH_WINDOW_MS } from './recent-reauth.js';
import { checkSecondFactor } from './mfa.js';
import { verifyPassword } from './passwords.js';
import { LOCK_MS, MAX_FAILED_LOGINS, admitAttempt, busyError } from './lockout.js';
import { REFUSED_SIGN_IN_MIN_MS, auditFailure, failureIsAudited } from './sessions.js';

// The check itself (the window, the scopes) is in recent-reauth.ts, which every gated service imports; this module
// re-authenticates a session.

const ReauthInput = z.object({
  password: z.string().min(1).max(200),
  totpCode: z.string().max(20).nullish(),
  backupCode: z.string().max(40).nullish(),
});

/**
 * Re-authenticates the caller's session: its password, and a TOTP or backup code when MFA is on. A failure counts
 * towards the sign-in lockout of the address exactly as a failed sign-in does (and is in the activity log as
 * FailedReauthentication, the lock as LockAccount); a right password never does. While the address is locked, or
 * as many checks of it are under way as the lockout allows (lockout.ts: RateLimited), nothing is checked. Success
 * stamps the session for REAUTH_WINDOW_MS and is logged (Reauthenticate). Refusals take at least
 * REFUSED_SIGN_IN_MIN_MS.
 */
export async function reauthenticate(ctx: ServiceContext, input: z.input<typeof ReauthInput>): Promise<{ reauthenticatedUntil: Date }> {
  const actor = requireUser(ctx);
  if (!actor.sessionFamilyId) throw new AppError('Forbidden', 'Only a signed-in session can re-authenticate.');
  const data = parseInput(ReauthInput, input);
  const started = performance.now();
  try {
    return await attemptReauth(ctx, actor, data);
  } catch (error) {
    const remaining = REFUSED_SIGN_IN_MIN_MS - (performance.now() - started);
    if (remaining > 0) await new Promise((resolve) => setTimeout(resolve, remaining));
    throw error;
  }
}

async function attemptReauth(ctx: ServiceContext, actor: ReturnType<typeof requireUser>, data: z.output<typeof ReauthInput>) {
  const familyId = actor.sessionFamilyId!;
  const user = await ctx.db.prisma.user.findUniqueOrThrow({ where: { id: actor.userId } });
  // Admitted by the address's lockout before any password work, as a sign-in is (lockout.ts).
  const admission = await admitAttempt(ctx.db.prisma, user.email, ctx.now);

  const failure = async (reason: string, count: number, locked: Date | null, message: string): Promise<never> => {
    await ctx.db.prisma.$transaction(async (tx) => {
      if (failureIsAudited(count)) await auditFailure(tx, user, user.email, 'FailedReauthentication', { reason, attempts: count }, ctx.meta.ip, ctx.now);
      if (count === MAX_FAILED_LOGINS) await auditFailure(tx, user, user.email, 'LockAccount', { failedAttempts: count, lockedForMinutes: LOCK_MS / 60_000, during: 'reauthentication' }, ctx.meta.ip, ctx.now);
    });
    if (reason === 'locked') {
      const lockedUntil = locked ?? new Date(ctx.now.getTime() + LOCK_MS);
      throw new AppError('AccountLocked', `Too many failed attempts: the account is locked until ${lockedUntil.toISOString()}.`, {
        retryAfterSeconds: Math.ceil((lockedUntil.getTime() - ctx.now.getTime()) / 1000),
      });
    }
    throw new AppError('Unauthorized', message, { fields: { [reason === 'wrong password' ? 'password' : 'code']: message } });
  };

  if (admission.kind === 'locked') return failure('locked', admission.count, admission.lockedUntil, '');
  if (admission.kind === 'busy') throw busyError();
  const { attempt } = admission;
  const failed = async (reason: string, message: string) => {
    const { count, lockedUntil } = await attempt.failed();
    return failure(reason, count, lockedUntil, message);
  };
  try {
    if (!(await verifyPassword(user.passwordHash, data.password))) return await failed('wrong password', 'The password is not correct.');
    if (user.mfaSecretEncrypted && !data.totpCode && !data.backupCode) {
      // The password was right: no failure, but the second factor is due (as a sign-in answers MFA_REQUIRED).
      await attempt.givenBack();
      const message = 'Two-factor authentication is on: enter the code from your authenticator app or a backup code.';
      throw new AppError('InvalidRequest', message, { fields: { code: message } });
    }

    const until = new Date(ctx.now.getTime() + REAUTH_WINDOW_MS);
    const outcome = await ctx.db.prisma.$transaction(async (tx) => {
      let method: 'totp' | 'backupCode' | null = null;
      if (user.mfaSecretEncrypted) {
        const check = await checkSecondFactor(tx, ctx, user, { totpCode: data.totpCode, backupCode: data.backupCode });
        if (!check.ok) return { ok: false as const, reason: check.reason };
        method = check.method;
      }
      await tx.sessionReauthentication.upsert({
        where: { familyId },
        create: { familyId, userId: user.id, reauthenticatedAt: ctx.now },
        update: { userId: user.id, reauthenticatedAt: ctx.now },
      });
      const entry = { tenantId: user.tenantId, entityType: 'User', entityId: user.id, entity: user.email } as const;
      if (method === 'backupCode') await recordAudit(tx, { ...entry, action: 'UseBackupCode' }, auditActor(ctx), ctx.now);
      await recordAudit(tx, { ...entry, action: 'Reauthenticate', details: method ? { mfa: method === 'backupCode' ? 'backup code' : 'totp' } : undefined }, auditActor(ctx), ctx.now);
      return { ok: true as const };
    });
    if (!outcome.ok) return await failed(outcome.reason, 'Invalid or already used authentication code.');
    await attempt.succeeded();
    return { reauthenticatedUntil: until };
  } finally {
    await attempt.abandon();
  }
}
