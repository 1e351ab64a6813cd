import { AppError } from '../../domain/errors.js';
import type { ServiceContext } from '../context.js';
import type { ActorContext } from './actor.js';

// Recent re-authentication ("sudo mode", as GitHub's and Stripe's): an account-security action — minting an API key,
// turning MFA on or off or resetting it, sending a reset link, changing one's password, inviting or promoting an
// admin, adding a webhook endpoint, reissuing a license key — needs a session that proved its password (and its second
// factor when MFA is on) within the last REAUTH_WINDOW_MS. A stolen access token alone then cannot turn into a stolen account.
// The stamp is a row per session (refresh-token family) in the database, so every replica sees it.

export const REAUTH_WINDOW_MS = 10 * 60_000;

export const REAUTH_REQUIRED_MESSAGE =
  'This action needs a recent re-authentication: confirm your password (and your two-factor code when MFA is on) with reauthenticate, then retry within 10 minutes.';

/**
 * What an account-security action may be done by:
 * - 'account': acts on users' account security (MFA, passwords, reset links, API keys, admin roles): sessions that
 *   re-authenticated recently and the operator; never an API key, whatever its role.
 * - 'tenant': a tenant-wide sensitive action (webhook endpoints, key reissue): sessions that re-authenticated recently,
 *   the operator, and API keys (a key is its own credential and has no session to re-authenticate).
 */
export type ReauthScope = 'account' | 'tenant';

/** Refuses the action unless the caller may do it without re-authenticating or its session re-authenticated recently. */
export async function requireRecentReauth(ctx: ActorContext & Pick<ServiceContext, 'db' | 'now'>, scope: ReauthScope = 'account'): Promise<void> {
  const actor = ctx.actor;
  if (!actor) throw new AppError('Unauthorized', 'Sign in, or send an API key in X-Api-Key.');
  if (actor.kind === 'system') return;
  if (actor.kind === 'apiKey') {
    if (scope === 'tenant') return;
    throw new AppError('Forbidden', 'API keys cannot act on account security (API keys, MFA, passwords, reset links, admin roles): do this signed in, after re-authenticating.');
  }
  const since = new Date(ctx.now.getTime() - REAUTH_WINDOW_MS);
  const stamp = actor.sessionFamilyId
    ? await ctx.db.prisma.sessionReauthentication.findFirst({ where: { familyId: actor.sessionFamilyId, userId: actor.userId, reauthenticatedAt: { gt: since, lte: ctx.now } }, select: { familyId: true } })
    : null;
  if (!stamp) throw new AppError('ReauthenticationRequired', REAUTH_REQUIRED_MESSAGE);
}

/** Until when the caller's session counts as recently re-authenticated; null when it does not (or it is no session). */
export async function reauthenticatedUntil(ctx: ActorContext & Pick<ServiceContext, 'db' | 'now'>): Promise<Date | null> {
  const actor = ctx.actor;
  if (actor?.kind !== 'user' || !actor.sessionFamilyId) return null;
  const stamp = await ctx.db.prisma.sessionReauthentication.findUnique({ where: { familyId: actor.sessionFamilyId }, select: { reauthenticatedAt: true, userId: true } });
  if (!stamp || stamp.userId !== actor.userId) return null;
  const until = new Date(stamp.reauthenticatedAt.getTime() + REAUTH_WINDOW_MS);
  return until > ctx.now ? until : null;
}
