import { Modal, PasswordInput, Stack, Text, TextInput } from '@mantine/core';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { useClient, useMutation } from 'urql';
import { graphql } from '../graphql';
import { errorMessage, fieldErrors } from '../lib/errors';
import { setReauthPrompter } from '../lib/reauth';
import { ModalFooter } from './ModalFooter';

// The dialog opens over the dialog whose action asked for it (Create API key, Add endpoint, …): it must stack above
// that one's overlay (Mantine's modals sit at z-index 200) or its buttons cannot be reached.
const REAUTH_MODAL_Z_INDEX = 300;

const ReauthMe = graphql(`
  query ReauthMe {
    me {
      id
      mfaEnabled
    }
  }
`);

const Reauthenticate = graphql(`
  mutation Reauthenticate($input: ReauthenticateInput!) {
    reauthenticate(input: $input) {
      reauthenticatedUntil
    }
  }
`);

/**
 * The dialog of recent re-authentication (lib/reauth.ts), mounted once: when an account-security action answers
 * ReauthenticationRequired it asks for the password, and the authenticator or a backup code when MFA is on; the
 * action is then retried. Cancel leaves the action undone.
 */
export function ReauthModal() {
  const client = useClient();
  const [open, setOpen] = useState(false);
  const [mfa, setMfa] = useState(false);
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [errors, setErrors] = useState<{ password?: string; code?: string; form?: string }>({});
  const resolver = useRef<((ok: boolean) => void) | null>(null);
  const [state, reauthenticate] = useMutation(Reauthenticate);

  useEffect(
    () =>
      setReauthPrompter(async () => {
        const me = await client.query(ReauthMe, {}, { requestPolicy: 'network-only' }).toPromise();
        setMfa(me.data?.me?.mfaEnabled ?? false);
        setPassword('');
        setCode('');
        setErrors({});
        setOpen(true);
        return new Promise<boolean>((resolve) => {
          resolver.current = resolve;
        });
      }),
    [client],
  );

  const finish = (ok: boolean) => {
    setOpen(false);
    resolver.current?.(ok);
    resolver.current = null;
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const trimmed = code.replace(/\s/g, '');
    // Six digits are an authenticator code; anything else a backup code.
    const codes = !mfa || !trimmed ? {} : /^\d{6}$/.test(trimmed) ? { totpCode: trimmed } : { backupCode: trimmed };
    const result = await reauthenticate({ input: { password, ...codes } });
    if (result.data?.reauthenticate) return finish(true);
    const fields = fieldErrors(result.error);
    setErrors({ password: fields.password, code: fields.code, form: fields.password || fields.code ? undefined : errorMessage(result.error) });
  };

  return (
    <Modal opened={open} onClose={() => finish(false)} title="Confirm it is you" centered zIndex={REAUTH_MODAL_Z_INDEX}>
      <form onSubmit={submit}>
        <Stack>
          <Text size="sm">This action changes your company's account security. Enter your password{mfa ? ' and a code from your authenticator app (or a backup code)' : ''} to continue; you will not be asked again for 10 minutes.</Text>
          <PasswordInput label="Password" required autoFocus autoComplete="current-password" value={password} onChange={(event) => setPassword(event.currentTarget.value)} error={errors.password} />
          {mfa && <TextInput label="Authentication code" required autoComplete="one-time-code" description="6 digits from your app, or a backup code." value={code} onChange={(event) => setCode(event.currentTarget.value)} error={errors.code} />}
          {errors.form && (
            <Text size="sm" c="red" role="alert">
              {errors.form}
            </Text>
          )}
          <ModalFooter confirmLabel="Confirm" loading={state.fetching} onCancel={() => finish(false)} />
        </Stack>
      </form>
    </Modal>
  );
}
