import { Button, Group, Paper, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCurrentUser } from '../../auth/hooks/useCurrentUser';
import { validatePassword } from '../../auth/validation';
import { ChangePasswordMutation } from '../graphql/documents';

const EMPTY = { currentPassword: '', newPassword: '', confirm: '' };

export function ChangePasswordCard() {
  const { user } = useCurrentUser();
  const [form, setForm] = useState(EMPTY);
  const [touched, setTouched] = useState(false);
  const change = useApiMutation(ChangePasswordMutation, { success: 'Password changed. Your other sessions were signed out.' });
  const problems = { newPassword: validatePassword(form.newPassword), confirm: form.confirm !== form.newPassword ? 'The passwords do not match.' : undefined };
  const set = (field: keyof typeof form) => (event: { currentTarget: { value: string } }) => setForm({ ...form, [field]: event.currentTarget.value });

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setTouched(true);
    if (problems.newPassword || problems.confirm) return;
    if (await change.run({ currentPassword: form.currentPassword, newPassword: form.newPassword })) {
      setForm(EMPTY);
      setTouched(false);
    }
  };

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
          <PasswordInput label="Current password" required autoComplete="current-password" value={form.currentPassword} onChange={set('currentPassword')} error={change.fieldErrors.currentPassword} />
          <PasswordInput label="New password" required autoComplete="new-password" description="At least 10 characters." value={form.newPassword} onChange={set('newPassword')} error={(touched && problems.newPassword) || change.fieldErrors.newPassword} />
          <PasswordInput label="Repeat new password" required autoComplete="new-password" value={form.confirm} onChange={set('confirm')} error={touched && problems.confirm} />
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
