import { Button, Paper } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconPlus } from '@tabler/icons-react';
import { useState } from 'react';
import { useQuery } from 'urql';
import { docsReference } from '../../../lib/docs';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { CreateEndpointModal } from '../components/CreateEndpointModal';
import { DeliveriesModal } from '../components/DeliveriesModal';
import { EndpointActions } from '../components/EndpointActions';
import { WebhookEndpointsTable } from '../components/WebhookEndpointsTable';
import { WebhookEndpointsQuery, type WebhookEndpoint } from '../graphql/documents';

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
      <PageHeader title="Webhooks" description={`Keyforge POSTs signed events (Standard Webhooks) to these URLs: see the ${docsReference('webhooks')} to verify them.`} actions={createButton} />
      <CreateEndpointModal opened={creating} onClose={close} />
      <DeliveriesModal endpoint={logOf} onClose={() => setLogOf(null)} />
      <Paper>
        <QueryState
          result={result}
          onRetry={() => reload({ requestPolicy: 'network-only' })}
          isEmpty={(data) => data.webhookEndpoints.nodes.length === 0}
          empty={<EmptyState title="No webhook endpoints yet">Add one to receive license, activation and team events.</EmptyState>}
        >
          {(data) => <WebhookEndpointsTable endpoints={data.webhookEndpoints.nodes} renderActions={(endpoint) => <EndpointActions endpoint={endpoint} onDeliveries={() => setLogOf(endpoint)} />} />}
        </QueryState>
      </Paper>
    </>
  );
}
