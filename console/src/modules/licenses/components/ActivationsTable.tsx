import { Badge, Paper, Table, Text, Title, Group } from '@mantine/core';
import type { ResultOf } from '../../../graphql';
import { formatDateTime, relativeTime } from '../../../lib/format';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { EmptyState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { DeactivateActivationMutation, type LicenseQuery } from '../graphql/documents';

type Activation = ResultOf<typeof LicenseQuery>['license']['activations'][number];

/** Installations of a license, newest first; an active one can be deactivated to free its seat. */
export function ActivationsTable({ activations, canManage }: { activations: Activation[]; canManage: boolean }) {
  const deactivate = useApiMutation(DeactivateActivationMutation, { success: 'Device deactivated; its seat is free again.' });
  const active = activations.filter((activation) => activation.active).length;
  return (
    <Paper p="lg">
      <Group justify="space-between" mb="sm">
        <Title order={3} size="h4">
          Activations
        </Title>
        <Text size="sm" c="dimmed">
          {active} active · {activations.length - active} deactivated
        </Text>
      </Group>
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
                          busy={deactivate.saving}
                          onConfirm={() => deactivate.run({ id: activation.id })}
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
    </Paper>
  );
}
