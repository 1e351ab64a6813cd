import { Anchor, Badge, Button, Code, Group, Paper, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useQuery } from 'urql';
import { QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { ConfirmMfaEnrollmentMutation, DisableMfaMutation, MfaStatusQuery, StartMfaEnrollmentMutation } from '../graphql/documents';
import { BackupCodes } from './BackupCodes';
import { QrCode } from './QrCode';

/** Two-factor authentication: enroll (QR code → confirm with a code → backup codes) or turn it off. */
export function MfaCard() {
  const [result, reload] = useQuery({ query: MfaStatusQuery });
  const [backupCodes, setBackupCodes] = useState<string[] | null>(null);

  return (
    <Paper p="lg">
      <Stack>
        <Group justify="space-between">
          <div>
            <Title order={3} size="h4">
              Two-factor authentication
            </Title>
            <Text size="sm" c="dimmed">
              A code from an authenticator app (1Password, Google Authenticator, Authy…) at every sign-in.
            </Text>
          </div>
          {result.data && (
            <Badge color={result.data.me.mfaEnabled ? 'teal' : 'gray'} variant="light" size="lg">
              {result.data.me.mfaEnabled ? 'On' : 'Off'}
            </Badge>
          )}
        </Group>
        <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
          {(data) =>
            backupCodes ? (
              <BackupCodes codes={backupCodes} onDone={() => setBackupCodes(null)} />
            ) : data.me.mfaEnabled ? (
              <DisableMfa />
            ) : (
              <EnrollMfa onEnrolled={setBackupCodes} />
            )
          }
        </QueryState>
      </Stack>
    </Paper>
  );
}

function EnrollMfa({ onEnrolled }: { onEnrolled: (codes: string[]) => void }) {
  const [enrollment, setEnrollment] = useState<{ secret: string; otpauthUrl: string } | null>(null);
  const [code, setCode] = useState('');
  const start = useApiMutation(StartMfaEnrollmentMutation);
  const confirm = useApiMutation(ConfirmMfaEnrollmentMutation, { success: 'Two-factor authentication is on.', showsFieldErrors: true });

  if (!enrollment) {
    return (
      <Group>
        <Button loading={start.saving} onClick={async () => setEnrollment((await start.run({}))?.startMfaEnrollment ?? null)}>
          Enable two-factor authentication
        </Button>
      </Group>
    );
  }

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const data = await confirm.run({ code: code.trim() });
    if (data) onEnrolled(data.confirmMfaEnrollment.backupCodes);
  };

  return (
    <form onSubmit={submit}>
      <Group align="flex-start" gap="xl">
        <QrCode value={enrollment.otpauthUrl} label="QR code for your authenticator app" />
        <Stack gap="sm" style={{ flex: 1, minWidth: 240 }}>
          <Text size="sm">1. Scan the QR code with your authenticator app.</Text>
          <Text size="sm">
            Can't scan it? Enter this key instead: <Code data-testid="mfa-secret">{enrollment.secret}</Code>
          </Text>
          <Text size="sm">2. Enter the 6-digit code it shows.</Text>
          <TextInput
            label="Code from the app"
            inputMode="numeric"
            autoComplete="one-time-code"
            maxLength={6}
            required
            data-autofocus
            value={code}
            onChange={(e) => setCode(e.currentTarget.value.replace(/\D/g, ''))}
            error={confirm.fieldErrors.code}
            w={180}
          />
          <Group>
            <Button type="submit" loading={confirm.saving} disabled={code.length !== 6}>
              Confirm and turn on
            </Button>
            <Anchor component="button" type="button" size="sm" onClick={() => setEnrollment(null)}>
              Cancel
            </Anchor>
          </Group>
        </Stack>
      </Group>
    </form>
  );
}

function DisableMfa() {
  const [code, setCode] = useState('');
  const disable = useApiMutation(DisableMfaMutation, { success: 'Two-factor authentication is off.', showsFieldErrors: true });
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const value = code.trim();
    // Six digits: an authenticator code; anything else: a backup code.
    const args = /^\d{6}$/.test(value) ? { totpCode: value } : { backupCode: value };
    if (await disable.run(args)) setCode('');
  };
  return (
    <form onSubmit={submit}>
      <Group align="flex-end">
        <TextInput
          label="Turn off with a current code"
          description="A code from your app, or a backup code."
          autoComplete="one-time-code"
          value={code}
          onChange={(e) => setCode(e.currentTarget.value)}
          error={disable.fieldErrors.code}
          w={260}
        />
        <Button type="submit" color="red" variant="light" loading={disable.saving} disabled={!code.trim()}>
          Turn off
        </Button>
      </Group>
    </form>
  );
}
