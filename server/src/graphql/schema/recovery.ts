import { builder } from '../builder.js';
import { AppError } from '../../domain/errors.js';
import { serviceCtx, type GraphQLContext } from '../context.js';
import { completePasswordReset, passwordResetByToken, requestPasswordReset } from '../../services/auth/password-reset.js';
import { resetTokenDigest } from '../../services/auth/reset-tokens.js';
import { resetMemberMfa, sendMemberResetLink, unlockMember } from '../../services/auth/recovery.js';
import { login } from '../../services/auth/sessions.js';
import { ResetPasswordPayloadType, UserType, loginPayload, signInStep, type PublicUser } from './account.js';
import { EmailDeliveryModeEnum, emailDeliveryMode } from './email.js';

// Account recovery: "Forgot password?" and the reset page (public), and an admin's unlock, MFA reset and reset link
// for a member (Team page). Services: services/auth/password-reset.ts and recovery.ts.

const mailCtx = (ctx: GraphQLContext) => ({ ...serviceCtx(ctx), publicUrl: ctx.deps.config.publicUrl, transport: ctx.deps.jobs?.transport });

const PasswordResetPreviewType = builder.objectRef<{ email: string; expiresAt: Date; reason: string }>('PasswordResetPreview').implement({
  description: 'What the reset page shows of a usable reset link.',
  fields: (t) => ({
    email: t.exposeString('email'),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    passwordMustChange: t.boolean({ description: 'The link came from a sign-in with a password someone else set.', resolve: (reset) => reset.reason === 'must-change' }),
  }),
});

builder.queryFields((t) => ({
  passwordReset: t.field({
    type: PasswordResetPreviewType,
    nullable: true,
    description: 'Public: the reset link of a token while it can be used; null otherwise (never why).',
    skipTypeScopes: true,
    args: { token: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => passwordResetByToken(serviceCtx(ctx), args.token),
  }),
}));

const RequestPasswordResetInput = builder.inputType('RequestPasswordResetInput', { fields: (t) => ({ email: t.string({ required: true }) }) });
const ResetPasswordInput = builder.inputType('ResetPasswordInput', {
  fields: (t) => ({ token: t.string({ required: true, description: 'From the link in the email, or PasswordChangeRequired.resetToken.' }), password: t.string({ required: true }) }),
});
const MemberInput = (name: string) => builder.inputType(name, { fields: (t) => ({ id: t.id({ required: true, description: 'The member (a user of your company).' }) }) });

const RequestPasswordResetPayload = builder.objectRef<{ email: string; mode: 'POSTMARK' | 'DEVELOPMENT' }>('RequestPasswordResetPayload').implement({
  fields: (t) => ({
    message: t.string({
      resolve: (payload) =>
        payload.mode === 'POSTMARK'
          ? `If ${payload.email} belongs to an account, a link to choose a new password is on its way. It works once, within 30 minutes.`
          : `If ${payload.email} belongs to an account, a link to choose a new password is kept in this server's email outbox: no mail provider is configured, so nothing is emailed. It works once, within 30 minutes.`,
    }),
    emailDeliveryMode: t.field({
      type: EmailDeliveryModeEnum,
      description: 'DEVELOPMENT: no mail provider is configured; the link is only kept in the outbox (an admin reads it on the Emails page, the operator with `pnpm cli outbox:list --kind password-reset --body`).',
      resolve: (payload) => payload.mode,
    }),
  }),
});
const memberPayload = <T extends { user: PublicUser }>(name: string, extra?: (t: any) => Record<string, unknown>) =>
  builder.objectRef<T>(name).implement({ fields: (t) => ({ user: t.field({ type: UserType, resolve: (payload) => payload.user }), ...extra?.(t) }) });

builder.mutationFields((t) => ({
  requestPasswordReset: t.field({
    type: RequestPasswordResetPayload,
    description: 'Public "Forgot password?": emails a single-use link (30 minutes) when the address belongs to an active account. The answer is the same either way.',
    skipTypeScopes: true,
    args: { input: t.arg({ type: RequestPasswordResetInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      await signInStep(ctx, `reset:${input.email}`);
      await requestPasswordReset(mailCtx(ctx), input);
      return { email: input.email.trim().toLowerCase(), mode: emailDeliveryMode(ctx) };
    },
  }),
  resetPassword: t.field({
    type: ResetPasswordPayloadType,
    description: 'Public: sets a new password with a reset link (it works once), ends every session of the user, lifts a sign-in lock, and signs in (MfaRequired when MFA is on).',
    skipTypeScopes: true,
    args: { input: t.arg({ type: ResetPasswordInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      await signInStep(ctx, `reset-token:${resetTokenDigest(ctx.deps, input.token)}`);
      const { email } = await completePasswordReset(serviceCtx(ctx), input);
      const signedIn = await loginPayload(ctx, await login(serviceCtx(ctx), { email, password: input.password }), email);
      if ('resetToken' in signedIn) throw new AppError('InternalError', 'The password was changed but sign-in failed: sign in.');
      return signedIn;
    },
  }),
  unlockUser: t.field({
    type: memberPayload<{ user: PublicUser; wasLocked: boolean }>('UnlockUserPayload', (f) => ({ wasLocked: f.exposeBoolean('wasLocked') })),
    description: 'Lifts the sign-in lock of a member of your company (COMPANY_ADMIN).',
    args: { input: t.arg({ type: MemberInput('UnlockUserInput'), required: true }) },
    resolve: (_root, { input }, ctx) => unlockMember(serviceCtx(ctx), String(input.id)),
  }),
  resetUserMfa: t.field({
    type: memberPayload<{ user: PublicUser; mfaWasEnabled: boolean }>('ResetUserMfaPayload', (f) => ({ mfaWasEnabled: f.exposeBoolean('mfaWasEnabled') })),
    description: 'Turns off MFA of a member who lost their authenticator and backup codes (COMPANY_ADMIN; not your own).',
    args: { input: t.arg({ type: MemberInput('ResetUserMfaInput'), required: true }) },
    resolve: (_root, { input }, ctx) => resetMemberMfa(serviceCtx(ctx), String(input.id)),
  }),
  sendPasswordResetLink: t.field({
    type: memberPayload<{ user: PublicUser }>('SendPasswordResetLinkPayload'),
    description: 'Emails a member of your company a single-use link (30 minutes) to choose a new password (COMPANY_ADMIN).',
    args: { input: t.arg({ type: MemberInput('SendPasswordResetLinkInput'), required: true }) },
    resolve: (_root, { input }, ctx) => sendMemberResetLink(mailCtx(ctx), String(input.id)),
  }),
}));
