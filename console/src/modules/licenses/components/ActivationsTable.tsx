import { Badge, Paper, Text, Title, Group } from '@mantine/core';
import { useQuery } from 'urql';
import type { ResultOf } from '../../../graphql';
import { formatDateTime, relativeTime } from '../../../lib/format';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { DataTable } from '../../../ui/DataTable';
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
  const pages = useCursorPages(licenseId);
  const [result, reload] = useQuery({ query: LicenseActivationsQuery, variables: { id: licenseId, first: PAGE_SIZE, after: pages.after } });
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
            // Back to the first page: the deactivation made every loaded page stale, and a later page refetched
            // alone would replace the merged list.
            onDeactivate={async (id) => (await deactivate.run({ id })) && pages.reset()}
            fetching={result.fetching}
            onLoadMore={pages.loadMore}
          />
        )}
      </QueryState>
    </Paper>
  );
}

type Connection = NonNullable<ResultOf<typeof LicenseActivationsQuery>['license']>['activations'];

function ActivationRows({ connection, canManage, busy, fetching, onDeactivate, onLoadMore }: {
  connection: Connection;
  canManage: boolean;
  busy: boolean;
  fetching: boolean;
  onDeactivate: (id: string) => Promise<unknown>;
  onLoadMore: (endCursor: string) => void;
}) {
  const activations = connection.nodes;
  return (
    <>
      {activations.length === 0 ? (
        <EmptyState title="Not activated yet">Applications activate with POST /api/v1/activate; each device takes one seat.</EmptyState>
      ) : (
        <DataTable
          records={activations}
          minWidth={820}
          rowTestId="activation-row"
          rowOpacity={(activation) => (activation.active ? 1 : 0.55)}
          fetching={fetching}
          paging={connection.pageInfo.hasNextPage || activations.length > PAGE_SIZE ? { connection, onLoadMore } : undefined}
          columns={[
            {
              accessor: 'device',
              title: 'Device',
              render: (activation) => (
                <div>
                  <Group gap={6} wrap="nowrap">
                    <Text size="sm" fw={500}>
                      {activation.deviceName ?? 'Unnamed device'}
                    </Text>
                    {activation.offline && (
                      <Badge size="xs" variant="light" color="grape" title="Activated offline from an activation request">
                        Offline
                      </Badge>
                    )}
                  </Group>
                  {activation.deviceId && (
                    <Text size="xs" c="dimmed" ff="monospace" title={activation.deviceId}>
                      {activation.deviceId.length > 20 ? `${activation.deviceId.slice(0, 20)}…` : activation.deviceId}
                    </Text>
                  )}
                </div>
              ),
            },
            { accessor: 'version', title: 'Version', render: (activation) => activation.version ?? '—' },
            { accessor: 'userEmail', title: 'User', render: (activation) => activation.userEmail ?? '—' },
            {
              accessor: 'ip',
              title: 'IP',
              render: (activation) => (
                <Text size="sm" ff="monospace">
                  {activation.ip ?? '—'}
                </Text>
              ),
            },
            { accessor: 'createdAt', title: 'Activated', render: (activation) => <span title={formatDateTime(activation.createdAt)}>{relativeTime(activation.createdAt)}</span> },
            { accessor: 'lastSeenAt', title: 'Last seen', render: (activation) => <span title={formatDateTime(activation.lastSeenAt)}>{relativeTime(activation.lastSeenAt)}</span> },
            {
              accessor: 'actions',
              title: '',
              render: (activation) =>
                activation.active ? (
                  canManage && (
                    <ConfirmAction
                      size="xs"
                      label="Deactivate"
                      title={`Deactivate ${activation.deviceName ?? 'this device'}?`}
                      message="Its seat is freed for another device. The application on it is refused at its next device-scoped validation (requireActivation: DeviceNotActivated) and must activate again; a plain validation checks only the license, so it keeps passing there."
                      confirmLabel="Deactivate device"
                      busy={busy}
                      onConfirm={() => onDeactivate(activation.id)}
                    />
                  )
                ) : (
                  <Badge color="gray" variant="light">
                    deactivated
                  </Badge>
                ),
            },
          ]}
        />
      )}
    </>
  );
}
