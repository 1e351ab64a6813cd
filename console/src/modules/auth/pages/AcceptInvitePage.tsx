import { Anchor, Button, Loader, PasswordInput, Stack, Text, TextInput } from '@mantine/core';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useMutation, useQuery } from 'urql';
import { formatDate } from '../../../lib/format';
import { fieldErrors } from '../../../lib/errors';
import { ErrorAlert } from '../../../ui/QueryState';
import { serverFieldErrors } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { AuthCard } from '../components/AuthCard';
import { AcceptInvitationMutation, InvitationPreviewQuery } from '../graphql/documents';
import { acceptSession } from '../hooks/useSession';
import { newPasswordSchema } from '../validation';

/** The token of `/accept-invite#token=…` (a fragment: it never reaches a server log, a proxy or a Referer). */
export function tokenFromHash(hash: string): string {
  return new URLSearchParams(hash.replace(/^#/, '')).get('token') ?? '';
}

/**
 * Accepting an invitation: shows the company and address, asks for a name and a password (twice), then lands
 * signed in as the new member. Open to anyone with the link; a visitor already signed in who accepts is signed
 * in as the new member instead (the link was sent to that person).
 */
export function AcceptInvitePage() {
  const [token] = useState(() => tokenFromHash(window.location.hash));
  const [{ data, fetching, error: loadError }] = useQuery({ query: InvitationPreviewQuery, variables: { token }, pause: !token, requestPolicy: 'network-only' });
  const invitation = data?.invitation;

  if (!token || (data && !invitation)) {
    return (
      <AuthCard title="This invitation link does not work" subtitle="It is invalid, already used, revoked or expired.">
        <Text size="sm">Ask an admin of your company for a new invitation.</Text>
        <Anchor component={Link} to="/login" size="sm">
          Sign in
        </Anchor>
      </AuthCard>
    );
  }
  if (loadError) {
    return (
      <AuthCard title="Join your team">
        <ErrorAlert error={loadError} />
      </AuthCard>
    );
  }
  if (fetching || !invitation) {
    return (
      <AuthCard title="Join your team">
        <Loader size="sm" />
      </AuthCard>
    );
  }
  return <AcceptForm token={token} invitation={invitation} />;
}

function AcceptForm({ token, invitation }: { token: string; invitation: { email: string; name: string | null; companyName: string; expiresAt: string } }) {
  const form = useZodForm(newPasswordSchema, { name: invitation.name ?? '', password: '', confirm: '' });
  const [{ fetching, error }, accept] = useMutation(AcceptInvitationMutation);
  const navigate = useNavigate();

  const submit = form.onSubmit(async ({ name, password }) => {
    const result = await accept({ token, password, name: name.trim() || null });
    form.setErrors(serverFieldErrors(fieldErrors(result.error)));
    if (result.data && acceptSession(result.data.acceptInvitation)) {
      window.history.replaceState(null, '', window.location.pathname);
      navigate('/', { replace: true });
    }
  });

  return (
    <AuthCard title={`Join ${invitation.companyName}`} subtitle={`as ${invitation.email}`} footer={`This link works once and expires on ${formatDate(invitation.expiresAt)}.`}>
      <form onSubmit={submit} noValidate>
        <Stack>
          {error && <ErrorAlert error={error} title="Could not accept the invitation" />}
          <TextInput label="Email" value={invitation.email} readOnly autoComplete="username" />
          <TextInput label="Your name" {...form.getInputProps('name')} autoComplete="name" autoFocus />
          <PasswordInput label="Password" required {...form.getInputProps('password')} autoComplete="new-password" description="At least 10 characters." />
          <PasswordInput label="Repeat password" required {...form.getInputProps('confirm')} autoComplete="new-password" />
          <Button type="submit" loading={fetching} fullWidth>
            Join and sign in
          </Button>
        </Stack>
      </form>
    </AuthCard>
  );
}
