import { Alert, Button, CopyButton, Group, SimpleGrid, Code, Stack, Text } from '@mantine/core';
import { IconCheck, IconCopy, IconDownload } from '@tabler/icons-react';
import { saveFile } from '../../../lib/download';

/** The one-use backup codes, shown once after enrollment: copy or download them. */
export function BackupCodes({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  const text = codes.join('\n');
  const download = () => saveFile(new Blob([`Keyforge backup codes (each works once)\n\n${text}\n`], { type: 'text/plain' }), 'keyforge-backup-codes.txt');
  return (
    <Stack>
      <Alert color="yellow" variant="light" title="Save your backup codes now">
        <Text size="sm">If you lose your authenticator, each of these codes signs you in once. They are not shown again.</Text>
      </Alert>
      <SimpleGrid cols={{ base: 2, xs: 2 }} spacing="xs" data-testid="backup-codes">
        {codes.map((code) => (
          <Code key={code} fz="md" ta="center" py={6}>
            {code}
          </Code>
        ))}
      </SimpleGrid>
      <Group justify="space-between">
        <Group gap="xs">
          <CopyButton value={text}>
            {({ copied, copy }) => (
              <Button variant="default" leftSection={copied ? <IconCheck size={16} /> : <IconCopy size={16} />} onClick={copy}>
                {copied ? 'Copied' : 'Copy all'}
              </Button>
            )}
          </CopyButton>
          <Button variant="default" leftSection={<IconDownload size={16} />} onClick={download}>
            Download
          </Button>
        </Group>
        <Button onClick={onDone}>I have saved them</Button>
      </Group>
    </Stack>
  );
}
