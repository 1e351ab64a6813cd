import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Prisma } from '../../generated/prisma/client.js';
import { AppError } from '../../domain/errors.js';
import { recordAudit } from '../audit/audit-log.js';
import type { SecretsContext, ServiceContext } from '../context.js';
import { auditActor, requireUser } from './actor.js';
import { requireRecentReauth } from './recent-reauth.js';

type Tx = Prisma.TransactionClient;

export const BACKUP_CODE_COUNT = 10;
const PERIOD = 30;

const totpFor = (secret: string, label = 'account') => new TOTP({ issuer: 'Keyforge', label, secret: Secret.fromBase32(secret), period: PERIOD, digits: 6, algorithm: 'SHA1' });
/** A typed backup code as stored: spaces and dashes dropped, lower case. */
export const backupCodeText = (code: string) => code.replace(/[\s-]/g, '').toLowerCase();
const backupDigest = (ctx: SecretsContext, code: string) => ctx.secrets.digest(`backup:${backupCodeText(code)}`);

/**
 * The time step a TOTP code belongs to (±1 step of clock drift), or null. The caller records the step so
 * the same code cannot be used twice.
 */
function totpStep(secret: string, code: string, now: Date): number | null {
  const delta = totpFor(secret).validate({ token: code.replace(/\s/g, ''), timestamp: now.getTime(), window: 1 });
  return delta === null ? null : Math.floor(now.getTime() / 1000 / PERIOD) + delta;
}

/** Accepts a TOTP code once (its step must be newer than the last accepted), or an unused backup code once. */
export async function checkSecondFactor(
  tx: Tx,
  ctx: SecretsContext,
  user: { id: string; mfaSecretEncrypted: string | null },
  input: { totpCode?: string | null; backupCode?: string | null },
): Promise<{ ok: true; method: 'totp' | 'backupCode' } | { ok: false; reason: string }> {
  if (!user.mfaSecretEncrypted) return { ok: false, reason: 'mfa not enabled' };
  if (input.totpCode) {
    const step = totpStep(ctx.secrets.decrypt(user.mfaSecretEncrypted), input.totpCode, ctx.now);
    if (step === null) return { ok: false, reason: 'wrong totp code' };
    const { count } = await tx.user.updateMany({
      where: { id: user.id, OR: [{ mfaLastStep: null }, { mfaLastStep: { lt: step } }] },
      data: { mfaLastStep: step },
    });
    return count === 1 ? { ok: true, method: 'totp' } : { ok: false, reason: 'reused totp code' };
  }
  if (input.backupCode) {
    const { count } = await tx.backupCode.updateMany({ where: { userId: user.id, digest: backupDigest(ctx, input.backupCode), usedAt: null }, data: { usedAt: ctx.now } });
    return count === 1 ? { ok: true, method: 'backupCode' } : { ok: false, reason: 'invalid or used backup code' };
  }
  return { ok: false, reason: 'no code' };
}

/**
 * Starts enrollment: a new secret (kept pending until confirmed with a code). Turning MFA on is an account-security
 * action like turning it off: a stolen session must not enrol its own authenticator and lock the owner out.
 */
export async function startMfaEnrollment(ctx: ServiceContext): Promise<{ secret: string; otpauthUrl: string }> {
  const actor = requireUser(ctx);
  await requireRecentReauth(ctx);
  const user = await ctx.db.prisma.user.findUniqueOrThrow({ where: { id: actor.userId } });
  if (user.mfaSecretEncrypted) throw new AppError('Conflict', 'Two-factor authentication is already enabled. Disable it first to enroll a new device.');
  const secret = new Secret({ size: 20 }).base32;
  await ctx.db.prisma.user.update({ where: { id: user.id }, data: { mfaPendingEncrypted: ctx.secrets.encrypt(secret) } });
  return { secret, otpauthUrl: totpFor(secret, user.email).toString() };
}

