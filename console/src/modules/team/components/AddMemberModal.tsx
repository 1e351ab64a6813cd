import { Button, Group, Modal, PasswordInput, Stack, TextInput } from '@mantine/core';
import { z } from 'zod';
import { readFragment } from '../../../graphql';
import { TeamMemberFields } from './MembersTable';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { passwordSchema } from '../../auth/validation';
import { CreateUserMutation } from '../graphql/documents';
import { RoleSelect, type Role } from './RoleSelect';

const EMPTY = { email: '', name: '', password: '', role: 'READ_ONLY' as Role };
const schema = z.object({ password: passwordSchema });

/** Adds a team member with an initial password (to hand over securely; they change it under My profile). */
export function AddMemberModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const form = useZodForm(schema, EMPTY);
  const create = useApiMutation(CreateUserMutation, { success: (data) => `${readFragment(TeamMemberFields, data.createUser.user).email} can now sign in.` });

  const close = () => {
    form.reset();
    onClose();
  };

  const submit = form.onSubmit(async (values) => {
    if (await create.run({ email: values.email, password: values.password, role: values.role, name: values.name.trim() || null }, { form })) close();
  });

  return (
    <Modal opened={opened} onClose={close} title="Add team member" centered>
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Email" type="email" required data-autofocus {...form.getInputProps('email')} />
          <TextInput label="Name" {...form.getInputProps('name')} />
          <RoleSelect {...form.getInputProps('role')} value={form.getValues().role} />
          <PasswordInput label="Initial password" required autoComplete="new-password" description="Share it securely; they can change it under My profile." {...form.getInputProps('password')} />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" loading={create.saving}>
              Add member
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
