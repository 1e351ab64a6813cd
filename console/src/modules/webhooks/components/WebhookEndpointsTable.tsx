import { Code, Stack, Switch, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { readFragment, type FragmentOf } from '../../../graphql';
import { formatDate } from '../../../lib/format';
import { DataTable } from '../../../ui/DataTable';
import { useApiMutation } from '../../../ui/useApiMutation';
import { wireName } from '../eventTypes';
import { UpdateWebhookEndpointMutation, WebhookEndpointFields, type WebhookEndpoint } from '../graphql/documents';

/** The endpoints, each with its enabled switch (and why it was disabled); the page supplies each row's actions. */
export function WebhookEndpointsTable({ endpoints, renderActions }: { endpoints: readonly FragmentOf<typeof WebhookEndpointFields>[]; renderActions: (endpoint: WebhookEndpoint) => ReactNode }) {
  return (
    <DataTable
      records={readFragment(WebhookEndpointFields, endpoints)}
      minWidth={820}
      columns={[
        { accessor: 'url', title: 'URL', render: (endpoint) => <Code>{endpoint.url}</Code> },
        { accessor: 'eventTypes', title: 'Events', render: (endpoint) => (endpoint.eventTypes.length ? endpoint.eventTypes.map(wireName).join(', ') : 'all') },
        { accessor: 'enabled', title: 'Enabled', render: (endpoint) => <EnabledSwitch endpoint={endpoint} /> },
        { accessor: 'createdAt', title: 'Created', render: (endpoint) => formatDate(endpoint.createdAt) },
        { accessor: 'actions', title: '', render: renderActions },
      ]}
    />
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
