import { Badge, Paper, Table, Text, Title, Group } from '@mantine/core';
import { useQuery } from 'urql';
import type { ResultOf } from '../../../graphql';
import { refetchOn } from '../../../lib/client';
import { formatDateTime, relativeTime } from '../../../lib/format';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { Pager } from '../../../ui/Pager';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCursorPages } from '../../../ui/useCursorPages';
import { DeactivateActivationMutation, LicenseActivationsQuery } from '../graphql/documents';

const PAGE_SIZE = 20;

/**
 * Installations of a license, newest first, a page at a time (a license may have thousands); an active one
 * can be deactivated to free its seat.
 */
export function ActivationsTable({ licenseId, canManage }: { licenseId: string; canManage: boolean }) {
  const deactivate = useApiMutation(DeactivateActivationMutation, { success: 'Device deactivated; its seat is free again.' });
  const pages = useCursorPages();
  const [result, reload] = useQuery({ query: LicenseActivationsQuery, variables: { id: licenseId, first: PAGE_SIZE, after: pages.after }, context: refetchOn('Activation') });
  const license = result.data?.license;
  return (
    <Paper p="lg">
      <Group justify="space-between" mb="sm">
        <Title order={3} size="h4">
          Activations
        </Title>
        {license && (
          <Text size="sm" c="dimmed">
            {license.currentActivations.toLocaleString('en-US')} active · {license.activations.totalCount.toLocaleString('en-US')}
            {license.activations.totalCountCapped ? '+' : ''} in all
          </Text>
        )}
      </Group>
      <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
        {(data) => data.license && (
          <ActivationRows
            connection={data.license.activations}
            canManage={canManage}
            busy={deactivate.saving}
            onDeactivate={(id) => deactivate.run({ id })}
            pages={pages}
          />
        )}
      </QueryState>
    </Paper>
  );
}

type Connection = NonNullable<ResultOf<typeof LicenseActivationsQuery>['license']>['activations'];

function ActivationRows({ connection, canManage, busy, onDeactivate, pages }: {
  connection: Connection;
  canManage: boolean;
  busy: boolean;
  onDeactivate: (id: string) => Promise<unknown>;
  pages: ReturnType<typeof useCursorPages>;
}) {
  const activations = connection.nodes;
  return (
    <>
      {activations.length === 0 ? (
        <EmptyState title="Not activated yet">Applications activate with POST /api/v1/activate; each device takes one seat.</EmptyState>
      ) : (
        <Table.ScrollContainer minWidth={820}>
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Device</Table.Th>
                <Table.Th>Version</Table.Th>
                <Table.Th>User</Table.Th>
                <Table.Th>IP</Table.Th>
                <Table.Th>Activated</Table.Th>
                <Table.Th>Last seen</Table.Th>
                <Table.Th aria-label="Actions" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {activations.map((activation) => (
                <Table.Tr key={activation.id} opacity={activation.active ? 1 : 0.55} data-testid="activation-row">
                  <Table.Td>
                    <Text size="sm" fw={500}>
                      {activation.deviceName ?? 'Unnamed device'}
                    </Text>
                    {activation.deviceId && (
                      <Text size="xs" c="dimmed" ff="monospace" title={activation.deviceId}>
                        {activation.deviceId.length > 20 ? `${activation.deviceId.slice(0, 20)}…` : activation.deviceId}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>{activation.version ?? '—'}</Table.Td>
                  <Table.Td>{activation.userEmail ?? '—'}</Table.Td>
                  <Table.Td>
                    <Text size="sm" ff="monospace">
                      {activation.ip ?? '—'}
                    </Text>
                  </Table.Td>
                  <Table.Td title={formatDateTime(activation.createdAt)}>{relativeTime(activation.createdAt)}</Table.Td>
                  <Table.Td title={formatDateTime(activation.lastSeenAt)}>{relativeTime(activation.lastSeenAt)}</Table.Td>
                  <Table.Td ta="right">
                    {activation.active ? (
                      canManage && (
                        <ConfirmAction
                          size="xs"
                          label="Deactivate"
                          title={`Deactivate ${activation.deviceName ?? 'this device'}?`}
                          message="Its seat is freed for another device. The application on it fails its next activation check."
                          confirmLabel="Deactivate device"
                          busy={busy}
                          onConfirm={() => onDeactivate(activation.id)}
                        />
                      )
                    ) : (
                      <Badge color="gray" variant="light">
                        deactivated
                      </Badge>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {(pages.hasPrevious || connection.pageInfo.hasNextPage) && <Pager pages={pages} connection={connection} pageSize={PAGE_SIZE} />}
    </>
  );
}
