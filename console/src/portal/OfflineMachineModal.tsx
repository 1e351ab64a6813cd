import { Alert, Button, Group, Modal, SegmentedControl, Stack, Text, Textarea } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useMutation } from 'urql';
import { errorMessage, fileNamePart, saveTextFile, UploadActivationRequestMutation, UploadDeactivationProofMutation, type License } from './api';

/**
 * A machine that never reaches the internet (docs/integrate/license-files.md): the customer brings its activation
 * request here and takes the license file back, or brings the deactivation proof it wrote to free its seat.
 */
export function OfflineMachineModal({ opened, onClose, license, onChanged }: { opened: boolean; onClose: () => void; license: License; onChanged: (license: License) => void }) {
  const [mode, setMode] = useState<'activate' | 'deactivate'>('activate');
  const [text, setText] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [activation, activate] = useMutation(UploadActivationRequestMutation);
  const [deactivation, deactivate] = useMutation(UploadDeactivationProofMutation);
  const close = () => {
    setText('');
    setDone(null);
    setProblem(null);
    onClose();
  };
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (mode === 'activate') {
      const answer = await activate({ licenseId: license.id, request: text });
      setProblem(errorMessage(answer.error));
      if (!answer.data) return;
      const file = answer.data.uploadActivationRequest;
      saveTextFile(`${fileNamePart(license.productName)}-${fileNamePart(file.deviceId ?? 'device')}.lic`, file.licenseFile);
      setDone('The machine is activated. Its license file was downloaded: copy it to the machine, next to the application.');
    } else {
      const answer = await deactivate({ licenseId: license.id, proof: text });
      setProblem(errorMessage(answer.error));
      if (!answer.data) return;
      onChanged(answer.data.uploadDeactivationProof.license);
      setDone('The machine’s seat is free again.');
    }
    setText('');
  };
  return (
    <Modal opened={opened} onClose={close} title="Machine without internet" centered size="lg" closeButtonProps={{ 'aria-label': 'Close' }}>
      <form onSubmit={(event) => void submit(event)}>
        <Stack>
          <SegmentedControl
            value={mode}
            onChange={(value) => {
              setMode(value as typeof mode);
              setDone(null);
              setProblem(null);
            }}
            data={[
              { value: 'activate', label: 'Activate it' },
              { value: 'deactivate', label: 'Free its seat' },
            ]}
          />
          <Text size="sm" c="dimmed">
            {mode === 'activate'
              ? 'Paste the activation request the application wrote on the machine. You get its license file back.'
              : 'Paste the deactivation proof the application wrote when it gave its seat up on the machine.'}
          </Text>
          {done && (
            <Alert color="#1e6b34" variant="outline">
              {done}
            </Alert>
          )}
          <Textarea
            label={mode === 'activate' ? 'Activation request' : 'Deactivation proof'}
            placeholder={mode === 'activate' ? '-----BEGIN KEYFORGE ACTIVATION REQUEST-----' : '-----BEGIN KEYFORGE DEACTIVATION PROOF-----'}
            autosize
            minRows={5}
            maxRows={12}
            value={text}
            onChange={(event) => setText(event.currentTarget.value)}
            error={problem}
            required
            styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 12 } }}
          />
          <Group justify="flex-end">
            <Button type="submit" loading={activation.fetching || deactivation.fetching} disabled={!text.trim()}>
              {mode === 'activate' ? 'Activate and download' : 'Free the seat'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
