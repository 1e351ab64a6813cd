import { builder, RoleEnum } from '../builder.js';
import { serviceCtx, type GraphQLContext } from '../context.js';
import { AppError } from '../../domain/errors.js';
import { requireUser } from '../../services/auth/actor.js';
import { confirmMfaEnrollment, disableMfa, startMfaEnrollment } from '../../services/auth/mfa.js';
import { login, logout, refreshSession, type SessionTokens } from '../../services/auth/sessions.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { REFRESH_COOKIE, refreshCookieAttributes } from '../../session-cookie.js';
import {
  PUBLIC_USER_FIELDS,
  changePassword,
  getNotificationPreferences,
  needsSetup,
  setup,
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

export type PublicUser = Prisma.UserGetPayload<{ select: typeof PUBLIC_USER_FIELDS }>;

export const UserType = builder.objectRef<PublicUser>('User').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    email: t.exposeString('email'),
    name: t.exposeString('name', { nullable: true }),
    role: t.field({ type: RoleEnum, resolve: (user) => user.role }),
    active: t.boolean({ resolve: (user) => user.deactivatedAt === null }),
    deactivatedAt: t.expose('deactivatedAt', { type: 'DateTime', nullable: true }),
    lastLoginAt: t.expose('lastLoginAt', { type: 'DateTime', nullable: true }),
    mfaEnabled: t.boolean({ resolve: (user) => user.mfaSecretEncrypted !== null }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const NotificationPreferencesType = builder.objectRef<NotificationPreferences>('NotificationPreferences').implement({
  fields: (t) => ({
    digestEmailEnabled: t.exposeBoolean('digestEmailEnabled'),
    expiryEmailEnabled: t.exposeBoolean('expiryEmailEnabled'),
  }),
});

const LoginStatus = builder.enumType('LoginStatus', { values: ['SUCCESS', 'MFA_REQUIRED'] as const });

interface SessionPayload {
  status: 'SUCCESS' | 'MFA_REQUIRED';
  accessToken: string | null;
  accessTokenExpiresAt: Date | null;
  userId: string | null;
}
export const SessionPayloadType = builder.objectRef<SessionPayload>('SessionPayload').implement({
  description: 'The access token goes in `Authorization: Bearer …` (15 minutes); the refresh token is set as an httpOnly cookie.',
  fields: (t) => ({
    status: t.field({ type: LoginStatus, resolve: (p) => p.status }),
    accessToken: t.exposeString('accessToken', { nullable: true }),
    accessTokenExpiresAt: t.expose('accessTokenExpiresAt', { type: 'DateTime', nullable: true }),
    user: t.field({
      type: UserType,
      nullable: true,
      resolve: (p, _args, ctx) => (p.userId ? ctx.deps.db.prisma.user.findUnique({ where: { id: p.userId }, select: PUBLIC_USER_FIELDS }) : null),
    }),
  }),
});

export const sessionPayload = async (ctx: GraphQLContext, tokens: SessionTokens, userId: string): Promise<SessionPayload> => {
  await setRefreshCookie(ctx, tokens.refreshToken, tokens.refreshTokenExpiresAt);
  return { status: 'SUCCESS', accessToken: tokens.accessToken, accessTokenExpiresAt: tokens.accessTokenExpiresAt, userId };
};

const MfaEnrollmentType = builder.objectRef<{ secret: string; otpauthUrl: string }>('MfaEnrollment').implement({
  fields: (t) => ({ secret: t.exposeString('secret'), otpauthUrl: t.exposeString('otpauthUrl', { description: 'Render as a QR code for the authenticator app.' }) }),
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
    resolve: (_root, _args, ctx) => ctx.deps.db.prisma.user.findUniqueOrThrow({ where: { id: requireUser(ctx).userId }, select: PUBLIC_USER_FIELDS }),
  }),
  notificationPreferences: t.field({
    type: NotificationPreferencesType,
    authScopes: { user: true },
    resolve: (_root, _args, ctx) => getNotificationPreferences(serviceCtx(ctx)),
  }),
}));

/** Password, refresh and second-factor steps share the sign-in budgets (per client IP and per account). */
export const signInStep = (ctx: GraphQLContext, account: string) => ctx.deps.rateLimits.signIn(ctx.meta.ip ?? 'unknown', account);

