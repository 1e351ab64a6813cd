import { Button, Group, Modal, PasswordInput, Stack, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useApiMutation } from '../../../ui/useApiMutation';
import { validatePassword } from '../../auth/validation';
import { CreateUserMutation } from '../graphql/documents';
import { RoleSelect, type Role } from './RoleSelect';

const EMPTY = { email: '', name: '', password: '', role: 'ReadOnly' as Role };

/** Adds a team member with an initial password (to hand over securely; they change it under My profile). */
export function AddMemberModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const [form, setForm] = useState(EMPTY);
  const [touched, setTouched] = useState(false);
  const create = useApiMutation(CreateUserMutation, { success: (data) => `${data.createUser.email} can now sign in.` });
  const passwordProblem = validatePassword(form.password);

  const close = () => {
    setForm(EMPTY);
    setTouched(false);
    onClose();
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setTouched(true);
    if (passwordProblem) return;
    if (await create.run({ email: form.email, password: form.password, role: form.role, name: form.name.trim() || null })) close();
  };

  return (
    <Modal opened={opened} onClose={close} title="Add team member" centered>
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Email" type="email" required data-autofocus value={form.email} onChange={(e) => setForm({ ...form, email: e.currentTarget.value })} error={create.fieldErrors.email} />
          <TextInput label="Name" value={form.name} onChange={(e) => setForm({ ...form, name: e.currentTarget.value })} />
          <RoleSelect value={form.role} onChange={(role) => setForm({ ...form, role })} />
          <PasswordInput
            label="Initial password"
            required
            autoComplete="new-password"
            description="Share it securely; they can change it under My profile."
            value={form.password}
            onChange={(e) => setForm({ ...form, password: e.currentTarget.value })}
            error={(touched && passwordProblem) || create.fieldErrors.password}
          />
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
