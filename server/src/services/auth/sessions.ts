import { randomBytes, randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import { Prisma } from '../../generated/prisma/client.js';
import { AppError } from '../../domain/errors.js';
import { recordAudit, type AuditActor } from '../audit/audit-log.js';
import type { SecretsContext, ServiceContext } from '../context.js';
import { auditActor, requireUser, type Actor, type RequestMeta, type Role } from './actor.js';
import { checkSecondFactor } from './mfa.js';
import { burnPasswordCheck, verifyPassword } from './passwords.js';
import { deviceFailureKey, verifyDeviceToken } from './devices.js';
import { sha256 } from '../../crypto/secrets.js';
import { issueResetToken } from './reset-tokens.js';

type Tx = Prisma.TransactionClient;

export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
export const REFRESH_TOKEN_TTL_MS = 30 * 86_400_000;
import { LOCK_MS, MAX_FAILED_LOGINS, admitAttempt, busyError } from './lockout.js';

/** Lockout: this many failed logins within the window lock the account for LOCK_MS (lockout.ts). */
export { FAILED_LOGIN_WINDOW_MS, LOCK_MS, MAX_FAILED_LOGINS } from './lockout.js';
const ISSUER = 'keyforge';

export interface SessionTokens {
  accessToken: string;
  accessTokenExpiresAt: Date;
  refreshToken: string;
  refreshTokenExpiresAt: Date;
}

async function signAccessToken(ctx: SecretsContext, user: { id: string; tenantId: string; role: string }, familyId: string) {
  const expiresAt = new Date(ctx.now.getTime() + ACCESS_TOKEN_TTL_SECONDS * 1000);
  const token = await new SignJWT({ tid: user.tenantId, role: user.role, fam: familyId })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(ISSUER)
    .setSubject(user.id)
    .setIssuedAt(Math.floor(ctx.now.getTime() / 1000))
    .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
    .sign(ctx.secrets.accessTokenKey);
  return { token, expiresAt };
}

/** A new refresh token of a session family (stored as a digest only). */
async function issueRefreshToken(tx: Tx, ctx: SecretsContext, userId: string, familyId: string, meta: RequestMeta) {
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(ctx.now.getTime() + REFRESH_TOKEN_TTL_MS);
  await tx.refreshToken.create({
    data: { userId, familyId, digest: ctx.secrets.digest(`refresh:${token}`), expiresAt, ip: meta.ip, userAgent: meta.userAgent?.slice(0, 300), createdAt: ctx.now },
  });
  return { token, expiresAt };
}

async function startSession(tx: Tx, ctx: SecretsContext, user: { id: string; tenantId: string; role: string }, meta: RequestMeta): Promise<SessionTokens> {
  const familyId = randomUUID();
  const refresh = await issueRefreshToken(tx, ctx, user.id, familyId, meta);
  const access = await signAccessToken(ctx, user, familyId);
  return { accessToken: access.token, accessTokenExpiresAt: access.expiresAt, refreshToken: refresh.token, refreshTokenExpiresAt: refresh.expiresAt };
}

/** A new or renewed session and whose it is. */
export type SignedIn = { tokens: SessionTokens; userId: string };

export type LoginResult =
  | ({ status: 'SUCCESS' } & SignedIn)
  | { status: 'MFA_REQUIRED' }
  /** Someone else set the password (the operator CLI): no session, but a single-use token to choose a new one. */
  | { status: 'PASSWORD_CHANGE_REQUIRED'; resetToken: string; expiresAt: Date };

const INVALID_CREDENTIALS = 'Invalid email or password.';
/** Every refused sign-in takes at least this long, so the work done for known and unknown emails cannot be told apart. */
export const REFUSED_SIGN_IN_MIN_MS = 200;

/** Failures of one sign-in window that reach the activity log: the first MAX_FAILED_LOGINS, then the 10th, 100th… */
export function failureIsAudited(count: number): boolean {
  return count <= MAX_FAILED_LOGINS || Number.isInteger(Math.log10(count));
}

export interface LoginInput {
  email: string;
  password: string;
  totpCode?: string | null;
  backupCode?: string | null;
  /** The browser's device cookie (devices.ts), if it has one. */
  deviceToken?: string | null;
}

/**
 * Email + password, then (when MFA is on) a TOTP or backup code. Failed attempts count towards a lockout kept per
 * email address, known or not — or, from a browser holding a valid device cookie of this account, per that cookie
 * (so failures elsewhere never lock the account holder's own browser out). An unknown email does the same work
 * (password hash, failure count, activity-log write rolled back), gets the same answers and locks the same way.
 * Refusals are padded to REFUSED_SIGN_IN_MIN_MS. Anonymous: the request meta comes in the context.
 */
export async function login(ctx: SecretsContext & Pick<ServiceContext, 'meta'>, input: LoginInput): Promise<LoginResult> {
  const { meta } = ctx;
  const started = performance.now();
  try {
    return await attemptLogin(ctx, input, meta);
  } catch (error) {
    const remaining = REFUSED_SIGN_IN_MIN_MS - (performance.now() - started);
    if (remaining > 0) await new Promise((resolve) => setTimeout(resolve, remaining));
    throw error;
  }
}

/**
 * A sign-in failure's activity-log entry, or for an unknown email the same work undone: the same statements run in a
 * savepoint (the insert fails on the missing company and is rolled back), so the two cannot be told apart by timing.
 */
export async function auditFailure(tx: Tx, user: { id: string; tenantId: string; email: string } | null, email: string, action: 'FailedLogin' | 'LockAccount' | 'FailedReauthentication', details: Record<string, unknown>, ip: string | null, now: Date) {
  await tx.$executeRaw`SAVEPOINT sign_in_failure`;
  if (user) {
    await recordAudit(tx, { tenantId: user.tenantId, action, entityType: 'User', entityId: user.id, entity: user.email, details }, { id: user.id, label: user.email, ip }, now);
    await tx.$executeRaw`RELEASE SAVEPOINT sign_in_failure`;
    return;
  }
  const nobody = { id: unknownEmailId(email), tenantId: unknownEmailId(`tenant:${email}`) };
  await recordAudit(tx, { tenantId: nobody.tenantId, action, entityType: 'User', entityId: nobody.id, entity: email, details }, { id: nobody.id, label: email, ip }, now).catch(() => undefined);
  await tx.$executeRaw`ROLLBACK TO SAVEPOINT sign_in_failure`;
}

/** A UUID-shaped id no row has, derived from an unknown email (the stand-in of auditFailure). */
function unknownEmailId(seed: string): string {
  const hex = sha256(`keyforge-unknown-email:${seed}`);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

async function attemptLogin(ctx: SecretsContext, input: LoginInput, meta: RequestMeta): Promise<LoginResult> {
  const email = input.email.trim().toLowerCase();
  // A browser that signed in to this account before is counted and locked on its own (devices.ts).
  const device = verifyDeviceToken(ctx, email, input.deviceToken, ctx.now);
  const attemptKey = device ? deviceFailureKey(device) : email;
  // The user first: an attempt admitted and then left by a failed lookup would hold its place until the lease ends.
  const user = await ctx.db.prisma.user.findUnique({ where: { email } });
  const admission = await admitAttempt(ctx.db.prisma, attemptKey, ctx.now);
  const actor: AuditActor | null = user && { id: user.id, label: user.email, ip: meta.ip };
  const audit = (tx: Tx, action: 'Login' | 'UseBackupCode', details?: Record<string, unknown>) =>
    user && actor ? recordAudit(tx, { tenantId: user.tenantId, action, entityType: 'User', entityId: user.id, entity: user.email, details }, actor, ctx.now) : Promise.resolve();

  // The attempt is counted already: audit it within bounds (and the lock it set), and refuse.
  const failure = async (reason: string, count: number, locked: Date | null, message = INVALID_CREDENTIALS): Promise<never> => {
    const scope = device ? { browser: 'trusted (device cookie)' } : {};
    await ctx.db.prisma.$transaction(async (tx) => {
      if (failureIsAudited(count)) await auditFailure(tx, user, email, 'FailedLogin', { reason, attempts: count, ...scope }, meta.ip, ctx.now);
      if (count === MAX_FAILED_LOGINS) await auditFailure(tx, user, email, 'LockAccount', { failedAttempts: count, lockedForMinutes: LOCK_MS / 60_000, ...scope }, meta.ip, ctx.now);
    });
    if (reason === 'locked') {
      const lockedUntil = locked ?? new Date(ctx.now.getTime() + LOCK_MS);
      throw new AppError('AccountLocked', `Too many failed sign-in attempts: the account is locked until ${lockedUntil.toISOString()}.`, {
        retryAfterSeconds: Math.ceil((lockedUntil.getTime() - ctx.now.getTime()) / 1000),
      });
    }
    throw new AppError('Unauthorized', message);
  };

  if (admission.kind === 'locked') return failure('locked', admission.count, admission.lockedUntil);
  if (admission.kind === 'busy') throw busyError();
  const { attempt } = admission;
  const failed = async (reason: string, message?: string) => {
    const { count, lockedUntil } = await attempt.failed();
    return failure(reason, count, lockedUntil, message);
  };
  try {
    // An unknown email verifies against a dummy hash: the same argon2 work as a wrong password.
    const passwordOk = user ? await verifyPassword(user.passwordHash, input.password) : await burnPasswordCheck(input.password).then(() => false);
    if (!user || !passwordOk) return await failed('wrong password');
    if (user.deactivatedAt) return await failed('deactivated user');
    if (user.mfaSecretEncrypted && !input.totpCode && !input.backupCode) {
      // The password was right: no failure, but the second factor is due.
      await attempt.givenBack();
      return { status: 'MFA_REQUIRED' };
    }

    // One transaction per outcome; never nest (the embedded database has a single connection).
    const outcome = await ctx.db.prisma.$transaction(async (tx) => {
      let usedBackupCode = false;
      if (user.mfaSecretEncrypted) {
        const check = await checkSecondFactor(tx, ctx, user, { totpCode: input.totpCode, backupCode: input.backupCode });
        if (!check.ok) return { status: 'FAILED' as const, reason: check.reason };
        usedBackupCode = check.method === 'backupCode';
      }
      if (!user.passwordMustChange) await tx.user.update({ where: { id: user.id }, data: { lastLoginAt: ctx.now } });
      if (usedBackupCode) await audit(tx, 'UseBackupCode');
      if (user.passwordMustChange) {
        const reset = await issueResetToken(tx, ctx, user.id, 'must-change');
        return { status: 'PASSWORD_CHANGE_REQUIRED' as const, resetToken: reset.token, expiresAt: new Date(ctx.now.getTime() + reset.lifetimeMinutes * 60_000) };
      }
      await audit(tx, 'Login', user.mfaSecretEncrypted ? { mfa: usedBackupCode ? 'backup code' : 'totp' } : undefined);
      return { status: 'SUCCESS' as const, tokens: await startSession(tx, ctx, user, meta), userId: user.id };
    });
    if (outcome.status === 'FAILED') return await failed(outcome.reason, 'Invalid or already used authentication code.');
    // A success clears the failures it was counted against: a trusted browser's own, else the address's (the
    // account holder signing in from a trusted browser does not hand an attacker fresh attempts).
    await attempt.succeeded();
    return outcome;
  } finally {
    await attempt.abandon();
  }
}

/**
 * How long after its rotation a refresh token may be presented once more (REFRESH_REUSE_GRACE_MS). A browser that
 * refreshed and died (or was closed) before it stored the successor comes back with the spent token; within this
 * window it gets a new pair of the same family instead of losing the session — as identity providers' refresh-token
 * reuse intervals do. Only one such reuse per token, and only within the window: any other reuse revokes the family.
 */
export const REFRESH_REUSE_GRACE_MS = 30_000;

/**
 * Rotates a refresh token: the presented one is spent and a new one of the same family issued. Presenting
 * a spent token again means it was stolen or replayed: the whole family (that login) is revoked — unless it is the
 * token's first reuse within REFRESH_REUSE_GRACE_MS of its rotation, which is answered with a new pair.
 */
export async function refreshSession(ctx: SecretsContext & Pick<ServiceContext, 'meta'>, refreshToken: string): Promise<SignedIn> {
  const { meta } = ctx;
  const digest = ctx.secrets.digest(`refresh:${refreshToken}`);
  const outcome = await ctx.db.prisma.$transaction(async (tx) => {
    const row = await tx.refreshToken.findUnique({ where: { digest }, include: { user: true } });
    if (!row || row.revokedAt || row.expiresAt <= ctx.now || row.user.deactivatedAt) return { error: 'invalid' as const };
    // Conditional updates: of concurrent refreshes with one token, exactly one rotates it and at most one more
    // spends its grace reuse; every other presentation is a reuse.
    const { count: rotated } = await tx.refreshToken.updateMany({ where: { id: row.id, rotatedAt: null }, data: { rotatedAt: ctx.now } });
    const graceStart = new Date(ctx.now.getTime() - REFRESH_REUSE_GRACE_MS);
    const rescued = rotated === 0 && (await tx.refreshToken.updateMany({ where: { id: row.id, reusedAt: null, rotatedAt: { gte: graceStart } }, data: { reusedAt: ctx.now } })).count === 1;
    if (rotated === 0 && !rescued) {
      await tx.refreshToken.updateMany({ where: { familyId: row.familyId, revokedAt: null }, data: { revokedAt: ctx.now } });
      return { error: 'reused' as const };
    }
    const refresh = await issueRefreshToken(tx, ctx, row.userId, row.familyId, meta);
    const access = await signAccessToken(ctx, row.user, row.familyId);
    return { tokens: { accessToken: access.token, accessTokenExpiresAt: access.expiresAt, refreshToken: refresh.token, refreshTokenExpiresAt: refresh.expiresAt }, userId: row.userId };
  });
  if ('error' in outcome) {
    throw new AppError('Unauthorized', outcome.error === 'reused' ? 'This session was ended because its refresh token was used twice. Sign in again.' : 'The session has expired. Sign in again.');
  }
  return outcome;
}

/**
 * The first session of an account that was just created with this password (first-run setup, an accepted
 * invitation): the console signs straight in. Through login, so the sign-in is recorded like any other.
 */
export async function signInNewAccount(ctx: SecretsContext & Pick<ServiceContext, 'meta'>, email: string, password: string): Promise<SignedIn> {
  const result = await login(ctx, { email, password });
  if (result.status !== 'SUCCESS') throw new AppError('InternalError', 'The account was created but sign-in failed: sign in.');
  return result;
}

/** Ends the caller's session (its whole refresh family). */
export async function logout(ctx: ServiceContext): Promise<void> {
  const actor = requireUser(ctx);
  await ctx.db.prisma.$transaction(async (tx) => {
    if (actor.sessionFamilyId) await tx.refreshToken.updateMany({ where: { familyId: actor.sessionFamilyId, revokedAt: null }, data: { revokedAt: ctx.now } });
    await recordAudit(tx, { tenantId: actor.tenantId, action: 'Logout', entityType: 'User', entityId: actor.userId, entity: actor.email }, auditActor(ctx), ctx.now);
  });
}

/** Revokes every session of a user, optionally keeping one (the caller's own, after a password change). */
export async function revokeSessions(tx: Tx, userId: string, now: Date, keepFamilyId?: string | null): Promise<void> {
  await tx.refreshToken.updateMany({ where: { userId, revokedAt: null, ...(keepFamilyId ? { familyId: { not: keepFamilyId } } : {}) }, data: { revokedAt: now } });
}

/** The weaker of two roles. */
const lesserRole = (a: Role, b: Role): Role => (a === 'CompanyAdmin' && b === 'CompanyAdmin' ? 'CompanyAdmin' : 'ReadOnly');

/**
 * Resolves `Authorization: Bearer <access token>` or `X-Api-Key`. A deactivated user, an ended session,
 * a revoked key, or a key whose owner is missing or deactivated authenticates nobody.
 */
export async function authenticate(ctx: SecretsContext, credentials: { bearer?: string | null; apiKey?: string | null }): Promise<Actor | null> {
  if (credentials.apiKey) {
    const key = await ctx.db.prisma.apiKey.findUnique({ where: { digest: ctx.secrets.digest(`apikey:${credentials.apiKey.trim()}`) }, include: { createdBy: { select: { deactivatedAt: true, role: true, tenantId: true } } } });
    if (!key || key.revokedAt || !key.createdBy || key.createdBy.deactivatedAt || key.createdBy.tenantId !== key.tenantId) throw new AppError('Unauthorized', 'Invalid or revoked API key.');
    // Usage time, at most once a minute per key: no write on every request.
    if (!key.lastUsedAt || ctx.now.getTime() - key.lastUsedAt.getTime() > 60_000) {
      await ctx.db.prisma.apiKey.update({ where: { id: key.id }, data: { lastUsedAt: ctx.now } });
    }
    // A key never acts above its human owner's current role: an admin key of an owner demoted to read-only reads only.
    return { kind: 'apiKey', apiKeyId: key.id, tenantId: key.tenantId, role: lesserRole(key.role, key.createdBy.role), label: `api-key ${key.name} (${key.hint})` };
  }
  if (!credentials.bearer) return null;
  let payload;
  try {
    ({ payload } = await jwtVerify(credentials.bearer, ctx.secrets.accessTokenKey, { algorithms: ['HS256'], issuer: ISSUER, currentDate: ctx.now }));
  } catch {
    throw new AppError('Unauthorized', 'The access token is invalid or expired. Refresh the session or sign in again.');
  }
  const user = await ctx.db.prisma.user.findUnique({ where: { id: String(payload.sub) }, select: { id: true, tenantId: true, role: true, email: true, deactivatedAt: true } });
  const family = typeof payload.fam === 'string' ? payload.fam : null;
  const live = family ? await ctx.db.prisma.refreshToken.findFirst({ where: { familyId: family, revokedAt: null }, select: { id: true } }) : null;
  if (!user || user.deactivatedAt || !live) throw new AppError('Unauthorized', 'The session has ended. Sign in again.');
  return { kind: 'user', userId: user.id, tenantId: user.tenantId, role: user.role, email: user.email, sessionFamilyId: family };
}
