import { Alert, Badge, Button, Code, Group, Modal, MultiSelect, Paper, Stack, Switch, Text, TextInput } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconAlertTriangle, IconPlus } from '@tabler/icons-react';
import { useState } from 'react';
import { useQuery } from 'urql';
import { z } from 'zod';
import { readFragment } from '../../../graphql';
import { formatDate, formatDateTime } from '../../../lib/format';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { DataTable } from '../../../ui/DataTable';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { SecretOnce } from '../../../ui/SecretOnce';
import { notifyError, notifySuccess } from '../../../ui/notify';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import {
  CreateWebhookEndpointMutation,
  DeleteWebhookEndpointMutation,
  ResendWebhookDeliveryMutation,
  RotateWebhookSecretMutation,
  SendTestWebhookEventMutation,
  UpdateWebhookEndpointMutation,
  WebhookDeliveriesQuery,
  WebhookEndpointFields,
  WebhookEndpointsQuery,
  type WebhookEndpoint,
} from '../graphql/documents';

const EVENT_TYPES = [
  'LICENSE_CREATED', 'LICENSE_UPDATED', 'LICENSE_REVOKED', 'LICENSE_EXPIRING', 'LICENSE_SEATS_EXHAUSTED', 'ACTIVATION_CREATED', 'ACTIVATION_DEACTIVATED',
  'FLOATING_CHECKOUT_DENIED', 'METER_QUOTA_REACHED', 'USER_CREATED', 'USER_UPDATED', 'USER_REMOVED', 'API_KEY_CREATED', 'API_KEY_REMOVED',
  'LICENSE_SUSPENDED', 'LICENSE_REINSTATED', 'LICENSE_RENEWED', 'LICENSE_TRANSFERRED', 'LICENSE_EXPIRED', 'LICENSE_KEY_REISSUED',
] as const;
type EventType = (typeof EVENT_TYPES)[number];
/** LICENSE_SEATS_EXHAUSTED → license.seats_exhausted, as in the payloads. */
const wireName = (type: string) => type.toLowerCase().replace(/^(license|activation|floating|meter|user|api_key|webhook)_/, '$1.');

/** Settings → Webhooks: endpoints (admins), their signing secret once, and each endpoint's delivery log. */
export function WebhooksPage() {
  const [result, reload] = useQuery({ query: WebhookEndpointsQuery });
  const [creating, { open, close }] = useDisclosure(false);
  const [logOf, setLogOf] = useState<WebhookEndpoint | null>(null);
  const createButton = (
    <Button leftSection={<IconPlus size={16} />} onClick={open}>
      Add endpoint
    </Button>
  );
  return (
    <>
      <PageHeader title="Webhooks" description="Keyforge POSTs signed events (Standard Webhooks) to these URLs: see the README's Webhooks section to verify them." actions={createButton} />
      <CreateEndpointModal opened={creating} onClose={close} />
      <DeliveriesModal endpoint={logOf} onClose={() => setLogOf(null)} />
      <Paper>
        <QueryState
          result={result}
          onRetry={() => reload({ requestPolicy: 'network-only' })}
          isEmpty={(data) => data.webhookEndpoints.nodes.length === 0}
          empty={<EmptyState title="No webhook endpoints yet">Add one to receive license, activation and team events.</EmptyState>}
        >
          {(data) => (
            <DataTable
              records={readFragment(WebhookEndpointFields, data.webhookEndpoints.nodes)}
              minWidth={820}
              columns={[
                { accessor: 'url', title: 'URL', render: (endpoint) => <Code>{endpoint.url}</Code> },
                { accessor: 'eventTypes', title: 'Events', render: (endpoint) => (endpoint.eventTypes.length ? endpoint.eventTypes.map(wireName).join(', ') : 'all') },
                { accessor: 'enabled', title: 'Enabled', render: (endpoint) => <EnabledSwitch endpoint={endpoint} /> },
                { accessor: 'createdAt', title: 'Created', render: (endpoint) => formatDate(endpoint.createdAt) },
                { accessor: 'actions', title: '', render: (endpoint) => <EndpointActions endpoint={endpoint} onLog={() => setLogOf(endpoint)} /> },
              ]}
            />
          )}
        </QueryState>
      </Paper>
    </>
  );
}

function EnabledSwitch({ endpoint }: { endpoint: WebhookEndpoint }) {
  const update = useApiMutation(UpdateWebhookEndpointMutation, { success: (d) => (readFragment(WebhookEndpointFields, d.updateWebhookEndpoint.endpoint).enabled ? 'Endpoint enabled.' : 'Endpoint disabled.') });
  return (
    <Stack gap={2}>
      <Switch checked={endpoint.enabled} disabled={update.saving} onChange={(event) => update.run({ id: endpoint.id, enabled: event.currentTarget.checked })} aria-label="Enabled" />
      {endpoint.disabledReason && !endpoint.enabled && (
        <Text size="xs" c="red">
          {endpoint.disabledReason}
        </Text>
      )}
    </Stack>
  );
}

