import { Badge, Button, Group, Modal, Stack, Text } from '@mantine/core';
import { useQuery } from 'urql';
import { formatDateTime } from '../../../lib/format';
import { DataTable } from '../../../ui/DataTable';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { wireName } from '../eventTypes';
import { ResendWebhookDeliveryMutation, WebhookDeliveriesQuery, type WebhookEndpoint } from '../graphql/documents';
import { useSendTestEvent } from '../hooks/useSendTestEvent';

const STATUS_COLOR = { PENDING: 'yellow', SUCCEEDED: 'green', FAILED: 'red' } as const;

/** An endpoint's 50 newest deliveries, with Resend and Send test event. */
export function DeliveriesModal({ endpoint, onClose }: { endpoint: WebhookEndpoint | null; onClose: () => void }) {
  const [result, reload] = useQuery({ query: WebhookDeliveriesQuery, variables: { endpointId: endpoint?.id ?? '' }, pause: !endpoint });
  const resend = useApiMutation(ResendWebhookDeliveryMutation, { success: 'Queued again: sent within a minute.' });
  const test = useSendTestEvent();
  return (
    <Modal opened={endpoint !== null} onClose={onClose} title={endpoint ? `Deliveries to ${endpoint.url}` : ''} size="90%">
      {endpoint && (
        <Stack>
          <Group justify="space-between">
            <Text size="sm" c="dimmed">
              The 50 newest deliveries.
            </Text>
            <Group gap="xs">
              <Button size="xs" variant="default" onClick={() => reload({ requestPolicy: 'network-only' })}>
                Refresh
              </Button>
              <Button size="xs" loading={test.sending} onClick={() => void test.send(endpoint.id)}>
                Send test event
              </Button>
            </Group>
          </Group>
          <QueryState
            result={result}
            onRetry={() => reload({ requestPolicy: 'network-only' })}
            isEmpty={(data) => data.webhookDeliveries.nodes.length === 0}
            empty={<EmptyState title="No deliveries yet">Events you subscribed to appear here once they happen.</EmptyState>}
          >
            {(data) => (
              <DataTable
                records={data.webhookDeliveries.nodes}
                minWidth={900}
                columns={[
                  { accessor: 'createdAt', title: 'Event', render: (delivery) => <Stack gap={0}><Text size="sm">{wireName(delivery.eventType)}</Text><Text size="xs" c="dimmed">{formatDateTime(delivery.createdAt)}</Text></Stack> },
                  { accessor: 'status', title: 'Status', width: 110, render: (delivery) => <Badge color={STATUS_COLOR[delivery.status]} variant="light" style={{ overflow: 'visible' }} miw="fit-content">{delivery.status.toLowerCase()}</Badge> },
                  { accessor: 'attempts', title: 'Attempts' },
                  { accessor: 'responseCode', title: 'Response', render: (delivery) => (delivery.responseCode ? `${delivery.responseCode} in ${delivery.responseTimeMs} ms` : (delivery.lastError ?? '—')) },
                  { accessor: 'responseBodyExcerpt', title: 'Body', render: (delivery) => <Text size="xs" lineClamp={2} ff="monospace">{delivery.responseBodyExcerpt ?? ''}</Text> },
                  { accessor: 'actions', title: '', render: (delivery) => <Button size="xs" variant="default" loading={resend.saving} disabled={delivery.status === 'PENDING'} title={delivery.status === 'PENDING' ? 'Still being delivered' : undefined} onClick={() => resend.run({ id: delivery.id })}>Resend</Button> },
                ]}
              />
            )}
          </QueryState>
        </Stack>
      )}
    </Modal>
  );
}
