import { Alert, Anchor, Button, Loader, PasswordInput, Stack, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { readFragment } from '../../../graphql';
import { fieldErrors } from '../../../lib/errors';
import { ErrorAlert } from '../../../ui/QueryState';
import { serverFieldErrors } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { AuthCard } from '../components/AuthCard';
import { PasswordResetPreviewQuery, ResetPasswordMutation, SessionFields } from '../graphql/documents';
import { acceptSession } from '../hooks/useSession';
import { newPasswordSchema } from '../validation';
import { tokenFromHash } from './AcceptInvitePage';

/**
 * Choosing a new password with a single-use link (`/reset-password#token=kfr_…`): from the email of "Forgot
 * password?" or of an admin, or handed over by a sign-in whose password someone else set. Lands signed in (every
 * other session ended); with MFA on, back to sign-in with the new password and a code.
 */
export function ResetPasswordPage() {
  const [token] = useState(() => tokenFromHash(window.location.hash));
  const [{ data, fetching, error: loadError }] = useQuery({ query: PasswordResetPreviewQuery, variables: { token }, pause: !token, requestPolicy: 'network-only' });
  const reset = data?.passwordReset;

  if (!token || (data && !reset)) {
    return (
      <AuthCard title="This link does not work" subtitle="It is invalid, already used or expired.">
        <Text size="sm">Ask for a new one: it works once, within 30 minutes.</Text>
        <Anchor component={Link} to="/forgot-password" size="sm">
          Email me a new link
        </Anchor>
      </AuthCard>
    );
  }
  if (loadError) {
    return (
      <AuthCard title="Choose a new password">
        <ErrorAlert error={loadError} />
      </AuthCard>
    );
  }
  if (fetching || !reset) {
    return (
      <AuthCard title="Choose a new password">
        <Loader size="sm" />
      </AuthCard>
    );
  }
  return <ResetForm token={token} email={reset.email} mustChange={reset.passwordMustChange} />;
}

function ResetForm({ token, email, mustChange }: { token: string; email: string; mustChange: boolean }) {
  const form = useZodForm(newPasswordSchema, { password: '', confirm: '' });
  const [{ fetching, error }, resetPassword] = useMutation(ResetPasswordMutation);
  const [mfaDue, setMfaDue] = useState(false);
  const navigate = useNavigate();

  const submit = form.onSubmit(async ({ password }) => {
    const result = await resetPassword({ token, password });
    form.setErrors(serverFieldErrors(fieldErrors(result.error)));
    const outcome = result.data?.resetPassword;
    if (!outcome) return;
    window.history.replaceState(null, '', window.location.pathname);
    if (outcome.__typename === 'LoginSuccess' && acceptSession(readFragment(SessionFields, outcome))) navigate('/', { replace: true });
    else setMfaDue(true);
  });

  if (mfaDue) {
    return (
      <AuthCard title="Password changed" subtitle="You were signed out everywhere.">
        <Text size="sm">Sign in with your new password and the code from your authenticator app.</Text>
        <Button component={Link} to="/login" fullWidth>
          Sign in
        </Button>
      </AuthCard>
    );
  }
  return (
    <AuthCard title="Choose a new password" subtitle={`for ${email}`}>
      <form onSubmit={submit} noValidate>
        <Stack>
          {mustChange && (
            <Alert color="yellow" variant="light" title="Your password was set by someone else">
              Choose your own before you continue.
            </Alert>
          )}
          {error && Object.keys(fieldErrors(error)).length === 0 && <ErrorAlert error={error} title="Could not change the password" />}
          <TextInput label="Email" value={email} readOnly autoComplete="username" />
          <PasswordInput label="New password" required autoFocus {...form.getInputProps('password')} autoComplete="new-password" description="At least 10 characters." />
          <PasswordInput label="Repeat password" required {...form.getInputProps('confirm')} autoComplete="new-password" />
          <Button type="submit" loading={fetching} fullWidth>
            Change password and sign in
          </Button>
          <Text size="xs" c="dimmed">
            Every other session of your account ends.
          </Text>
        </Stack>
      </form>
    </AuthCard>
  );
}
