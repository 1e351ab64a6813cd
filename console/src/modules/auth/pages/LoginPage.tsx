import { Alert, Anchor, Button, PasswordInput, PinInput, Stack, Text, TextInput } from '@mantine/core';
import { IconLock } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { useMutation } from 'urql';
import { errorCode, errorMessage } from '../../../lib/errors';
import { AuthCard } from '../components/AuthCard';
import { readFragment } from '../../../graphql';
import { LoginMutation, SessionFields } from '../graphql/documents';
import { acceptSession } from '../hooks/useSession';
import { safeNext } from '../next';

type Step = 'password' | 'totp' | 'backup';

/** Sign-in: email and password, then (MFA on) an authenticator code or a backup code. */
export function LoginPage() {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [step, setStep] = useState<Step>('password');
  const [{ fetching, error }, login] = useMutation(LoginMutation);
  const navigate = useNavigate();
  const [params] = useSearchParams();

  const submit = async (event?: FormEvent) => {
    event?.preventDefault();
    const codes = step === 'totp' ? { totpCode: code } : step === 'backup' ? { backupCode: code } : {};
    const result = await login({ email, password, ...codes });
    if (!result.data) return;
    const outcome = result.data.login;
    if (outcome.__typename === 'LoginSuccess' && acceptSession(readFragment(SessionFields, outcome))) {
      navigate(safeNext(params.get('next')), { replace: true });
    } else if (outcome.__typename === 'PasswordChangeRequired') {
      // Someone else set this password: choose one's own first (the token in the fragment, as in an emailed link).
      navigate(`/reset-password#token=${encodeURIComponent(outcome.resetToken)}`);
    } else {
      setStep('totp');
      setCode('');
    }
  };

  const failure = errorCode(error);
  const problem = error && (
    <Alert color="red" variant="light" icon={<IconLock size={18} />} title={failure === 'AccountLocked' ? 'Account locked' : 'Could not sign in'} role="alert">
      {errorMessage(error)}
      {failure === 'AccountLocked' && <Text size="sm" mt={4}>For your security, sign-in is paused after 5 failed attempts within 15 minutes. <Anchor component={Link} to="/forgot-password" inherit>Reset your password</Anchor> to sign in now, or ask an admin to unlock your account on the Team page.</Text>}
    </Alert>
  );

  if (step === 'password') {
    return (
      <AuthCard title="Sign in" subtitle="Manage your products, licenses and team.">
        <form onSubmit={submit}>
          <Stack>
            {problem}
            <TextInput label="Email" type="email" autoComplete="username" required autoFocus value={email} onChange={(e) => setEmail(e.currentTarget.value)} />
            <PasswordInput label="Password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.currentTarget.value)} />
            <Button type="submit" loading={fetching} fullWidth>
              Sign in
            </Button>
            <Anchor component={Link} to={email ? `/forgot-password?email=${encodeURIComponent(email)}` : '/forgot-password'} size="sm" ta="center">
              Forgot password?
            </Anchor>
          </Stack>
        </form>
      </AuthCard>
    );
  }

  const backup = step === 'backup';
  return (
    <AuthCard title="Two-factor authentication" subtitle={backup ? 'Enter one of your backup codes. Each code works once.' : `Enter the 6-digit code from your authenticator app for ${email}.`}>
      <form onSubmit={submit}>
        <Stack>
          {problem}
          {backup ? (
            <TextInput label="Backup code" autoComplete="one-time-code" required autoFocus value={code} onChange={(e) => setCode(e.currentTarget.value)} />
          ) : (
            <Stack gap={4}>
              <Text size="sm" fw={500}>
                Authentication code
              </Text>
              <PinInput
                length={6}
                type="number"
                oneTimeCode
                autoFocus
                value={code}
                onChange={setCode}
                getInputProps={(index) => ({ 'aria-label': `Authentication code, digit ${index + 1} of 6` })}
              />
            </Stack>
          )}
          <Button type="submit" loading={fetching} disabled={!backup && code.length !== 6} fullWidth>
            Verify
          </Button>
          <Anchor component="button" type="button" size="sm" onClick={() => { setStep(backup ? 'totp' : 'backup'); setCode(''); }}>
            {backup ? 'Use the authenticator app instead' : 'Use a backup code instead'}
          </Anchor>
          <Anchor component="button" type="button" size="sm" c="dimmed" onClick={() => { setStep('password'); setCode(''); }}>
            Back to email and password
          </Anchor>
        </Stack>
      </form>
    </AuthCard>
  );
}

