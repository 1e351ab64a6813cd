import { randomBytes } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.js';
import type { ServiceContext } from '../context.js';

// Single-use links to choose a new password (`/reset-password#token=kfr_…`: a URL fragment, so the token reaches no
// server log, proxy or Referer). Only an HMAC digest is stored; a new link of a user spends the ones before it.

export type ResetReason = 'forgot-password' | 'admin' | 'must-change';

/** How long a link works: an emailed one, and the one a sign-in hands over when the password must change. */
export const RESET_LINK_LIFETIME_MS = 30 * 60_000;
export const MUST_CHANGE_LIFETIME_MS = 15 * 60_000;

export const resetTokenDigest = (ctx: Pick<ServiceContext, 'secrets'>, token: string) => ctx.secrets.digest(`password-reset:${token}`);

/** Spends every pending link of the user: every password change, by anyone, does (a link must not undo it). */
export async function spendResetLinks(tx: Prisma.TransactionClient, userId: string, now: Date): Promise<void> {
  await tx.passwordReset.updateMany({ where: { userId, usedAt: null }, data: { usedAt: now } });
}

/** Issues a new link for the user (spending any earlier one) and returns its token, to be shown or emailed once. */
export async function issueResetToken(tx: Prisma.TransactionClient, ctx: Pick<ServiceContext, 'secrets' | 'now'>, userId: string, reason: ResetReason) {
  await spendResetLinks(tx, userId, ctx.now);
  const token = `kfr_${randomBytes(32).toString('base64url')}`;
  const lifetime = reason === 'must-change' ? MUST_CHANGE_LIFETIME_MS : RESET_LINK_LIFETIME_MS;
  const reset = await tx.passwordReset.create({
    data: { userId, reason, tokenDigest: resetTokenDigest(ctx, token), expiresAt: new Date(ctx.now.getTime() + lifetime), createdAt: ctx.now },
    select: { id: true },
  });
  return { token, id: reset.id, lifetimeMinutes: lifetime / 60_000 };
}
