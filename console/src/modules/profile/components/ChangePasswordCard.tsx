import { Button, Group, Paper, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { z } from 'zod';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { useCurrentUser } from '../../auth/hooks/useCurrentUser';
import { passwordSchema } from '../../auth/validation';
import { ChangePasswordMutation } from '../graphql/documents';

const EMPTY = { currentPassword: '', newPassword: '', confirm: '' };
const schema = z
  .object({ currentPassword: z.string(), newPassword: passwordSchema, confirm: z.string() })
  .refine((form) => form.confirm === form.newPassword, { path: ['confirm'], message: 'The passwords do not match.', when: () => true });

export function ChangePasswordCard() {
  const { user } = useCurrentUser();
  const form = useZodForm(schema, EMPTY);
  const change = useApiMutation(ChangePasswordMutation, { success: 'Password changed. Your other sessions were signed out.' });

  const submit = form.onSubmit(async ({ currentPassword, newPassword }) => {
    if (await change.run({ currentPassword, newPassword }, { form })) form.reset();
  });

  return (
    <Paper p="lg">
      <form onSubmit={submit} aria-labelledby="password-title">
        <Stack>
          <div>
            <Title order={3} size="h4" id="password-title">
              Password
            </Title>
            <Text size="sm" c="dimmed">
              Changing it signs you out everywhere else.
            </Text>
          </div>
          {/* Lets password managers file the new password under the right account. */}
          <input type="text" name="username" autoComplete="username" value={user.email} readOnly hidden />
          <PasswordInput label="Current password" required autoComplete="current-password" {...form.getInputProps('currentPassword')} />
          <PasswordInput label="New password" required autoComplete="new-password" description="At least 10 characters." {...form.getInputProps('newPassword')} />
          <PasswordInput label="Repeat new password" required autoComplete="new-password" {...form.getInputProps('confirm')} />
          <Group justify="flex-end">
            <Button type="submit" loading={change.saving}>
              Change password
            </Button>
          </Group>
        </Stack>
      </form>
    </Paper>
  );
}
