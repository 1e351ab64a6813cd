import { Button, Group } from '@mantine/core';
import { useState } from 'react';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { SecretOnceModal } from '../../../ui/SecretOnce';
import { useApiMutation } from '../../../ui/useApiMutation';
import { DeleteWebhookEndpointMutation, RotateWebhookSecretMutation, type WebhookEndpoint } from '../graphql/documents';

/** An endpoint's row actions: its delivery log, a new signing secret (shown once), delete. */
export function EndpointActions({ endpoint, onDeliveries }: { endpoint: WebhookEndpoint; onDeliveries: () => void }) {
  const [secret, setSecret] = useState<string | null>(null);
  const remove = useApiMutation(DeleteWebhookEndpointMutation, { success: 'Endpoint deleted.' });
  const rotate = useApiMutation(RotateWebhookSecretMutation, { success: 'New signing secret created.' });
  return (
    <Group gap="xs" justify="flex-end">
      <Button size="xs" variant="default" onClick={onDeliveries}>
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
          return data;
        }}
      />
      <ConfirmAction size="xs" label="Delete" title={`Delete ${endpoint.url}?`} message="Its delivery log is deleted too." confirmLabel="Delete" busy={remove.saving} onConfirm={() => remove.run({ id: endpoint.id })} />
      <SecretOnceModal secret={secret} title="New signing secret" label="signing secret" note="Store it with your receiver now: it is never shown again." onClose={() => setSecret(null)} />
    </Group>
  );
}
