import { Alert, Button, FileInput, Group, Modal, NumberInput, Paper, PasswordInput, Stack, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconDownload, IconFileCertificate, IconPlugConnectedX, IconPlugConnected } from '@tabler/icons-react';
import { useState } from 'react';
import { saveFile } from '../../../lib/download';
import { formatDateTime } from '../../../lib/format';
import { ModalFooter } from '../../../ui/ModalFooter';
import { useApiMutation } from '../../../ui/useApiMutation';
import { ActivateOfflineMutation, DeactivateOfflineMutation, IssueLicenseFileMutation } from '../graphql/documents';

interface OfflineLicense {
  id: string;
  keyHint: string;
}

/** A file name from the key hint (`ACME-…-WZ3P` → `ACME-WZ3P`). */
const fileName = (license: OfflineLicense, suffix: string) => `${license.keyHint.replace(/[^A-Za-z0-9]+/g, '-').replace(/-+/g, '-')}${suffix}`;
const saveText = (text: string, name: string) => saveFile(new Blob([text], { type: 'text/plain' }), name);

/** The text of a chosen file, or the pasted text. */
async function textOf(file: File | null, pasted: string): Promise<string> {
  return file ? await file.text() : pasted;
}

/** Armored text the device wrote: a file to choose, or the text pasted. */
function ArmoredInput({ what, label, text, onText, file, onFile }: { what: string; label: string; text: string; onText: (text: string) => void; file: File | null; onFile: (file: File | null) => void }) {
  return (
    <>
      <FileInput label={`${what.charAt(0).toUpperCase()}${what.slice(1)} file`} placeholder="Choose a file" clearable value={file} onChange={onFile} accept=".txt,.req,text/plain" />
      <Textarea
        label={`Or paste the ${what}`}
        placeholder={`-----BEGIN KEYFORGE ${label}-----`}
        value={text}
        onChange={(event) => onText(event.currentTarget.value)}
        disabled={file !== null}
        autosize
        minRows={5}
        maxRows={10}
        styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
      />
    </>
  );
}

/**
 * Offline use of a license: download a signed license file, activate an air-gapped device from its activation
 * request (the answer is its device license file), and free a device from its deactivation proof.
 */
export function OfflineCard({ license }: { license: OfflineLicense }) {
  const [dialog, setDialog] = useState<'file' | 'activate' | 'deactivate' | null>(null);
  const close = () => setDialog(null);
  return (
    <Paper p="lg">
      <Title order={3} size="h4" mb={4}>
        Offline use
      </Title>
      <Text size="sm" c="dimmed" mb="sm">
        Signed license files let the application run without reaching this server, until they expire. A machine that is never online activates with a request
        file it writes, and gives its seat back with a deactivation proof.
      </Text>
      <Group gap="sm">
        <Button variant="default" leftSection={<IconFileCertificate size={16} />} onClick={() => setDialog('file')}>
          Download license file
        </Button>
        <Button variant="default" leftSection={<IconPlugConnected size={16} />} onClick={() => setDialog('activate')}>
          Offline activation
        </Button>
        <Button variant="default" leftSection={<IconPlugConnectedX size={16} />} onClick={() => setDialog('deactivate')}>
          Offline deactivation
        </Button>
      </Group>
      <LicenseFileModal license={license} opened={dialog === 'file'} onClose={close} />
      <ActivateOfflineModal license={license} opened={dialog === 'activate'} onClose={close} />
      <DeactivateOfflineModal license={license} opened={dialog === 'deactivate'} onClose={close} />
    </Paper>
  );
}

function LicenseFileModal({ license, opened, onClose }: { license: OfflineLicense; opened: boolean; onClose: () => void }) {
  const issue = useApiMutation(IssueLicenseFileMutation, { success: 'License file downloaded.' });
  const [deviceId, setDeviceId] = useState('');
  const [ttlDays, setTtlDays] = useState<string | number>('');
  const [licenseKey, setLicenseKey] = useState('');
  const submit = async () => {
    const data = await issue.run({ input: { licenseId: license.id, deviceId: deviceId.trim() || null, ttlDays: ttlDays === '' ? null : Number(ttlDays), licenseKey: licenseKey.trim() || null } });
    if (!data) return;
    saveText(data.issueLicenseFile.licenseFile, fileName(license, deviceId.trim() ? '-device.lic' : '.lic'));
    onClose();
  };
  return (
    <Modal opened={opened} onClose={onClose} title="Download a license file">
      <form onSubmit={(event) => { event.preventDefault(); void submit(); }}>
        <Stack>
          <Text size="sm">A signed file with this license&apos;s entitlement. The application verifies it offline (SDK verifyLicenseFile) until it expires.</Text>
          <TextInput label="Device id" description="Optional: bind the file to one activated device." value={deviceId} onChange={(event) => setDeviceId(event.currentTarget.value)} maxLength={256} />
          <NumberInput label="Valid for (days)" description="Optional: default is the product's setting; never past the license's expiry." min={1} max={3650} allowDecimal={false} value={ttlDays} onChange={setTtlDays} />
          <PasswordInput label="Encrypt with the license key" description="Optional: the file then reveals nothing without the key. It is not stored." value={licenseKey} onChange={(event) => setLicenseKey(event.currentTarget.value)} autoComplete="off" />
          <ModalFooter confirmLabel="Download" loading={issue.saving} onCancel={onClose} />
        </Stack>
      </form>
    </Modal>
  );
}

