import { Button, PasswordInput, Stack, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { useMutation } from 'urql';
import { fieldErrors } from '../../../lib/errors';
import { ErrorAlert } from '../../../ui/QueryState';
import { AuthCard } from '../components/AuthCard';
import { SetupMutation } from '../graphql/documents';
import { acceptSession } from '../hooks/useSession';
import { validateKeyPrefix, validatePassword } from '../validation';

/** First run: creates the company and its first admin, then signs in. Open only while no user exists. */
export function SetupPage() {
  const [form, setForm] = useState({ companyName: '', keyPrefix: '', name: '', email: '', password: '', confirm: '' });
  const [touched, setTouched] = useState(false);
  const [{ fetching, error }, setup] = useMutation(SetupMutation);
  const navigate = useNavigate();
  const server = fieldErrors(error);
  const set = (field: keyof typeof form) => (event: { currentTarget: { value: string } }) => setForm({ ...form, [field]: event.currentTarget.value });

  const problems = {
    keyPrefix: validateKeyPrefix(form.keyPrefix) ?? server.keyPrefix,
    password: validatePassword(form.password) ?? server.password,
    confirm: form.confirm !== form.password ? 'The passwords do not match.' : undefined,
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setTouched(true);
    if (problems.keyPrefix || problems.password || problems.confirm) return;
    const { confirm: _confirm, name, ...rest } = form;
    const result = await setup({ ...rest, name: name.trim() || null });
    if (result.data && acceptSession(result.data.setup)) navigate('/', { replace: true });
  };

  return (
    <AuthCard title="Set up Keyforge" subtitle="Create your company and the first admin account. This page is only available until the first user exists." footer="You can invite the rest of your team afterwards.">
      <form onSubmit={submit} noValidate>
        <Stack>
          {error && <ErrorAlert error={error} title="Setup failed" />}
          <TextInput label="Company name" required autoFocus value={form.companyName} onChange={set('companyName')} error={server.companyName} description="Shown in emails to your customers." />
          <TextInput
            label="License key prefix"
            required
            value={form.keyPrefix}
            onChange={(e) => setForm({ ...form, keyPrefix: e.currentTarget.value.toUpperCase() })}
            error={touched && problems.keyPrefix}
            description={`Keys will look like ${form.keyPrefix || 'ACME'}-XXXX-XXXX-XXXX-XXXX.`}
            maxLength={12}
          />
          <TextInput label="Your name" value={form.name} onChange={set('name')} autoComplete="name" />
          <TextInput label="Email" type="email" required value={form.email} onChange={set('email')} autoComplete="username" error={server.email} />
          <PasswordInput label="Password" required value={form.password} onChange={set('password')} autoComplete="new-password" error={touched && problems.password} description="At least 10 characters." />
          <PasswordInput label="Repeat password" required value={form.confirm} onChange={set('confirm')} autoComplete="new-password" error={touched && problems.confirm} />
          <Button type="submit" loading={fetching} fullWidth>
            Create company and sign in
          </Button>
        </Stack>
      </form>
    </AuthCard>
  );
}
