import { builder, RoleEnum } from '../builder.js';
import { serviceCtx } from '../context.js';
import { AppError } from '../../domain/errors.js';
import { login } from '../../services/auth/sessions.js';
import { acceptInvitation, invitationByToken, invitationTokenDigest, inviteUser, listInvitations, revokeInvitation } from '../../services/invitations.js';
import { SessionPayloadType, sessionPayload, signInStep } from './account.js';

interface InvitationShape {
  id: string;
  email: string;
  name: string | null;
  role: 'CompanyAdmin' | 'ReadOnly';
  expiresAt: Date;
  createdAt: Date;
  createdBy: { email: string; name: string | null } | null;
}

const InvitationType = builder.objectRef<InvitationShape>('Invitation').implement({
  description: 'A pending invitation of a team member by email (the link itself is only in the email).',
  fields: (t) => ({
    id: t.exposeID('id'),
    email: t.exposeString('email'),
    name: t.exposeString('name', { nullable: true }),
    role: t.field({ type: RoleEnum, resolve: (invitation) => invitation.role }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    invitedBy: t.string({ nullable: true, resolve: (invitation) => invitation.createdBy?.email ?? null }),
  }),
});

interface InvitationPreview {
  email: string;
  name: string | null;
  role: 'CompanyAdmin' | 'ReadOnly';
  expiresAt: Date;
  companyName: string;
}

const InvitationPreviewType = builder.objectRef<InvitationPreview>('InvitationPreview').implement({
  description: 'What the accept page shows of a usable invitation link.',
  fields: (t) => ({
    email: t.exposeString('email'),
    name: t.exposeString('name', { nullable: true }),
    role: t.field({ type: RoleEnum, resolve: (invitation) => invitation.role }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    companyName: t.exposeString('companyName'),
  }),
});

builder.queryFields((t) => ({
  invitations: t.field({
    type: [InvitationType],
    description: 'Pending invitations of your company, newest first.',
    resolve: (_root, _args, ctx) => listInvitations(serviceCtx(ctx)),
  }),
  invitation: t.field({
    type: InvitationPreviewType,
    nullable: true,
    description: 'Public: the invitation of a link token while it can be accepted; null otherwise (never why).',
    skipTypeScopes: true,
    args: { token: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => invitationByToken(serviceCtx(ctx), args.token),
  }),
}));

builder.mutationFields((t) => ({
  inviteUser: t.field({
    type: InvitationType,
    description: 'Emails a one-time link (7 days) to join your company with this role (CompanyAdmin). A pending invitation of the same address is replaced.',
    args: { email: t.arg.string({ required: true }), role: t.arg({ type: RoleEnum, required: true }), name: t.arg.string() },
    resolve: (_root, args, ctx) =>
      inviteUser({ ...serviceCtx(ctx), publicUrl: ctx.deps.config.publicUrl, transport: ctx.deps.jobs?.transport }, args),
  }),
  revokeInvitation: t.field({
    type: InvitationType,
    description: 'Its link stops working (CompanyAdmin).',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => revokeInvitation(serviceCtx(ctx), String(args.id)),
  }),
  acceptInvitation: t.field({
    type: SessionPayloadType,
    description: 'Public: creates the invited member with this password and signs in. The link works once.',
    skipTypeScopes: true,
    args: { token: t.arg.string({ required: true }), password: t.arg.string({ required: true }), name: t.arg.string() },
    resolve: async (_root, args, ctx) => {
      await signInStep(ctx, `invitation:${invitationTokenDigest(ctx.deps, args.token)}`);
      const user = await acceptInvitation(serviceCtx(ctx), args);
      const result = await login(serviceCtx(ctx), { email: user.email, password: args.password });
      if (result.status !== 'SUCCESS') throw new AppError('InternalError', 'The account was created but sign-in failed: sign in.');
      return sessionPayload(ctx, result.tokens, result.userId);
    },
  }),
}));
