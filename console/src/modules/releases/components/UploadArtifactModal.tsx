import { Autocomplete, FileInput, Group, Modal, Progress, Stack, Text, TextInput } from '@mantine/core';
import { IconUpload } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { ModalFooter } from '../../../ui/ModalFooter';
import { notifyError, notifySuccess } from '../../../ui/notify';
import type { Release } from '../graphql/documents';
import { formatBytes, uploadArtifact, UploadError } from '../upload';

const PLATFORMS = ['win32', 'darwin', 'linux'];
const ARCHES = ['x64', 'arm64', 'universal', 'ia32'];
// A few suggestions (any type may be typed): a list short enough not to scroll.
const FILETYPES = ['exe', 'msi', 'dmg', 'AppImage', 'deb', 'tar.gz'];
const SHA256 = /^[0-9a-f]{64}$/i;

/** Uploads one file to a draft release, with the upload's progress; `onUploaded` refreshes the list. */
export function UploadArtifactModal({ release, onClose, onUploaded }: { release: Release | null; onClose: () => void; onUploaded: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [platform, setPlatform] = useState('');
  const [arch, setArch] = useState('');
  const [filetype, setFiletype] = useState('');
  const [sha256, setSha256] = useState('');
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
    setFiletype('');
    setSha256('');
  }, [release]);

  const start = async () => {
    if (!release || !file) return;
    // Checked here too, so a mistyped checksum is said before the file is sent.
    if (sha256.trim() && !SHA256.test(sha256.trim())) {
      setFields({ sha256: 'The expected SHA-256 must be 64 hexadecimal digits.' });
      return;
    }
    setFields({});
    setPercent(0);
    try {
      const artifact = await uploadArtifact({ releaseId: release.id, file, platform: platform.trim(), arch: arch.trim(), filetype: filetype.trim(), sha256: sha256.trim().toLowerCase() }, setPercent);
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
        <Autocomplete
          label="File type"
          placeholder="exe, dmg, AppImage, tar.gz"
          description="Leave empty to take it from the file name's extension."
          data={FILETYPES}
          value={filetype}
          onChange={setFiletype}
          error={fields.filetype}
          disabled={uploading || uploaded !== null}
        />
        <Group grow align="flex-start">
          <Autocomplete label="Platform" required placeholder="win32, darwin, linux" data={PLATFORMS} value={platform} onChange={setPlatform} error={fields.platform} disabled={uploading || uploaded !== null} />
          <Autocomplete label="Architecture" required placeholder="x64, arm64, universal" data={ARCHES} value={arch} onChange={setArch} error={fields.arch} disabled={uploading || uploaded !== null} />
        </Group>
        <TextInput
          label="Expected SHA-256"
          placeholder="64 hexadecimal digits (optional)"
          description="The checksum your build computed: the upload is refused if the file that arrives differs."
          ff="monospace"
          spellCheck={false}
          autoComplete="off"
          value={sha256}
          onChange={(event) => setSha256(event.currentTarget.value)}
          error={fields.sha256}
          disabled={uploading || uploaded !== null}
        />
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