function EndpointActions({ endpoint, onLog }: { endpoint: WebhookEndpoint; onLog: () => void }) {
  const [secret, setSecret] = useState<string | null>(null);
  const remove = useApiMutation(DeleteWebhookEndpointMutation, { success: 'Endpoint deleted.' });
  const rotate = useApiMutation(RotateWebhookSecretMutation, { success: 'New signing secret created.' });
  return (
    <Group gap="xs" justify="flex-end">
      <Button size="xs" variant="default" onClick={onLog}>
        Deliveries
      </Button>
      <ConfirmAction
        size="xs"
        label="Rotate secret"
        title="Rotate the signing secret?"
        message="Deliveries from now on are signed with a new secret; update your receiver at once."
        confirmLabel="Rotate"
        busy={rotate.saving}
        onConfirm={async () => {
          const data = await rotate.run({ id: endpoint.id });
          if (data) setSecret(data.rotateWebhookSecret.secret);
        }}
      />
      <ConfirmAction size="xs" label="Delete" title={`Delete ${endpoint.url}?`} message="Its delivery log is deleted too." confirmLabel="Delete" busy={remove.saving} onConfirm={() => remove.run({ id: endpoint.id })} />
      <Modal opened={secret !== null} onClose={() => setSecret(null)} title="New signing secret" centered size="lg" closeOnClickOutside={false}>
        <Stack>
          <SecretOnce label="Signing secret" value={secret ?? ''} note="Store it with your receiver now: it is never shown again." />
          <Group justify="flex-end">
            <Button onClick={() => setSecret(null)}>I have stored it</Button>
          </Group>
        </Stack>
      </Modal>
    </Group>
  );
}

const schema = z.object({ url: z.string().trim().regex(/^https?:\/\/\S+$/, 'An http:// or https:// URL.') });
const EMPTY = { url: '', eventTypes: [] as string[] };

function CreateEndpointModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const form = useZodForm(schema, EMPTY);
  const [secret, setSecret] = useState<string | null>(null);
  const [warning, setWarning] = useState<string | null>(null);
  const create = useApiMutation(CreateWebhookEndpointMutation, { success: 'Webhook endpoint added.' });
  const close = () => {
    form.reset();
    setSecret(null);
    setWarning(null);
    onClose();
  };
  const submit = form.onSubmit(async (values) => {
    const data = await create.run({ url: values.url, eventTypes: values.eventTypes as EventType[] }, { form });
    if (data) {
      setSecret(data.createWebhookEndpoint.secret);
      setWarning(data.createWebhookEndpoint.warning);
    }
  });
  return (
    <Modal opened={opened} onClose={close} title={secret ? 'Your signing secret' : 'Add webhook endpoint'} centered size="lg" closeOnClickOutside={!secret}>
      {secret ? (
        <Stack>
          {warning && (
            <Alert color="orange" icon={<IconAlertTriangle size={18} />} title="Deliveries to this URL will be refused">
              {warning}
            </Alert>
          )}
          <SecretOnce label="Signing secret" value={secret} note="Verify the webhook-signature header with it (any Standard Webhooks library). It is never shown again." />
          <Group justify="flex-end">
            <Button onClick={close}>I have stored it</Button>
          </Group>
        </Stack>
      ) : (
        <form onSubmit={submit}>
          <Stack>
            <TextInput label="URL" placeholder="https://example.com/keyforge-webhooks" required data-autofocus {...form.getInputProps('url')} />
            <MultiSelect label="Events" description="None selected: every event." data={EVENT_TYPES.map((type) => ({ value: type, label: wireName(type) }))} searchable clearable {...form.getInputProps('eventTypes')} />
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Cancel
              </Button>
              <Button type="submit" loading={create.saving}>
                Add endpoint
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}

const STATUS_COLOR = { PENDING: 'yellow', SUCCEEDED: 'green', FAILED: 'red' } as const;

/** The test event is sent before the mutation answers: say how it went. */
function testOutcome(delivery: { status: keyof typeof STATUS_COLOR; responseCode: number | null; lastError: string | null }) {
  const answer = delivery.responseCode ? `answered ${delivery.responseCode}` : (delivery.lastError ?? 'no answer');
  if (delivery.status === 'SUCCEEDED') return `Test event delivered: the endpoint ${answer}.`;
  if (delivery.status === 'FAILED') return `Test event failed: ${answer}.`;
  return `Test event not delivered yet (${answer}): it is retried automatically.`;
}

function DeliveriesModal({ endpoint, onClose }: { endpoint: WebhookEndpoint | null; onClose: () => void }) {
  const [result, reload] = useQuery({ query: WebhookDeliveriesQuery, variables: { endpointId: endpoint?.id ?? '' }, pause: !endpoint });
  const resend = useApiMutation(ResendWebhookDeliveryMutation, { success: 'Queued again: sent within a minute.' });
  const test = useApiMutation(SendTestWebhookEventMutation);
  const sendTest = async (endpointId: string) => {
    const delivery = (await test.run({ endpointId }))?.sendTestWebhookEvent.delivery;
    if (!delivery) return;
    if (delivery.status === 'SUCCEEDED') notifySuccess(testOutcome(delivery));
    else notifyError(testOutcome(delivery), 'Test event not delivered');
  };
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
              <Button size="xs" loading={test.saving} onClick={() => void sendTest(endpoint.id)}>
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
