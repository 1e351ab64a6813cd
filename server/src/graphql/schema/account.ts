import { builder, RoleEnum } from '../builder.js';
import { serviceCtx, type GraphQLContext } from '../context.js';
import { AppError } from '../../domain/errors.js';
import { requireUser } from '../../services/auth/actor.js';
import { confirmMfaEnrollment, disableMfa, startMfaEnrollment } from '../../services/auth/mfa.js';
import { memberLockedUntil } from '../../services/auth/recovery.js';
import { reauthenticate } from '../../services/auth/reauth.js';
import { login, logout, refreshSession, type LoginResult, type SessionTokens, type SignedIn } from '../../services/auth/sessions.js';
import { DEVICE_COOKIE_TTL_MS, issueDeviceToken, verifyDeviceToken } from '../../services/auth/devices.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { DEVICE_COOKIE, REFRESH_COOKIE, deviceCookieAttributes, refreshCookieAttributes } from '../../session-cookie.js';
import {
  PUBLIC_USER_FIELDS,
  changePassword,
  getNotificationPreferences,
  getOwnUser,
  needsSetup,
  publicUser,
  setupAndSignIn,
  updateNotificationPreferences,
  type NotificationPreferences,
} from '../../services/users.js';

/** The refresh token lives only in an httpOnly, SameSite=Strict cookie scoped to the GraphQL endpoint (session-cookie.ts). */
async function setRefreshCookie(ctx: GraphQLContext, token: string | null, expires?: Date) {
  const attributes = refreshCookieAttributes(ctx.deps.config.publicUrl);
  // Signing out clears it: an empty value that expired at the epoch.
  await ctx.cookies.set(token && expires ? { ...attributes, value: token, expires: expires.getTime() } : { ...attributes, value: '', expires: 0 });
}

const readRefreshCookie = async (ctx: GraphQLContext) => (await ctx.cookies.get(REFRESH_COOKIE))?.value || null;
const readDeviceCookie = async (ctx: GraphQLContext) => (await ctx.cookies.get(DEVICE_COOKIE))?.value || null;

/** After a successful password sign-in: this browser is trusted for `email` (a fresh device cookie, services/auth/devices.ts). */
async function trustThisBrowser(ctx: GraphQLContext, email: string) {
  const expires = ctx.now.getTime() + DEVICE_COOKIE_TTL_MS;
  await ctx.cookies.set({ ...deviceCookieAttributes(ctx.deps.config.publicUrl), value: issueDeviceToken(ctx.deps, email, ctx.now), expires });
}

export type PublicUser = Prisma.UserGetPayload<{ select: typeof PUBLIC_USER_FIELDS }>;

