import { Alert, Badge, FileInput, Group, Modal, Paper, Stack, Text, Textarea } from '@mantine/core';
import { useState } from 'react';
import { useClient } from 'urql';
import type { ResultOf } from '../../../graphql';
import { errorMessage } from '../../../lib/errors';
import { formatDateTime, formatNumber } from '../../../lib/format';
import { ActivityVerificationQuery } from '../graphql/documents';
import { ModalFooter } from '../../../ui/ModalFooter';

type Verification = ResultOf<typeof ActivityVerificationQuery>['activityLogVerification'];
type Status = Verification['checkpoints'][number]['status'];

const STATUS: Record<Status, { label: string; color: string }> = {
  EXTENDS: { label: 'Holds', color: 'teal' },
  MISSING: { label: 'Entries missing', color: 'red' },
  DIFFERS: { label: 'Entries changed', color: 'red' },
  UNVERIFIABLE: { label: 'Not verifiable', color: 'orange' },
  OTHER_COMPANY: { label: 'Other company', color: 'gray' },
};

/** Re-hashes the whole log on the server and checks it against the checkpoints the company kept (files or pasted text). */
export function VerifyCheckpointsModal({ opened, onClose, onVerified }: { opened: boolean; onClose: () => void; onVerified: () => void }) {
  const client = useClient();
  const [text, setText] = useState('');
  const [files, setFiles] = useState<File[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<Verification | null>(null);

  const close = () => {
    setResult(null);
    setError(null);
    onClose();
  };
  const run = async () => {
    setBusy(true);
    setError(null);
    setResult(null);
    const checkpoints = [text, ...(await Promise.all(files.map((file) => file.text())))].join('\n');
    const response = await client.query(ActivityVerificationQuery, { checkpoints }, { requestPolicy: 'network-only' }).toPromise();
    setBusy(false);
    if (response.error || !response.data) return setError(errorMessage(response.error));
    setResult(response.data.activityLogVerification);
    onVerified();
  };

  return (
    <Modal opened={opened} onClose={close} title="Verify against kept checkpoints" size="lg">
      <Stack gap="sm">
        <Text size="sm">
          Give the checkpoints you kept: files downloaded here, <code>audit.checkpoint</code> webhook payloads, or lines of the server's log. Every entry
          is re-hashed, and the log must still hold what each checkpoint signed.
        </Text>
        <FileInput multiple clearable label="Checkpoint files" placeholder="Choose files" value={files} onChange={setFiles} accept=".json,.txt,.log,.jsonl,application/json,text/plain" />
        <Textarea
          label="Or paste them"
          placeholder="eyJhbGciOiJFZERTQSIs…"
          autosize
          minRows={3}
          maxRows={8}
          value={text}
          onChange={(event) => setText(event.currentTarget.value)}
          styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 12 } }}
        />
        {error && (
          <Alert color="red" variant="light">
            {error}
          </Alert>
        )}
        <ModalFooter onConfirm={run} confirmLabel="Verify" loading={busy} disabled={!text.trim() && files.length === 0} />
        {result && <VerificationResult result={result} />}
      </Stack>
    </Modal>
  );
}

function VerificationResult({ result }: { result: Verification }) {
  const held = result.checkpoints.filter((checkpoint) => checkpoint.status === 'EXTENDS').length;
  return (
    <Stack gap="xs" data-testid="verification-result">
      {result.valid ? (
        <Alert color="teal" variant="light" title="The log extends every checkpoint you kept">
          {`All ${formatNumber(result.entries)} entries verify, and ${held === 1 ? 'the checkpoint holds' : `all ${held} checkpoints hold`}: nothing they cover was changed or removed.`}
        </Alert>
      ) : (
        <Alert color="red" variant="light" title={result.brokenAtSeq ? `The log was altered at entry #${formatNumber(result.brokenAtSeq)}` : 'The log cannot be proven against these checkpoints'}>
          {result.problem}
        </Alert>
      )}
      {result.checkpoints.map((checkpoint, index) => (
        <Paper key={index} withBorder p="xs">
          <Group gap="xs" wrap="wrap">
            <Badge color={STATUS[checkpoint.status].color} variant="light">
              {STATUS[checkpoint.status].label}
            </Badge>
            <Text size="sm" fw={500}>
              {checkpoint.seq !== null && checkpoint.seq !== undefined ? `Entry #${formatNumber(checkpoint.seq)}` : 'Unreadable checkpoint'}
              {checkpoint.signedAt ? `, signed ${formatDateTime(checkpoint.signedAt)}` : ''}
            </Text>
          </Group>
          <Text size="sm" c="dimmed" mt={4}>
            {checkpoint.message}
          </Text>
        </Paper>
      ))}
    </Stack>
  );
}
