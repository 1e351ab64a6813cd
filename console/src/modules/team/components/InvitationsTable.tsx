import { Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { graphql, readFragment, type FragmentOf, type ResultOf } from '../../../graphql';
import { formatDate, relativeTime } from '../../../lib/format';
import { DataTable } from '../../../ui/DataTable';
import { roleLabel } from './RoleSelect';

/** What the pending-invitations list shows of an invitation. */
export const InvitationFields = graphql(`
  fragment InvitationFields on Invitation {
    id
    email
    name
    role
    invitedBy
    createdAt
    expiresAt
  }
`);

export type Invitation = ResultOf<typeof InvitationFields>;

/** Invitations sent and not yet accepted; the page supplies each row's actions. */
export function InvitationsTable({ invitations, renderActions }: { invitations: readonly FragmentOf<typeof InvitationFields>[]; renderActions: (invitation: Invitation) => ReactNode }) {
  const records = readFragment(InvitationFields, invitations);
  return (
    <DataTable
      records={records}
      minWidth={640}
      columns={[
        {
          accessor: 'email',
          title: 'Email',
          render: (invitation) => (
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
          ),
        },
        { accessor: 'role', title: 'Role', render: (invitation) => <Text size="sm">{roleLabel(invitation.role)}</Text> },
        {
          accessor: 'createdAt',
          title: 'Invited',
          render: (invitation) => (
            <Text size="sm" c="dimmed">
              {relativeTime(invitation.createdAt)}
              {invitation.invitedBy ? ` by ${invitation.invitedBy}` : ''}
            </Text>
          ),
        },
        { accessor: 'expiresAt', title: 'Expires', render: (invitation) => <Text size="sm">{formatDate(invitation.expiresAt)}</Text> },
        { accessor: 'actions', title: '', render: (invitation) => renderActions(invitation) },
      ]}
    />
  );
}
