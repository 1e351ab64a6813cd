import { Button, Group, Modal, Stack, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { SecretOnce } from '../../../ui/SecretOnce';
import { useApiMutation } from '../../../ui/useApiMutation';
import { CreateApiKeyMutation } from '../graphql/documents';
import { RoleSelect, type Role } from './RoleSelect';

/** Creates an API key and shows it once, with a copy button. */
export function CreateApiKeyModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('ReadOnly');
  const [created, setCreated] = useState<string | null>(null);
  const create = useApiMutation(CreateApiKeyMutation, { success: 'API key created.' });

  const close = () => {
    setName('');
    setRole('ReadOnly');
    setCreated(null);
    onClose();
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const data = await create.run({ name, role });
    if (data) setCreated(data.createApiKey.key);
  };

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
            <TextInput label="Name" description="What uses it, e.g. “billing webhook”." required data-autofocus value={name} onChange={(e) => setName(e.currentTarget.value)} error={create.fieldErrors.name} />
            <RoleSelect value={role} onChange={setRole} description="A key acts with this role." />
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