/** Confirms enrollment with a code from the authenticator; returns the backup codes (shown once). Gated as the start is. */
export async function confirmMfaEnrollment(ctx: ServiceContext, code: string): Promise<{ backupCodes: string[] }> {
  const actor = requireUser(ctx);
  await requireRecentReauth(ctx);
  const user = await ctx.db.prisma.user.findUniqueOrThrow({ where: { id: actor.userId } });
  if (!user.mfaPendingEncrypted) throw new AppError('Conflict', 'Start enrollment first.');
  const secret = ctx.secrets.decrypt(user.mfaPendingEncrypted);
  const step = totpStep(secret, code, ctx.now);
  if (step === null) throw new AppError('InvalidRequest', 'The code does not match. Check the device clock and try the current code.', { fields: { code: 'This code does not match: check the device clock and enter the current code.' } });
  const backupCodes = Array.from({ length: BACKUP_CODE_COUNT }, () => randomBytes(5).toString('hex').replace(/(.{5})(.{5})/, '$1-$2'));
  await ctx.db.prisma.$transaction(async (tx) => {
    // Only while this secret is still pending: the same confirmation sent twice at once enables MFA once, so the
    // backup codes the user is shown are the ones stored (the other request answers Conflict and stores nothing).
    const { count } = await tx.user.updateMany({ where: { id: user.id, mfaPendingEncrypted: user.mfaPendingEncrypted, mfaSecretEncrypted: null }, data: { mfaSecretEncrypted: user.mfaPendingEncrypted, mfaPendingEncrypted: null, mfaLastStep: step } });
    if (!count) throw new AppError('Conflict', 'Two-factor authentication was just enabled by another request, or its enrollment restarted: reload and check its state.');
    await tx.backupCode.deleteMany({ where: { userId: user.id } });
    await tx.backupCode.createMany({ data: backupCodes.map((backupCode) => ({ userId: user.id, digest: backupDigest(ctx, backupCode), createdAt: ctx.now })) });
    await recordAudit(tx, { tenantId: user.tenantId, action: 'EnableMfa', entityType: 'User', entityId: user.id, entity: user.email }, auditActor(ctx), ctx.now);
  });
  return { backupCodes };
}

/** Turns MFA off; needs a current TOTP code (or a backup code). */
export async function disableMfa(ctx: ServiceContext, input: { totpCode?: string | null; backupCode?: string | null }): Promise<void> {
  const actor = requireUser(ctx);
  await requireRecentReauth(ctx);
  const user = await ctx.db.prisma.user.findUniqueOrThrow({ where: { id: actor.userId } });
  if (!user.mfaSecretEncrypted) throw new AppError('Conflict', 'Two-factor authentication is not enabled.');
  const ok = await ctx.db.prisma.$transaction(async (tx) => {
    const check = await checkSecondFactor(tx, ctx, user, input);
    if (!check.ok) return false;
    await tx.user.update({ where: { id: user.id }, data: { mfaSecretEncrypted: null, mfaPendingEncrypted: null, mfaLastStep: null } });
    await tx.backupCode.deleteMany({ where: { userId: user.id } });
    if (check.method === 'backupCode') await recordAudit(tx, { tenantId: user.tenantId, action: 'UseBackupCode', entityType: 'User', entityId: user.id, entity: user.email }, auditActor(ctx), ctx.now);
    await recordAudit(tx, { tenantId: user.tenantId, action: 'DisableMfa', entityType: 'User', entityId: user.id, entity: user.email }, auditActor(ctx), ctx.now);
    return true;
  });
  if (!ok) throw new AppError('InvalidRequest', 'Invalid or already used authentication code.', { fields: { code: 'Invalid or already used code.' } });
}

/** For tests and the console's QR code: the current code of a secret. */
export function currentTotp(secret: string, now: Date): string {
  return totpFor(secret).generate({ timestamp: now.getTime() });
}
