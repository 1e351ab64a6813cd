import { Badge, Group, Paper, Progress, Table, Text, Title } from '@mantine/core';
import { useQuery } from 'urql';
import { relativeTime } from '../../../lib/format';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { EndFloatingSessionMutation, FloatingSessionsQuery } from '../graphql/documents';
import { refetchOn } from '../../../lib/client';
import { ResponsiveTable } from '../../../ui/ResponsiveTable';

/** Concurrent (floating) sessions holding a seat of one license right now; an admin can end one. */
export function FloatingSessionsCard({ licenseId }: { licenseId: string }) {
  const [result, reload] = useQuery({ query: FloatingSessionsQuery, variables: { licenseId }, context: refetchOn('FloatingSession') });
  const end = useApiMutation(EndFloatingSessionMutation, { success: 'Session ended; its seat is free.', invalidates: ['FloatingSession'] });
  const canManage = useCanManage();

  return (
    <Paper p="lg">
      <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
        {({ floatingSessions: pool }) => pool && (
          <>
            <Group justify="space-between" mb="sm">
              <Title order={3} size="h4">
                Floating sessions
              </Title>
              <Badge variant="light" size="lg">
                {pool.inUse} / {pool.floatingSeats ?? 0} in use
              </Badge>
            </Group>
            {pool.floatingSeats ? <Progress value={(pool.inUse / pool.floatingSeats) * 100} mb="md" aria-label="Floating seats in use" color={pool.inUse >= pool.floatingSeats ? 'red' : 'indigo'} /> : null}
            {pool.sessions.nodes.length === 0 ? (
              <EmptyState title="No session right now">Applications check out a floating seat with /api/v1/float/checkout.</EmptyState>
            ) : (
              <ResponsiveTable minWidth={640}>
                <Table>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Device</Table.Th>
                      <Table.Th>IP</Table.Th>
                      <Table.Th>Started</Table.Th>
                      <Table.Th>Last heartbeat</Table.Th>
                      <Table.Th aria-label="Actions" />
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {pool.sessions.nodes.map((session) => (
                      <Table.Tr key={session.id}>
                        <Table.Td>
                          <Text size="sm">{session.deviceName ?? session.deviceId ?? 'unnamed device'}</Text>
                        </Table.Td>
                        <Table.Td>
                          <Text size="sm" ff="monospace">
                            {session.ip ?? '—'}
                          </Text>
                        </Table.Td>
                        <Table.Td>{relativeTime(session.createdAt)}</Table.Td>
                        <Table.Td>{relativeTime(session.lastHeartbeatAt)}</Table.Td>
                        <Table.Td ta="right">
                          {canManage && (
                            <ConfirmAction size="xs" label="End" title="End this session?" message="Its seat is freed at once; the application's next heartbeat is refused." confirmLabel="End session" busy={end.saving} onConfirm={() => end.run({ id: session.id })} />
                          )}
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </ResponsiveTable>
            )}
          </>
        )}
      </QueryState>
    </Paper>
  );
}
