import { Alert, Modal, MultiSelect, Stack, TextInput } from '@mantine/core';
import { IconAlertTriangle } from '@tabler/icons-react';
import { useState } from 'react';
import { z } from 'zod';
import { ModalFooter } from '../../../ui/ModalFooter';
import { SecretOnceModal } from '../../../ui/SecretOnce';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { SUBSCRIBABLE_EVENT_TYPES, wireName, type WebhookEventType } from '../eventTypes';
import { CreateWebhookEndpointMutation } from '../graphql/documents';

const schema = z.object({ url: z.string().trim().regex(/^https?:\/\/\S+$/, 'An http:// or https:// URL.') });
const EMPTY = { url: '', eventTypes: [] as WebhookEventType[] };
const EVENT_OPTIONS = SUBSCRIBABLE_EVENT_TYPES.map((type) => ({ value: type, label: wireName(type) }));

/** Adds an endpoint, then shows its signing secret once (with the server's warning about a refused address). */
export function CreateEndpointModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const form = useZodForm(schema, EMPTY);
  const [created, setCreated] = useState<{ secret: string; warning: string | null } | null>(null);
  const create = useApiMutation(CreateWebhookEndpointMutation, { success: 'Webhook endpoint added.' });
  const close = () => {
    form.reset();
    setCreated(null);
    onClose();
  };
  const submit = form.onSubmit(async (values) => {
    const data = await create.run({ url: values.url, eventTypes: values.eventTypes }, { form });
    if (data) setCreated({ secret: data.createWebhookEndpoint.secret, warning: data.createWebhookEndpoint.warning });
  });
  return (
    <>
      <Modal opened={opened && created === null} onClose={close} title="Add webhook endpoint" centered size="lg" returnFocus={created === null}>
        <form onSubmit={submit}>
          <Stack>
            <TextInput label="URL" placeholder="https://example.com/keyforge-webhooks" required data-autofocus {...form.getInputProps('url')} />
            <MultiSelect label="Events" description="None selected: every event." data={EVENT_OPTIONS} searchable clearable {...form.getInputProps('eventTypes')} />
            <ModalFooter onCancel={close} confirmLabel="Add endpoint" loading={create.saving} />
          </Stack>
        </form>
      </Modal>
      <SecretOnceModal
        secret={created?.secret ?? null}
        title="Your signing secret"
        label="signing secret"
        note="Verify the webhook-signature header with it (any Standard Webhooks library). It is never shown again."
        onClose={close}
        before={
          created?.warning && (
            <Alert color="orange" icon={<IconAlertTriangle size={18} />} title="Deliveries to this URL will be refused">
              {created.warning}
            </Alert>
          )
        }
      />
    </>
  );
}