builder.mutationFields((t) => ({
  setup: t.field({
    type: SessionPayloadType,
    description: 'First run only: creates the company and its first CompanyAdmin, and signs in. Refused once any user exists.',
    skipTypeScopes: true,
    args: {
      companyName: t.arg.string({ required: true }),
      keyPrefix: t.arg.string({ required: true }),
      email: t.arg.string({ required: true }),
      password: t.arg.string({ required: true }),
      name: t.arg.string(),
    },
    resolve: async (_root, args, ctx) => {
      await setup(serviceCtx(ctx), args);
      const result = await login(serviceCtx(ctx), { email: args.email, password: args.password });
      if (result.status !== 'SUCCESS') throw new AppError('InternalError', 'Setup completed but sign-in failed.');
      return sessionPayload(ctx, result.tokens, result.userId);
    },
  }),
  login: t.field({
    type: SessionPayloadType,
    description: 'Email and password; when MFA is on, call again with totpCode or backupCode (status MFA_REQUIRED tells you to).',
    skipTypeScopes: true,
    args: { email: t.arg.string({ required: true }), password: t.arg.string({ required: true }), totpCode: t.arg.string(), backupCode: t.arg.string() },
    resolve: async (_root, args, ctx) => {
      await signInStep(ctx, `email:${args.email}`);
      const result = await login(serviceCtx(ctx), args);
      if (result.status === 'MFA_REQUIRED') return { status: 'MFA_REQUIRED' as const, accessToken: null, accessTokenExpiresAt: null, userId: null };
      return sessionPayload(ctx, result.tokens, result.userId);
    },
  }),
  refreshSession: t.field({
    type: SessionPayloadType,
    description: 'Exchanges the refresh cookie for a new access token and a new refresh cookie (rotation). A reused refresh token ends the session.',
    skipTypeScopes: true,
    resolve: async (_root, _args, ctx) => {
      const refreshToken = await readRefreshCookie(ctx);
      if (!refreshToken) throw new AppError('Unauthorized', 'No session: sign in.');
      await signInStep(ctx, `refresh:${refreshToken}`);
      try {
        const tokens = await refreshSession(serviceCtx(ctx), refreshToken);
        const { sub } = JSON.parse(Buffer.from(tokens.accessToken.split('.')[1], 'base64url').toString()) as { sub: string };
        return sessionPayload(ctx, tokens, sub);
      } catch (error) {
        await setRefreshCookie(ctx, null);
        throw error;
      }
    },
  }),
  logout: t.boolean({
    skipTypeScopes: true,
    authScopes: { user: true },
    resolve: async (_root, _args, ctx) => {
      await logout(serviceCtx(ctx));
      await setRefreshCookie(ctx, null);
      return true;
    },
  }),
  changePassword: t.boolean({
    description: 'Needs the current password; ends your other sessions.',
    skipTypeScopes: true,
    authScopes: { user: true },
    args: { currentPassword: t.arg.string({ required: true }), newPassword: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => {
      await changePassword(serviceCtx(ctx), args);
      return true;
    },
  }),
  startMfaEnrollment: t.field({
    type: MfaEnrollmentType,
    skipTypeScopes: true,
    authScopes: { user: true },
    resolve: (_root, _args, ctx) => startMfaEnrollment(serviceCtx(ctx)),
  }),
  confirmMfaEnrollment: t.stringList({
    description: 'Confirms with a code from the authenticator; returns 10 one-use backup codes (shown once).',
    skipTypeScopes: true,
    authScopes: { user: true },
    args: { code: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => {
      await signInStep(ctx, `user:${requireUser(ctx).userId}`);
      return (await confirmMfaEnrollment(serviceCtx(ctx), args.code)).backupCodes;
    },
  }),
  disableMfa: t.boolean({
    skipTypeScopes: true,
    authScopes: { user: true },
    args: { totpCode: t.arg.string(), backupCode: t.arg.string() },
    resolve: async (_root, args, ctx) => {
      await signInStep(ctx, `user:${requireUser(ctx).userId}`);
      await disableMfa(serviceCtx(ctx), args);
      return true;
    },
  }),
  updateNotificationPreferences: t.field({
    type: NotificationPreferencesType,
    description: 'Changes only your own preferences.',
    skipTypeScopes: true,
    authScopes: { user: true },
    args: { digestEmailEnabled: t.arg.boolean(), expiryEmailEnabled: t.arg.boolean() },
    resolve: (_root, args, ctx) =>
      updateNotificationPreferences(serviceCtx(ctx), {
        ...(args.digestEmailEnabled !== null && args.digestEmailEnabled !== undefined ? { digestEmailEnabled: args.digestEmailEnabled } : {}),
        ...(args.expiryEmailEnabled !== null && args.expiryEmailEnabled !== undefined ? { expiryEmailEnabled: args.expiryEmailEnabled } : {}),
      }),
  }),
}));
