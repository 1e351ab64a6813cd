import { Button, Group, Modal, Stack, TextInput } from '@mantine/core';
import { useState } from 'react';
import { z } from 'zod';
import { SecretOnce } from '../../../ui/SecretOnce';
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
    <Modal opened={opened} onClose={close} title={created ? 'Your new API key' : 'Create API key'} centered size="lg" closeOnClickOutside={!created}>
      {created ? (
        <Stack>
          <SecretOnce label="API key" value={created} note="Store it in your server's secret store now: it is never shown again. Send it as the X-Api-Key header; never ship it in a customer application." />
          <Group justify="flex-end">
            <Button onClick={close}>I have stored it</Button>
          </Group>
        </Stack>
      ) : (
        <form onSubmit={submit}>
          <Stack>
            <TextInput label="Name" description="What uses it, e.g. “billing webhook”." required data-autofocus {...form.getInputProps('name')} />
            <RoleSelect {...form.getInputProps('role')} value={form.getValues().role} description="A key acts with this role." />
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Cancel
              </Button>
              <Button type="submit" loading={create.saving}>
                Create key
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}
