import { Alert, Anchor, Button, Code, Stack, TextInput } from '@mantine/core';
import { IconInfoCircle, IconMailForward } from '@tabler/icons-react';
import { Link, useSearchParams } from 'react-router';
import { useMutation } from 'urql';
import { z } from 'zod';
import { ErrorAlert } from '../../../ui/QueryState';
import { useZodForm } from '../../../ui/useZodForm';
import { AuthCard } from '../components/AuthCard';
import { RequestPasswordResetMutation } from '../graphql/documents';

const schema = z.object({ email: z.email('Enter an email address.') });

/**
 * "Forgot password?": asks for the address and sends a single-use link to it. The answer is the same whether or not
 * the address has an account (the page never tells).
 */
export function ForgotPasswordPage() {
  const [params] = useSearchParams();
  const form = useZodForm(schema, { email: params.get('email') ?? '' });
  const [{ data, fetching, error }, request] = useMutation(RequestPasswordResetMutation);

  const submit = form.onSubmit(async ({ email }) => {
    await request({ email: email.trim() });
  });

  if (data?.requestPasswordReset.emailDeliveryMode === 'DEVELOPMENT') {
    // No mail provider: say where the link is kept and who can read it, rather than "check your email".
    return (
      <AuthCard title="No email is sent" subtitle={data.requestPasswordReset.message}>
        <Alert color="yellow" variant="light" icon={<IconInfoCircle size={18} />}>
          This server has no mail provider configured, so the link is kept in its email outbox instead. An admin of your company can open it on the
          Emails page (Preview) and pass it on, or send you a link from the Team page; the operator reads it with{' '}
          <Code>pnpm cli outbox:list --kind password-reset --body</Code>.
        </Alert>
        <Anchor component={Link} to="/login" size="sm">
          Back to sign in
        </Anchor>
      </AuthCard>
    );
  }
  if (data) {
    return (
      <AuthCard title="Check your email" subtitle={data.requestPasswordReset.message}>
        <Alert color="indigo" variant="light" icon={<IconMailForward size={18} />}>
          Open the link in the email to choose a new password. Nothing arrived? Check the spam folder, or ask an admin of your company to send you a link from the Team page.
        </Alert>
        <Anchor component={Link} to="/login" size="sm">
          Back to sign in
        </Anchor>
      </AuthCard>
    );
  }
  return (
    <AuthCard title="Forgot your password?" subtitle="We email you a link to choose a new one. It works once, within 30 minutes.">
      <form onSubmit={submit} noValidate>
        <Stack>
          {error && <ErrorAlert error={error} title="Could not send the link" />}
          <TextInput label="Email" type="email" autoComplete="username" required autoFocus {...form.getInputProps('email')} />
          <Button type="submit" loading={fetching} fullWidth>
            Email me a link
          </Button>
          <Anchor component={Link} to="/login" size="sm" ta="center">
            Back to sign in
          </Anchor>
        </Stack>
      </form>
    </AuthCard>
  );
}
