import { Modal, Stack, TextInput } from '@mantine/core';
import { useState } from 'react';
import { z } from 'zod';
import { ModalFooter } from '../../../ui/ModalFooter';
import { SecretOnceModal } from '../../../ui/SecretOnce';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { CreateApiKeyMutation } from '../graphql/documents';
import { RoleSelect, type Role } from './RoleSelect';

const EMPTY = { name: '', role: 'READ_ONLY' as Role };
const schema = z.object({ name: z.string().trim().min(1, 'Name what uses the key.') });

/** Creates an API key and shows it once, with a copy button. */
export function CreateApiKeyModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const form = useZodForm(schema, EMPTY);
  const [created, setCreated] = useState<string | null>(null);
  const create = useApiMutation(CreateApiKeyMutation, { success: 'API key created.' });

  const close = () => {
    form.reset();
    setCreated(null);
    onClose();
  };

  const submit = form.onSubmit(async (values) => {
    const data = await create.run({ name: values.name, role: values.role }, { form });
    if (data) setCreated(data.createApiKey.key);
  });

  return (
    <>
      <Modal opened={opened && created === null} onClose={close} title="Create API key" centered size="lg" returnFocus={created === null}>
        <form onSubmit={submit}>
          <Stack>
            <TextInput label="Name" description="What uses it, e.g. “billing webhook”." required data-autofocus {...form.getInputProps('name')} />
            <RoleSelect {...form.getInputProps('role')} value={form.getValues().role} description="A key acts with this role." />
            <ModalFooter onCancel={close} confirmLabel="Create key" loading={create.saving} />
          </Stack>
        </form>
      </Modal>
      <SecretOnceModal
        secret={created}
        title="Your new API key"
        label="API key"
        note="Store it in your server's secret store now: it is never shown again. Send it as the X-Api-Key header; never ship it in a customer application."
        onClose={close}
      />
    </>
  );
}
