import { Autocomplete, FileInput, Group, Modal, Progress, Stack, Text } from '@mantine/core';
import { IconUpload } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { ModalFooter } from '../../../ui/ModalFooter';
import { notifyError, notifySuccess } from '../../../ui/notify';
import type { Release } from '../graphql/documents';
import { formatBytes, uploadArtifact, UploadError } from '../upload';

const PLATFORMS = ['win32', 'darwin', 'linux'];
const ARCHES = ['x64', 'arm64', 'universal', 'ia32'];

/** Uploads one file to a draft release, with the upload's progress; `onUploaded` refreshes the list. */
export function UploadArtifactModal({ release, onClose, onUploaded }: { release: Release | null; onClose: () => void; onUploaded: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [platform, setPlatform] = useState('');
  const [arch, setArch] = useState('');
  const [percent, setPercent] = useState<number | null>(null);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [uploaded, setUploaded] = useState<number | null>(null);
  const uploading = percent !== null && uploaded === null;
  useEffect(() => {
    if (!release) return;
    setFile(null);
    setPercent(null);
    setUploaded(null);
    setFields({});
  }, [release]);

  const start = async () => {
    if (!release || !file) return;
    setFields({});
    setPercent(0);
    try {
      const artifact = await uploadArtifact({ releaseId: release.id, file, platform: platform.trim(), arch: arch.trim() }, setPercent);
      setUploaded(artifact.size);
      notifySuccess(`${file.name} (${formatBytes(artifact.size)}) was uploaded to ${release.version}.`);
      onUploaded();
    } catch (error) {
      setPercent(null);
      if (error instanceof UploadError) setFields(error.fields);
      notifyError(error instanceof Error ? error.message : String(error), 'The upload failed');
    }
  };

  return (
    <Modal opened={release !== null} onClose={() => !uploading && onClose()} title={release ? `Upload a file to ${release.version}` : 'Upload a file'} centered closeOnClickOutside={!uploading}>
      <Stack>
        <FileInput label="File" required placeholder="Pick the installer or archive" leftSection={<IconUpload size={16} />} value={file} onChange={setFile} error={fields.filename ?? fields.body} disabled={uploading || uploaded !== null} clearable />
        <Group grow align="flex-start">
          <Autocomplete label="Platform" required placeholder="win32, darwin, linux" data={PLATFORMS} value={platform} onChange={setPlatform} error={fields.platform} disabled={uploading || uploaded !== null} />
          <Autocomplete label="Architecture" required placeholder="x64, arm64, universal" data={ARCHES} value={arch} onChange={setArch} error={fields.arch} disabled={uploading || uploaded !== null} />
        </Group>
        {percent !== null && (
          <Stack gap={4}>
            <Progress value={percent} size="lg" animated={uploading} aria-label="Upload progress" />
            <Text size="sm" c="dimmed" data-testid="upload-percent">
              {uploaded === null ? `${percent}% of ${file ? formatBytes(file.size) : ''}` : `100%: ${formatBytes(uploaded)} uploaded`}
            </Text>
          </Stack>
        )}
        {uploaded === null ? (
          <ModalFooter onCancel={onClose} confirmLabel="Upload" onConfirm={start} loading={uploading} disabled={!file || !platform.trim() || !arch.trim()} />
        ) : (
          <ModalFooter confirmLabel="Close" onConfirm={onClose} autoFocus />
        )}
      </Stack>
    </Modal>
  );
}
