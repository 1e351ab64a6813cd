import { Badge, Button, Group, Paper, Select, Stack, Table, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconMailPlus, IconUserPlus } from '@tabler/icons-react';
import { useQuery } from 'urql';
import type { FragmentOf } from '../../../graphql';
import { formatDate, relativeTime } from '../../../lib/format';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCanManage, useCurrentUser } from '../../auth/hooks/useCurrentUser';
import { AddMemberModal } from '../components/AddMemberModal';
import { InviteMemberModal } from '../components/InviteMemberModal';
import { ROLE_OPTIONS, roleLabel, type Role } from '../components/RoleSelect';
import {
  DeactivateUserMutation,
  InvitationsQuery,
  ReactivateUserMutation,
  RevokeInvitationMutation,
  UpdateUserMutation,
  UsersQuery,
  type InvitationFields,
  type TeamMemberFields,
} from '../graphql/documents';
import { refetchOn } from '../../../lib/client';
import { ResponsiveTable } from '../../../ui/ResponsiveTable';

export function TeamPage() {
  const [result, reload] = useQuery({ query: UsersQuery, context: refetchOn('User') });
  const [adding, { open, close }] = useDisclosure(false);
  const [inviting, invitation] = useDisclosure(false);
  const canManage = useCanManage();

  return (
    <>
      <PageHeader
        title="Team"
        description="Everyone who can sign in to this console. Admins manage everything; read-only members can look but not change."
        actions={
          <Group gap="xs">
            <Button variant="default" leftSection={<IconUserPlus size={16} />} onClick={open} disabled={!canManage} title={canManage ? 'Add a member with an initial password' : 'Only admins can add members'}>
              Add member
            </Button>
            <Button leftSection={<IconMailPlus size={16} />} onClick={invitation.open} disabled={!canManage} title={canManage ? 'Email a one-time link to join' : 'Only admins can invite members'}>
              Invite by email
            </Button>
          </Group>
        }
      />
      <AddMemberModal opened={adding} onClose={close} />
      <InviteMemberModal opened={inviting} onClose={invitation.close} />
      <Paper>
        <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })} isEmpty={(data) => data.users.nodes.length === 0} empty={<EmptyState title="No team members yet" />}>
          {(data) => (
            <ResponsiveTable minWidth={760}>
              <Table>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Member</Table.Th>
                    <Table.Th>Role</Table.Th>
                    <Table.Th>Two-factor</Table.Th>
                    <Table.Th>Last sign-in</Table.Th>
                    <Table.Th aria-label="Actions" />
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {data.users.nodes.map((member) => (
                    <MemberRow key={member.id} member={member} canManage={canManage} />
                  ))}
                </Table.Tbody>
              </Table>
            </ResponsiveTable>
          )}
        </QueryState>
      </Paper>
      <PendingInvitations canManage={canManage} />
    </>
  );
}

/** Invitations sent and not yet accepted (hidden while there are none). */
function PendingInvitations({ canManage }: { canManage: boolean }) {
  const [result] = useQuery({ query: InvitationsQuery, context: refetchOn('Invitation') });
  const invitations = result.data?.invitations.nodes ?? [];
  if (invitations.length === 0) return null;
  return (
    <Paper mt="lg" p="md">
      <Text fw={600} mb="sm">
        Pending invitations
      </Text>
      <ResponsiveTable minWidth={640}>
        <Table>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Email</Table.Th>
              <Table.Th>Role</Table.Th>
              <Table.Th>Invited</Table.Th>
              <Table.Th>Expires</Table.Th>
              <Table.Th aria-label="Actions" />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {invitations.map((item) => (
              <InvitationRow key={item.id} invitation={item} canManage={canManage} />
            ))}
          </Table.Tbody>
        </Table>
      </ResponsiveTable>
    </Paper>
  );
}

function InvitationRow({ invitation, canManage }: { invitation: FragmentOf<typeof InvitationFields>; canManage: boolean }) {
  const revoke = useApiMutation(RevokeInvitationMutation, { success: (d) => `The invitation of ${d.revokeInvitation.invitation.email} was revoked.`, invalidates: ['Invitation'] });
  return (
    <Table.Tr>
      <Table.Td>
        <Stack gap={0}>
          <Text size="sm" fw={500}>
            {invitation.name ?? invitation.email}
          </Text>
          {invitation.name && (
            <Text size="xs" c="dimmed">
              {invitation.email}
            </Text>
          )}
        </Stack>
      </Table.Td>
      <Table.Td>
        <Text size="sm">{roleLabel(invitation.role)}</Text>
      </Table.Td>
      <Table.Td>
        <Text size="sm" c="dimmed">
          {relativeTime(invitation.createdAt)}
          {invitation.invitedBy ? ` by ${invitation.invitedBy}` : ''}
        </Text>
      </Table.Td>
      <Table.Td>
        <Text size="sm">{formatDate(invitation.expiresAt)}</Text>
      </Table.Td>
      <Table.Td ta="right">
        {canManage && (
          <ConfirmAction
            size="xs"
            label="Revoke"
            title={`Revoke the invitation of ${invitation.email}?`}
            message="The link in their email stops working. You can invite them again later."
            confirmLabel="Revoke"
            busy={revoke.saving}
            onConfirm={() => revoke.run({ id: invitation.id })}
          />
        )}
      </Table.Td>
    </Table.Tr>
  );
}

function MemberRow({ member, canManage }: { member: FragmentOf<typeof TeamMemberFields>; canManage: boolean }) {
  const { user } = useCurrentUser();
  const isSelf = member.id === user.id;
  const update = useApiMutation(UpdateUserMutation, { success: (d) => `${d.updateUser.user.email} is now ${roleLabel(d.updateUser.user.role)}.` });
  const deactivate = useApiMutation(DeactivateUserMutation, { success: (d) => `${d.deactivateUser.user.email} was deactivated.` });
  const reactivate = useApiMutation(ReactivateUserMutation, { success: (d) => `${d.reactivateUser.user.email} can sign in again.` });
  const editable = canManage && !isSelf && member.active;

  return (
    <Table.Tr opacity={member.active ? 1 : 0.6}>
      <Table.Td>
        <Stack gap={0}>
          <Group gap={6}>
            <Text size="sm" fw={500}>
              {member.name ?? member.email}
            </Text>
            {isSelf && (
              <Badge size="xs" variant="light">
                you
              </Badge>
            )}
            {!member.active && (
              <Badge size="xs" color="gray">
                deactivated
              </Badge>
            )}
          </Group>
          {member.name && (
            <Text size="xs" c="dimmed">
              {member.email}
            </Text>
          )}
        </Stack>
      </Table.Td>
      <Table.Td>
        {editable ? (
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
        ) : (
          <Text size="sm">{roleLabel(member.role)}</Text>
        )}
      </Table.Td>
      <Table.Td>
        <Badge variant="light" color={member.mfaEnabled ? 'teal' : 'gray'}>
          {member.mfaEnabled ? 'On' : 'Off'}
        </Badge>
      </Table.Td>
      <Table.Td>
        <Text size="sm" c="dimmed">
          {relativeTime(member.lastLoginAt)}
        </Text>
      </Table.Td>
      <Table.Td ta="right">
        {editable && (
          <ConfirmAction
            size="xs"
            label="Deactivate"
            title={`Deactivate ${member.email}?`}
            message="They are signed out everywhere, cannot sign in again and their API keys stop working. Their activity log entries are kept."
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
      </Table.Td>
    </Table.Tr>
  );
}
