import { Button, Group, Paper, Select, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconMailPlus } from '@tabler/icons-react';
import { useQuery } from 'urql';
import { readFragment } from '../../../graphql';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCanManage, useCurrentUser } from '../../auth/hooks/useCurrentUser';
import { InviteMemberModal } from '../components/InviteMemberModal';
import { ROLE_OPTIONS, roleLabel, type Role } from '../components/RoleSelect';
import {
  DeactivateUserMutation,
  InvitationsQuery,
  ReactivateUserMutation,
  ResetUserMfaMutation,
  RevokeInvitationMutation,
  SendPasswordResetLinkMutation,
  UnlockUserMutation,
  UpdateUserMutation,
  UsersQuery,
} from '../graphql/documents';
import { InvitationFields, InvitationsTable, type Invitation } from '../components/InvitationsTable';
import { MembersTable, TeamMemberFields, type Member } from '../components/MembersTable';
import { emailedNotice, useEmailDeliveryMode } from '../../outbox/delivery';

export function TeamPage() {
  const [result, reload] = useQuery({ query: UsersQuery });
  const [inviting, invitation] = useDisclosure(false);
  const canManage = useCanManage();

  return (
    <>
      <PageHeader
        title="Team"
        description="Everyone who can sign in to this console. Admins manage everything; read-only members can look but not change. Members join through an emailed link, so only the owner of an address can make an account for it."
        actions={
          <Group gap="xs">
            <Button leftSection={<IconMailPlus size={16} />} onClick={invitation.open} disabled={!canManage} title={canManage ? 'Email a one-time link to join' : 'Only admins can invite members'}>
              Invite by email
            </Button>
          </Group>
        }
      />
      <InviteMemberModal opened={inviting} onClose={invitation.close} />
      <Paper>
        <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })} isEmpty={(data) => data.users.nodes.length === 0} empty={<EmptyState title="No team members yet" />}>
          {(data) => (
            <MembersTable
              members={data.users.nodes}
              renderRole={(member) => <MemberRole member={member} canManage={canManage} />}
              renderActions={(member) => <MemberActions member={member} canManage={canManage} />}
            />
          )}
        </QueryState>
      </Paper>
      <PendingInvitations canManage={canManage} />
    </>
  );
}

/** Invitations sent and not yet accepted (hidden while there are none). */
function PendingInvitations({ canManage }: { canManage: boolean }) {
  const [result] = useQuery({ query: InvitationsQuery });
  const invitations = result.data?.invitations.nodes ?? [];
  if (invitations.length === 0) return null;
  return (
    <Paper mt="lg" p="md">
      <Text fw={600} mb="sm">
        Pending invitations
      </Text>
      <InvitationsTable invitations={invitations} renderActions={(item) => canManage && <RevokeInvitation invitation={item} />} />
    </Paper>
  );
}

function RevokeInvitation({ invitation }: { invitation: Invitation }) {
  const revoke = useApiMutation(RevokeInvitationMutation, { success: (d) => `The invitation of ${readFragment(InvitationFields, d.revokeInvitation.invitation).email} was revoked.` });
  return (
    <ConfirmAction
      size="xs"
      label="Revoke"
      title={`Revoke the invitation of ${invitation.email}?`}
      message="The link in their email stops working. You can invite them again later."
      confirmLabel="Revoke"
      busy={revoke.saving}
      onConfirm={() => revoke.run({ id: invitation.id })}
    />
  );
}

function useEditable(member: Member, canManage: boolean) {
  const { user } = useCurrentUser();
  return canManage && member.id !== user.id && member.active;
}

