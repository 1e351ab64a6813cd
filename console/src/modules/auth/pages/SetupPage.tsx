import { Button, PasswordInput, Stack, TextInput } from '@mantine/core';
import { useNavigate } from 'react-router';
import { useMutation } from 'urql';
import { z } from 'zod';
import { fieldErrors } from '../../../lib/errors';
import { ErrorAlert } from '../../../ui/QueryState';
import { serverFieldErrors } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { AuthCard } from '../components/AuthCard';
import { SetupMutation } from '../graphql/documents';
import { acceptSession } from '../hooks/useSession';
import { keyPrefixSchema, passwordSchema } from '../validation';

/** First run: creates the company and its first admin, then signs in. Open only while no user exists. */
const schema = z
  .object({ keyPrefix: keyPrefixSchema, password: passwordSchema, confirm: z.string() })
  .refine((form) => form.confirm === form.password, { path: ['confirm'], message: 'The passwords do not match.', when: () => true });

export function SetupPage() {
  const form = useZodForm(schema, { companyName: '', keyPrefix: '', name: '', email: '', password: '', confirm: '' });
  const [{ fetching, error }, setup] = useMutation(SetupMutation);
  const navigate = useNavigate();
  const values = form.getValues();

  const submit = form.onSubmit(async ({ confirm: _confirm, name, ...rest }) => {
    const result = await setup({ ...rest, name: name.trim() || null });
    form.setErrors(serverFieldErrors(fieldErrors(result.error)));
    if (result.data && acceptSession(result.data.setup)) navigate('/', { replace: true });
  });

  return (
    <AuthCard title="Set up Keyforge" subtitle="Create your company and the first admin account. This page is only available until the first user exists." footer="You can invite the rest of your team afterwards.">
      <form onSubmit={submit} noValidate>
        <Stack>
          {error && <ErrorAlert error={error} title="Setup failed" />}
          <TextInput label="Company name" required autoFocus {...form.getInputProps('companyName')} description="Shown in emails to your customers." />
          <TextInput
            label="License key prefix"
            required
            {...form.getInputProps('keyPrefix')}
            onChange={(e) => form.setFieldValue('keyPrefix', e.currentTarget.value.toUpperCase())}
            description={`Keys will look like ${values.keyPrefix || 'ACME'}-XXXX-XXXX-XXXX-XXXX.`}
            maxLength={12}
          />
          <TextInput label="Your name" {...form.getInputProps('name')} autoComplete="name" />
          <TextInput label="Email" type="email" required {...form.getInputProps('email')} autoComplete="username" />
          <PasswordInput label="Password" required {...form.getInputProps('password')} autoComplete="new-password" description="At least 10 characters." />
          <PasswordInput label="Repeat password" required {...form.getInputProps('confirm')} autoComplete="new-password" />
          <Button type="submit" loading={fetching} fullWidth>
            Create company and sign in
          </Button>
        </Stack>
      </form>
    </AuthCard>
  );
}
