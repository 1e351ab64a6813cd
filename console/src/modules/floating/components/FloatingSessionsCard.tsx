import { Badge, Group, Paper, Progress, Text, Title } from '@mantine/core';
import { useQuery } from 'urql';
import { relativeTime } from '../../../lib/format';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { EndFloatingSessionMutation, FloatingSessionsQuery } from '../graphql/documents';
import { DataTable } from '../../../ui/DataTable';

/** Concurrent (floating) sessions holding a seat of one license right now; an admin can end one. */
export function FloatingSessionsCard({ licenseId }: { licenseId: string }) {
  const [result, reload] = useQuery({ query: FloatingSessionsQuery, variables: { licenseId } });
  const end = useApiMutation(EndFloatingSessionMutation, { success: 'Session ended; its seat is free.' });
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
              <DataTable
                records={pool.sessions.nodes}
                minWidth={640}
                columns={[
                  { accessor: 'device', title: 'Device', render: (session) => <Text size="sm">{session.deviceName ?? session.deviceId ?? 'unnamed device'}</Text> },
                  {
                    accessor: 'ip',
                    title: 'IP',
                    render: (session) => (
                      <Text size="sm" ff="monospace">
                        {session.ip ?? '—'}
                      </Text>
                    ),
                  },
                  { accessor: 'createdAt', title: 'Started', render: (session) => relativeTime(session.createdAt) },
                  { accessor: 'lastHeartbeatAt', title: 'Last heartbeat', render: (session) => relativeTime(session.lastHeartbeatAt) },
                  {
                    accessor: 'actions',
                    title: '',
                    render: (session) =>
                      canManage && (
                        <ConfirmAction size="xs" label="End" title="End this session?" message="Its seat is freed at once; the application's next heartbeat is refused." confirmLabel="End session" busy={end.saving} onConfirm={() => end.run({ id: session.id })} />
                      ),
                  },
                ]}
              />
            )}
          </>
        )}
      </QueryState>
    </Paper>
  );
}
