import { Modal, Stack, Text, TextInput } from '@mantine/core';
import { z } from 'zod';
import { readFragment } from '../../../graphql';
import { InvitationFields } from './InvitationsTable';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { InviteUserMutation } from '../graphql/documents';
import { RoleSelect, type Role } from './RoleSelect';
import { ModalFooter } from '../../../ui/ModalFooter';
import { emailedNotice, useEmailDeliveryMode } from '../../outbox/delivery';

const EMPTY = { email: '', name: '', role: 'READ_ONLY' as Role };
// The address is checked by the server (its message shows on the field).
const schema = z.object({ email: z.string() });

/** Invites a team member by email: they get a one-time link (7 days) to choose their own password. */
export function InviteMemberModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const form = useZodForm(schema, EMPTY);
  const mode = useEmailDeliveryMode();
  const invite = useApiMutation(InviteUserMutation, { success: (data) => emailedNotice(mode, 'Invitation', readFragment(InvitationFields, data.inviteUser.invitation).email) });

  const close = () => {
    form.reset();
    onClose();
  };

  const submit = form.onSubmit(async (values) => {
    if (await invite.run({ email: values.email, role: values.role, name: values.name.trim() || null }, { form })) close();
  });

  return (
    <Modal opened={opened} onClose={close} title="Invite by email" centered>
      <form onSubmit={submit}>
        <Stack>
          <Text size="sm" c="dimmed">
            They receive a link to choose their own password. It works once and expires in 7 days.
          </Text>
          <TextInput label="Email" type="email" required data-autofocus {...form.getInputProps('email')} />
          <TextInput label="Name" {...form.getInputProps('name')} />
          <RoleSelect {...form.getInputProps('role')} value={form.getValues().role} />
          <ModalFooter onCancel={close} confirmLabel="Send invitation" loading={invite.saving} />
        </Stack>
      </form>
    </Modal>
  );
}
