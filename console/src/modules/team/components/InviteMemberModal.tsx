import { Button, Group, Modal, Stack, Text, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useApiMutation } from '../../../ui/useApiMutation';
import { InviteUserMutation } from '../graphql/documents';
import { RoleSelect, type Role } from './RoleSelect';

const EMPTY = { email: '', name: '', role: 'ReadOnly' as Role };

/** Invites a team member by email: they get a one-time link (7 days) to choose their own password. */
export function InviteMemberModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const [form, setForm] = useState(EMPTY);
  const invite = useApiMutation(InviteUserMutation, { success: (data) => `Invitation sent to ${data.inviteUser.email}.` });

  const close = () => {
    setForm(EMPTY);
    onClose();
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (await invite.run({ email: form.email, role: form.role, name: form.name.trim() || null })) close();
  };

  return (
    <Modal opened={opened} onClose={close} title="Invite by email" centered>
      <form onSubmit={submit}>
        <Stack>
          <Text size="sm" c="dimmed">
            They receive a link to choose their own password. It works once and expires in 7 days.
          </Text>
          <TextInput label="Email" type="email" required data-autofocus value={form.email} onChange={(e) => setForm({ ...form, email: e.currentTarget.value })} error={invite.fieldErrors.email} />
          <TextInput label="Name" value={form.name} onChange={(e) => setForm({ ...form, name: e.currentTarget.value })} />
          <RoleSelect value={form.role} onChange={(role) => setForm({ ...form, role })} />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" loading={invite.saving}>
              Send invitation
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