// Select mode: a user row is loaded with the public columns only, never its password hash.
export const UserType = builder.prismaObject('User', {
  select: PUBLIC_USER_FIELDS,
  fields: (t) => ({
    id: t.exposeID('id'),
    email: t.exposeString('email'),
    name: t.exposeString('name', { nullable: true }),
    role: t.field({ type: RoleEnum, resolve: (user) => user.role }),
    active: t.boolean({ resolve: (user) => user.deactivatedAt === null }),
    deactivatedAt: t.expose('deactivatedAt', { type: 'DateTime', nullable: true }),
    lastLoginAt: t.expose('lastLoginAt', { type: 'DateTime', nullable: true }),
    mfaEnabled: t.boolean({ resolve: (user) => user.mfaSecretEncrypted !== null }),
    lockedUntil: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'Until when sign-in is locked after too many failed attempts (an admin can unlock); null when it is not.',
      resolve: (user, _args, ctx) => memberLockedUntil({ db: ctx.deps.db, now: ctx.now }, user.email),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const NotificationPreferencesType = builder.objectRef<NotificationPreferences>('NotificationPreferences').implement({
  fields: (t) => ({
    digestEmailEnabled: t.exposeBoolean('digestEmailEnabled'),
    expiryEmailEnabled: t.exposeBoolean('expiryEmailEnabled'),
  }),
});

interface Session {
  accessToken: string;
  accessTokenExpiresAt: Date;
  userId: string;
}

const loadUser = (ctx: GraphQLContext, id: string) => publicUser(ctx.deps, id);

/** A signed-in session: the answer of login, setup, acceptInvitation and refreshSession. */
export const sessionPayloadType = (name: string) =>
  builder.objectRef<Session>(name).implement({
    description: 'The access token goes in `Authorization: Bearer …` (15 minutes); the refresh token is set as an httpOnly cookie.',
    fields: (t) => ({
      accessToken: t.exposeString('accessToken'),
      accessTokenExpiresAt: t.expose('accessTokenExpiresAt', { type: 'DateTime' }),
      user: t.field({ type: UserType, resolve: (session, _args, ctx) => loadUser(ctx, session.userId) }),
    }),
  });

const LoginSuccessType = sessionPayloadType('LoginSuccess');
const MfaRequiredType = builder.objectRef<{ mfaRequired: true }>('MfaRequired').implement({
  description: 'The password was right and the account has MFA on: call login again with totpCode or backupCode.',
  fields: (t) => ({ message: t.string({ resolve: () => 'Enter the code from your authenticator app, or a backup code.' }) }),
});
const PasswordChangeRequiredType = builder.objectRef<{ resetToken: string; expiresAt: Date }>('PasswordChangeRequired').implement({
  description: 'The password was right but someone else set it (the operator): choose a new one with resetPassword(input: { token: resetToken, … }). No session yet.',
  fields: (t) => ({
    resetToken: t.exposeString('resetToken', { description: 'Single use, 15 minutes.' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    message: t.string({ resolve: () => 'Your password was set by someone else: choose a new one.' }),
  }),
});
const LoginPayloadType = builder.unionType('LoginPayload', {
  types: [LoginSuccessType, MfaRequiredType, PasswordChangeRequiredType],
  resolveType: (payload) => ('mfaRequired' in payload ? MfaRequiredType : 'resetToken' in payload ? PasswordChangeRequiredType : LoginSuccessType),
});
/** After a password reset: signed in, or the second factor still due (the password no longer needs changing). */
export const ResetPasswordPayloadType = builder.unionType('ResetPasswordPayload', {
  types: [LoginSuccessType, MfaRequiredType],
  resolveType: (payload) => ('mfaRequired' in payload ? MfaRequiredType : LoginSuccessType),
});

/** The login union's answer for a sign-in outcome: a session (cookies set, browser trusted), or the step still due. */
export async function loginPayload(ctx: GraphQLContext, result: LoginResult, email: string) {
  if (result.status === 'MFA_REQUIRED') return { mfaRequired: true as const };
  if (result.status === 'PASSWORD_CHANGE_REQUIRED') return { resetToken: result.resetToken, expiresAt: result.expiresAt };
  return signedInPayload(ctx, result, email);
}

/** A new account's or a password sign-in's session: the refresh cookie set, then this browser trusted for `email`. */
export async function signedInPayload(ctx: GraphQLContext, signedIn: SignedIn, email: string): Promise<Session> {
  // The refresh cookie first: it is the one the session depends on.
  const session = await sessionPayload(ctx, signedIn.tokens, signedIn.userId);
  await trustThisBrowser(ctx, email);
  return session;
}

const sessionPayload = async (ctx: GraphQLContext, tokens: SessionTokens, userId: string): Promise<Session> => {
  await setRefreshCookie(ctx, tokens.refreshToken, tokens.refreshTokenExpiresAt);
  return { accessToken: tokens.accessToken, accessTokenExpiresAt: tokens.accessTokenExpiresAt, userId };
};

const StartMfaEnrollmentPayload = builder.objectRef<{ secret: string; otpauthUrl: string }>('StartMfaEnrollmentPayload').implement({
  fields: (t) => ({ secret: t.exposeString('secret'), otpauthUrl: t.exposeString('otpauthUrl', { description: 'Render as a QR code for the authenticator app.' }) }),
});

/** The payload of a self-service change: the signed-in user as it is now. */
const userPayload = (name: string) =>
  builder.objectRef<{ userId: string }>(name).implement({
    fields: (t) => ({ user: t.field({ type: UserType, resolve: (payload, _args, ctx) => loadUser(ctx, payload.userId) }) }),
  });
const ChangePasswordPayload = userPayload('ChangePasswordPayload');
const DisableMfaPayload = userPayload('DisableMfaPayload');
const ConfirmMfaEnrollmentPayload = builder.objectRef<{ userId: string; backupCodes: string[] }>('ConfirmMfaEnrollmentPayload').implement({
  fields: (t) => ({
    backupCodes: t.exposeStringList('backupCodes', { description: '10 one-use backup codes, shown once.' }),
    user: t.field({ type: UserType, resolve: (payload, _args, ctx) => loadUser(ctx, payload.userId) }),
  }),
});
const LogoutPayload = builder.objectRef<{ success: boolean }>('LogoutPayload').implement({
  fields: (t) => ({ success: t.exposeBoolean('success') }),
});
const UpdateNotificationPreferencesPayload = builder.objectRef<NotificationPreferences>('UpdateNotificationPreferencesPayload').implement({
  fields: (t) => ({ notificationPreferences: t.field({ type: NotificationPreferencesType, resolve: (preferences) => preferences }) }),
});

const SetupInput = builder.inputType('SetupInput', {
  fields: (t) => ({
    companyName: t.string({ required: true }),
    keyPrefix: t.string({ required: true }),
    email: t.string({ required: true }),
    password: t.string({ required: true }),
    name: t.string(),
  }),
});
const LoginInput = builder.inputType('LoginInput', {
  fields: (t) => ({
    email: t.string({ required: true }),
    password: t.string({ required: true }),
    totpCode: t.string({ description: 'The second step when MFA is on (or backupCode).' }),
    backupCode: t.string(),
  }),
});
const ChangePasswordInput = builder.inputType('ChangePasswordInput', {
  fields: (t) => ({ currentPassword: t.string({ required: true }), newPassword: t.string({ required: true }) }),
});
const ConfirmMfaEnrollmentInput = builder.inputType('ConfirmMfaEnrollmentInput', {
  fields: (t) => ({ code: t.string({ required: true, description: 'A code from the authenticator app.' }) }),
});
const DisableMfaInput = builder.inputType('DisableMfaInput', {
  description: 'One of totpCode or backupCode.',
  fields: (t) => ({ totpCode: t.string(), backupCode: t.string() }),
});
const ReauthenticateInput = builder.inputType('ReauthenticateInput', {
  description: 'Your password, and when MFA is on one of totpCode or backupCode.',
  fields: (t) => ({ password: t.string({ required: true }), totpCode: t.string(), backupCode: t.string() }),
});
const ReauthenticatePayload = builder.objectRef<{ reauthenticatedUntil: Date }>('ReauthenticatePayload').implement({
  fields: (t) => ({
    reauthenticatedUntil: t.expose('reauthenticatedUntil', { type: 'DateTime', description: 'Until when this session may do account-security actions without re-authenticating again.' }),
  }),
});
const UpdateNotificationPreferencesInput = builder.inputType('UpdateNotificationPreferencesInput', {
  description: 'Omitted fields stay unchanged.',
  fields: (t) => ({ digestEmailEnabled: t.boolean(), expiryEmailEnabled: t.boolean() }),
});

builder.queryFields((t) => ({
  needsSetup: t.boolean({
    description: 'True while no user exists: first-run setup is open.',
    skipTypeScopes: true,
    resolve: (_root, _args, ctx) => needsSetup(ctx.deps),
  }),
  me: t.field({
    type: UserType,
    authScopes: { user: true },
    resolve: (_root, _args, ctx) => getOwnUser(serviceCtx(ctx)),
  }),
  notificationPreferences: t.field({
    type: NotificationPreferencesType,
    authScopes: { user: true },
    resolve: (_root, _args, ctx) => getNotificationPreferences(serviceCtx(ctx)),
  }),
}));

/** Password, refresh and second-factor steps share the sign-in budgets (per client IP and per account). */
export const signInStep = (ctx: GraphQLContext, account: string) => ctx.deps.rateLimits.signIn(ctx.meta.ip ?? 'unknown', account);

/**
 * A password sign-in's budget: from a browser holding this account's device cookie, the cookie's own (both budgets
 * keyed by the cookie, so neither the account's budget nor a shared address's, which anyone can spend, holds it up);
 * from any other browser, the client IP's and the email's.
 */
async function passwordSignInStep(ctx: GraphQLContext, email: string, deviceToken: string | null) {
  const device = verifyDeviceToken(ctx.deps, email, deviceToken, ctx.now);
  if (device) await ctx.deps.rateLimits.signIn(`device:${device.id}`, `device:${device.id}`);
  else await signInStep(ctx, `email:${email}`);
}

builder.mutationFields((t) => ({
  setup: t.field({
    type: sessionPayloadType('SetupPayload'),
    description: 'First run only: creates the company and its first COMPANY_ADMIN, and signs in. Refused once any user exists.',
    skipTypeScopes: true,
    args: { input: t.arg({ type: SetupInput, required: true }) },
    resolve: async (_root, { input }, ctx) => signedInPayload(ctx, await setupAndSignIn(serviceCtx(ctx), input), input.email),
  }),
  login: t.field({
    type: LoginPayloadType,
    description: 'Email and password: LoginSuccess, MfaRequired when MFA is on (then call again with totpCode or backupCode), or PasswordChangeRequired.',
    skipTypeScopes: true,
    args: { input: t.arg({ type: LoginInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const deviceToken = await readDeviceCookie(ctx);
      await passwordSignInStep(ctx, input.email, deviceToken);
      return loginPayload(ctx, await login(serviceCtx(ctx), { ...input, deviceToken }), input.email);
    },
  }),
  refreshSession: t.field({
    type: sessionPayloadType('RefreshSessionPayload'),
    description: 'Exchanges the refresh cookie for a new access token and a new refresh cookie (rotation). A reused refresh token ends the session.',
    skipTypeScopes: true,
    resolve: async (_root, _args, ctx) => {
      const refreshToken = await readRefreshCookie(ctx);
      if (!refreshToken) throw new AppError('Unauthorized', 'No session: sign in.');
      await signInStep(ctx, `refresh:${refreshToken}`);
      try {
        const { tokens, userId } = await refreshSession(serviceCtx(ctx), refreshToken);
        return sessionPayload(ctx, tokens, userId);
      } catch (error) {
        await setRefreshCookie(ctx, null);
        throw error;
      }
    },
  }),
  logout: t.field({
    type: LogoutPayload,
    skipTypeScopes: true,
    authScopes: { user: true },
    resolve: async (_root, _args, ctx) => {
      await logout(serviceCtx(ctx));
      await setRefreshCookie(ctx, null);
      return { success: true };
    },
  }),
  changePassword: t.field({
    type: ChangePasswordPayload,
    description: 'Needs the current password; ends your other sessions.',
    skipTypeScopes: true,
    authScopes: { user: true },
    args: { input: t.arg({ type: ChangePasswordInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      await changePassword(serviceCtx(ctx), input);
      return { userId: requireUser(ctx).userId };
    },
  }),
  startMfaEnrollment: t.field({
    type: StartMfaEnrollmentPayload,
    description: 'A new authenticator secret, pending until confirmMfaEnrollment. Like every MFA change, needs a recent reauthenticate.',
    skipTypeScopes: true,
    authScopes: { user: true },
    resolve: (_root, _args, ctx) => startMfaEnrollment(serviceCtx(ctx)),
  }),
  confirmMfaEnrollment: t.field({
    type: ConfirmMfaEnrollmentPayload,
    description: 'Confirms with a code from the authenticator; answers with 10 one-use backup codes (shown once).',
    skipTypeScopes: true,
    authScopes: { user: true },
    args: { input: t.arg({ type: ConfirmMfaEnrollmentInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { userId } = requireUser(ctx);
      await signInStep(ctx, `user:${userId}`);
      const { backupCodes } = await confirmMfaEnrollment(serviceCtx(ctx), input.code);
      return { userId, backupCodes };
    },
  }),
  reauthenticate: t.field({
    type: ReauthenticatePayload,
    description:
      'Confirms your password (and a TOTP or backup code when MFA is on) for this session: account-security actions (API keys, turning MFA on or off, passwords, reset links, admin roles, webhook endpoints, key reissue) answer ReauthenticationRequired without it, and accept it for 10 minutes. A wrong answer counts towards the sign-in lockout, a right one never; more concurrent checks of one account than the lockout allows answer RateLimited (HTTP 429, Retry-After).',
    skipTypeScopes: true,
    authScopes: { user: true },
    args: { input: t.arg({ type: ReauthenticateInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { userId } = requireUser(ctx);
      await signInStep(ctx, `user:${userId}`);
      return reauthenticate(serviceCtx(ctx), input);
    },
  }),
  disableMfa: t.field({
    type: DisableMfaPayload,
    skipTypeScopes: true,
    authScopes: { user: true },
    args: { input: t.arg({ type: DisableMfaInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { userId } = requireUser(ctx);
      await signInStep(ctx, `user:${userId}`);
      await disableMfa(serviceCtx(ctx), input);
      return { userId };
    },
  }),
  updateNotificationPreferences: t.field({
    type: UpdateNotificationPreferencesPayload,
    description: 'Changes only your own preferences.',
    skipTypeScopes: true,
    authScopes: { user: true },
    args: { input: t.arg({ type: UpdateNotificationPreferencesInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      updateNotificationPreferences(serviceCtx(ctx), {
        ...(input.digestEmailEnabled !== null && input.digestEmailEnabled !== undefined ? { digestEmailEnabled: input.digestEmailEnabled } : {}),
        ...(input.expiryEmailEnabled !== null && input.expiryEmailEnabled !== undefined ? { expiryEmailEnabled: input.expiryEmailEnabled } : {}),
      }),
  }),
}));