function MemberRole({ member, canManage }: { member: Member; canManage: boolean }) {
  const update = useApiMutation(UpdateUserMutation, { success: (d) => `${readFragment(TeamMemberFields, d.updateUser.user).email} is now ${roleLabel(readFragment(TeamMemberFields, d.updateUser.user).role)}.` });
  if (!useEditable(member, canManage)) return <Text size="sm">{roleLabel(member.role)}</Text>;
  return (
    <Select
      aria-label={`Role of ${member.email}`}
      size="xs"
      w={150}
      data={ROLE_OPTIONS.map((option) => ({ value: option.value, label: roleLabel(option.value) }))}
      value={member.role}
      allowDeselect={false}
      disabled={update.saving}
      onChange={(role) => role && role !== member.role && void update.run({ id: member.id, role: role as Role })}
    />
  );
}

function MemberActions({ member, canManage }: { member: Member; canManage: boolean }) {
  const deactivate = useApiMutation(DeactivateUserMutation, { success: (d) => `${readFragment(TeamMemberFields, d.deactivateUser.user).email} was deactivated.` });
  const reactivate = useApiMutation(ReactivateUserMutation, { success: (d) => `${readFragment(TeamMemberFields, d.reactivateUser.user).email} can sign in again.` });
  const editable = useEditable(member, canManage);
  return (
    <Group gap={6} wrap="wrap" justify="flex-end">
      {editable && <RecoveryActions member={member} />}
      {editable && (
        <ConfirmAction
          size="xs"
          label="Deactivate"
          title={`Deactivate ${member.email}?`}
          message="They are signed out everywhere, cannot sign in until an admin reactivates them, and their API keys stop working for good. Their activity log entries are kept."
          confirmLabel="Deactivate"
          busy={deactivate.saving}
          onConfirm={() => deactivate.run({ id: member.id })}
        />
      )}
      {canManage && !member.active && (
        <ConfirmAction
          size="xs"
          label="Reactivate"
          title={`Reactivate ${member.email}?`}
          message="They can sign in again with their password. Their old sessions and API keys stay revoked."
          confirmLabel="Reactivate"
          busy={reactivate.saving}
          onConfirm={() => reactivate.run({ id: member.id })}
        />
      )}
    </Group>
  );
}

/** Helping a member who cannot sign in: lift a lock, turn off a lost authenticator, email a reset link (audited). */
function RecoveryActions({ member }: { member: Member }) {
  const unlock = useApiMutation(UnlockUserMutation, { success: (d) => `${readFragment(TeamMemberFields, d.unlockUser.user).email} can sign in again.` });
  const resetMfa = useApiMutation(ResetUserMfaMutation, { success: (d) => `Two-factor authentication of ${readFragment(TeamMemberFields, d.resetUserMfa.user).email} is off.` });
  const mode = useEmailDeliveryMode();
  const sendLink = useApiMutation(SendPasswordResetLinkMutation, { success: (d) => emailedNotice(mode, 'Reset link', readFragment(TeamMemberFields, d.sendPasswordResetLink.user).email) });
  return (
    <>
      {member.lockedUntil && (
        <ConfirmAction
          size="xs"
          label="Unlock"
          danger={false}
          title={`Unlock ${member.email}?`}
          message="Sign-in was paused after too many failed attempts. Unlocking lets anyone with the right password sign in at once: make sure the attempts were theirs (see the activity log)."
          confirmLabel="Unlock"
          busy={unlock.saving}
          onConfirm={() => unlock.run({ id: member.id })}
        />
      )}
      {member.mfaEnabled && (
        <ConfirmAction
          size="xs"
          label="Reset MFA"
          title={`Turn off two-factor authentication of ${member.email}?`}
          message="For a member who lost their authenticator and backup codes. They sign in with their password alone until they enrol again on their profile. Confirm who is asking first."
          confirmLabel="Turn off MFA"
          busy={resetMfa.saving}
          onConfirm={() => resetMfa.run({ id: member.id })}
        />
      )}
      <ConfirmAction
        size="xs"
        label="Send reset link"
        danger={false}
        title={`Email ${member.email} a password reset link?`}
        message="The link works once, within 30 minutes. Using it sets a new password and signs them out everywhere; their current password works until then."
        confirmLabel="Send link"
        busy={sendLink.saving}
        onConfirm={() => sendLink.run({ id: member.id })}
      />
    </>
  );
}
