import { builder, RoleEnum } from '../builder.js';
import { serviceCtx } from '../context.js';
import { arrayConnection } from '../connections.js';
import { queryFromInfo } from '@pothos/plugin-prisma';
import {
  acceptInvitationAndSignIn, INVITATION_COLUMNS, invitationByToken, invitationTokenDigest, inviteUser, listInvitations, revokeInvitation,
} from '../../services/invitations.js';
import { sessionPayloadType, signInStep, signedInPayload } from './account.js';

type InvitationShape = Awaited<ReturnType<typeof listInvitations>>[number];

// Select mode: never the token digest. The inviter comes through the createdBy relation, loaded with the invitation
// rows (one query for the list, not one per invitation: test/graphql-statements.test.ts).
const InvitationType = builder.prismaObject('Invitation', {
  select: INVITATION_COLUMNS,
  description: 'A pending invitation of a team member by email (the link itself is only in the email).',
  fields: (t) => ({
    id: t.exposeID('id'),
    email: t.exposeString('email'),
    name: t.exposeString('name', { nullable: true }),
    role: t.field({ type: RoleEnum, resolve: (invitation) => invitation.role }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    invitedBy: t.string({ nullable: true, select: { createdBy: { select: { email: true } } }, resolve: (invitation) => invitation.createdBy?.email ?? null }),
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
  invitations: t.connection(
    {
      type: InvitationType,
      description: 'Pending invitations of your company, newest first. first/last: 0–100 (default 100).',
      resolve: async (_root, args, ctx, info) =>
        arrayConnection(args, await listInvitations(serviceCtx(ctx), queryFromInfo({ context: ctx, info, paths: [['nodes'], ['edges', 'node']], typeName: 'Invitation' }))),
    },
    { name: 'InvitationConnection' },
    { name: 'InvitationEdge' },
  ),
  invitation: t.field({
    type: InvitationPreviewType,
    nullable: true,
    description: 'Public: the invitation of a link token while it can be accepted; null otherwise (never why).',
    skipTypeScopes: true,
    args: { token: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => invitationByToken(serviceCtx(ctx), args.token),
  }),
}));

const InviteUserInput = builder.inputType('InviteUserInput', {
  fields: (t) => ({ email: t.string({ required: true }), role: t.field({ type: RoleEnum, required: true }), name: t.string() }),
});
const RevokeInvitationInput = builder.inputType('RevokeInvitationInput', { fields: (t) => ({ id: t.id({ required: true }) }) });
const AcceptInvitationInput = builder.inputType('AcceptInvitationInput', {
  fields: (t) => ({ token: t.string({ required: true, description: 'From the link in the email.' }), password: t.string({ required: true }), name: t.string() }),
});
const invitationPayload = (name: string) =>
  builder.objectRef<InvitationShape>(name).implement({ fields: (t) => ({ invitation: t.field({ type: InvitationType, resolve: (invitation) => invitation }) }) });

builder.mutationFields((t) => ({
  inviteUser: t.field({
    type: invitationPayload('InviteUserPayload'),
    description: 'Emails a one-time link (7 days) to join your company with this role (COMPANY_ADMIN). A pending invitation of the same address is replaced.',
    args: { input: t.arg({ type: InviteUserInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      inviteUser({ ...serviceCtx(ctx), publicUrl: ctx.deps.config.publicUrl, transport: ctx.deps.jobs?.transport }, input),
  }),
  revokeInvitation: t.field({
    type: invitationPayload('RevokeInvitationPayload'),
    description: 'Its link stops working (COMPANY_ADMIN).',
    args: { input: t.arg({ type: RevokeInvitationInput, required: true }) },
    resolve: (_root, { input }, ctx) => revokeInvitation(serviceCtx(ctx), String(input.id)),
  }),
  acceptInvitation: t.field({
    type: sessionPayloadType('AcceptInvitationPayload'),
    description: 'Public: creates the invited member with this password and signs in. The link works once.',
    skipTypeScopes: true,
    args: { input: t.arg({ type: AcceptInvitationInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      await signInStep(ctx, `invitation:${invitationTokenDigest(ctx.deps, input.token)}`);
      const signedIn = await acceptInvitationAndSignIn(serviceCtx(ctx), input);
      return signedInPayload(ctx, signedIn, signedIn.email);
    },
  }),
}));