function ActivateOfflineModal({ license, opened, onClose }: { license: OfflineLicense; opened: boolean; onClose: () => void }) {
  const activate = useApiMutation(ActivateOfflineMutation);
  const [pasted, setPasted] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [answer, setAnswer] = useState<{ licenseFile: string; expiresAt: string; reused: boolean; remainingActivations: number } | null>(null);
  const reset = () => {
    setPasted('');
    setFile(null);
    setAnswer(null);
    onClose();
  };
  const submit = async () => {
    const data = await activate.run({ input: { licenseId: license.id, request: await textOf(file, pasted) } });
    if (data) setAnswer({ ...data.activateOffline, expiresAt: String(data.activateOffline.expiresAt) });
  };
  return (
    <Modal opened={opened} onClose={reset} title="Offline activation" size="lg">
      {answer ? (
        <Stack>
          <Alert color="green" title={answer.reused ? 'The device already held a seat' : 'Device activated'}>
            {answer.reused ? 'No new seat was taken.' : `${answer.remainingActivations} seat(s) left.`} Give the activation response below back to the device; it is
            valid until {formatDateTime(answer.expiresAt)}.
          </Alert>
          <Textarea label="Activation response" value={answer.licenseFile} readOnly autosize minRows={6} maxRows={12} styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }} />
          <ModalFooter confirmLabel="Done" onConfirm={reset}>
            <Button variant="default" leftSection={<IconDownload size={16} />} onClick={() => saveText(answer.licenseFile, fileName(license, '-activation.lic'))}>
              Download response
            </Button>
          </ModalFooter>
        </Stack>
      ) : (
        <form onSubmit={(event) => { event.preventDefault(); void submit(); }}>
          <Stack>
            <Text size="sm">
              Paste the activation request the device wrote (or choose its file). A seat is taken as for an online activation, and the answer is a license file
              bound to that device.
            </Text>
            <ArmoredInput what="request" label="ACTIVATION REQUEST" text={pasted} onText={setPasted} file={file} onFile={setFile} />
            <ModalFooter confirmLabel="Activate" loading={activate.saving} disabled={!file && !pasted.trim()} onCancel={reset} />
          </Stack>
        </form>
      )}
    </Modal>
  );
}

function DeactivateOfflineModal({ license, opened, onClose }: { license: OfflineLicense; opened: boolean; onClose: () => void }) {
  const deactivate = useApiMutation(DeactivateOfflineMutation, { success: (data) => `Device ${data.deactivateOffline.deviceId ?? ''} freed; its seat is free again.` });
  const [proof, setProof] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [confirming, { open: confirm, close: unconfirm }] = useDisclosure(false);
  const reset = () => {
    setProof('');
    setFile(null);
    unconfirm();
    onClose();
  };
  const submit = async () => {
    const data = await deactivate.run({ input: { licenseId: license.id, proof: await textOf(file, proof) } });
    if (data) reset();
  };
  return (
    <Modal opened={opened} onClose={reset} title="Offline deactivation" size="lg">
      <form onSubmit={(event) => { event.preventDefault(); if (confirming) void submit(); else confirm(); }}>
        <Stack>
          <Text size="sm">Paste the deactivation proof the device wrote when its license file was removed. It frees that one device, once.</Text>
          <ArmoredInput what="proof" label="DEACTIVATION PROOF" text={proof} onText={setProof} file={file} onFile={setFile} />
          {confirming && <Alert color="orange">The device&apos;s seat is freed. Press &quot;Free the device&quot; again to confirm.</Alert>}
          <ModalFooter confirmLabel={confirming ? 'Free the device' : 'Check and free'} danger={confirming} loading={deactivate.saving} disabled={!file && !proof.trim()} onCancel={reset} />
        </Stack>
      </form>
    </Modal>
  );
}
