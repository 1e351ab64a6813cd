import { Badge, Group, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { graphql, readFragment, type FragmentOf, type ResultOf } from '../../../graphql';
import { formatDateTimeWithZone, relativeTime } from '../../../lib/format';
import { DataTable } from '../../../ui/DataTable';
import { useCurrentUser } from '../../auth/hooks/useCurrentUser';

/** What the team list shows of a member. */
export const TeamMemberFields = graphql(`
  fragment TeamMemberFields on User {
    id
    email
    name
    role
    active
    deactivatedAt
    lastLoginAt
    mfaEnabled
    lockedUntil
    createdAt
  }
`);

export type Member = ResultOf<typeof TeamMemberFields>;

/** The team list; the page supplies the role cell (editable for admins) and each row's actions. */
export function MembersTable({ members, renderRole, renderActions }: {
  members: readonly FragmentOf<typeof TeamMemberFields>[];
  renderRole: (member: Member) => ReactNode;
  renderActions: (member: Member) => ReactNode;
}) {
  const records = readFragment(TeamMemberFields, members);
  return (
    <DataTable
      records={records}
      minWidth={760}
      rowOpacity={(member) => (member.active ? 1 : 0.6)}
      columns={[
        { accessor: 'member', title: 'Member', render: (member) => <MemberName member={member} /> },
        { accessor: 'role', title: 'Role', render: (member) => renderRole(member) },
        {
          accessor: 'mfaEnabled',
          title: 'Two-factor',
          render: (member) => (
            <Badge variant="light" color={member.mfaEnabled ? 'teal' : 'gray'}>
              {member.mfaEnabled ? 'On' : 'Off'}
            </Badge>
          ),
        },
        {
          accessor: 'lastLoginAt',
          title: 'Last sign-in',
          render: (member) => (
            <Text size="sm" c="dimmed">
              {relativeTime(member.lastLoginAt)}
            </Text>
          ),
        },
        { accessor: 'actions', title: '', render: (member) => renderActions(member) },
      ]}
    />
  );
}

function MemberName({ member }: { member: Member }) {
  const { user } = useCurrentUser();
  return (
    <Stack gap={0}>
      <Group gap={6}>
        <Text size="sm" fw={500}>
          {member.name ?? member.email}
        </Text>
        {member.id === user.id && (
          <Badge size="xs" variant="light">
            you
          </Badge>
        )}
        {!member.active && (
          <Badge size="xs" color="gray">
            deactivated
          </Badge>
        )}
        {member.lockedUntil && (
          <Badge size="xs" color="red" title={`Too many failed sign-ins: locked until ${formatDateTimeWithZone(member.lockedUntil)}`}>
            locked
          </Badge>
        )}
      </Group>
      {member.name && (
        <Text size="xs" c="dimmed">
          {member.email}
        </Text>
      )}
    </Stack>
  );
}
