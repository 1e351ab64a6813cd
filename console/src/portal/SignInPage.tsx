import { Alert, Button, Container, Paper, Stack, Text, TextInput, Title } from '@mantine/core';
import { IconMailCheck } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { useMutation } from 'urql';
import { errorMessage, RequestLinkMutation, type Portal } from './api';

/** Sign-in: the customer's email, then "check your inbox" (the same answer whether or not the address has licenses). */
export function SignInPage({ portal, notice }: { portal: Portal; notice: string | null }) {
  const [email, setEmail] = useState('');
  const [sentTo, setSentTo] = useState<string | null>(null);
  const [request, send] = useMutation(RequestLinkMutation);
  const problem = errorMessage(request.error);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const answer = await send({ email: email.trim() });
    if (!answer.error) setSentTo(answer.data!.requestSignInLink.email);
  };

  return (
    <Container size={460} py={{ base: 32, sm: 72 }}>
      <Paper p={{ base: 'lg', sm: 'xl' }} shadow="xs">
        {sentTo ? (
          <Stack>
            <IconMailCheck size={40} stroke={1.5} color="var(--mantine-primary-color-filled)" aria-hidden />
            <Title order={1} size="h3">
              Check your inbox
            </Title>
            <Text>
              If <strong>{sentTo}</strong> has licenses from {portal.name}, a sign-in link is on its way. It works once, for 15 minutes.
            </Text>
            <Text size="sm" c="dimmed">
              Nothing arrived? Check your spam folder, or make sure this is the address your licenses were issued to.
            </Text>
            <Button variant="default" onClick={() => setSentTo(null)}>
              Use another address
            </Button>
          </Stack>
        ) : (
          <form onSubmit={(event) => void submit(event)}>
            <Stack>
              <div>
                <Title order={1} size="h3" mb={6}>
                  Your {portal.name} licenses
                </Title>
                <Text c="dimmed" size="sm">
                  See your licenses and devices, and free a device you no longer use. Enter the email address your licenses were issued to and we will email you a
                  sign-in link — no password needed.
                </Text>
              </div>
              {notice && (
                <Alert color="#9a3d00" variant="outline" title="That link did not work">
                  {notice}
                </Alert>
              )}
              <TextInput label="Email address" type="email" autoComplete="email" required value={email} onChange={(event) => setEmail(event.currentTarget.value)} error={problem} />
              <Button type="submit" loading={request.fetching} fullWidth>
                Email me a sign-in link
              </Button>
            </Stack>
          </form>
        )}
      </Paper>
    </Container>
  );
}
