import { Alert, Button, Group, Paper, Stack, Text, ThemeIcon } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconDownload, IconShieldCheck, IconShieldSearch, IconShieldX } from '@tabler/icons-react';
import { useState } from 'react';
import { useClient, useQuery } from 'urql';
import { saveFile } from '../../../lib/download';
import { errorMessage } from '../../../lib/errors';
import { formatDateTime, formatNumber } from '../../../lib/format';
import { notifyError, notifySuccess } from '../../../ui/notify';
import { ActivityCheckpointFileQuery, ActivityIntegrityQuery } from '../graphql/documents';
import { VerifyCheckpointsModal } from './VerifyCheckpointsModal';

/** What the checkpoint file holds (server: services/audit/verification.ts, checkpointFile). */
interface CheckpointFile {
  company: { keyPrefix: string };
  checkpoints: { seq: number; createdAt: string }[];
}

/**
 * The activity log's tamper evidence: this visit's check and the last full verification's verdict, the newest
 * signed checkpoint (downloaded to keep apart from the service), and the verification against kept checkpoints.
 */
export function IntegrityPanel() {
  const [{ data }, reload] = useQuery({ query: ActivityIntegrityQuery });
  const [verifying, verify] = useDisclosure(false);
  const [downloading, setDownloading] = useState(false);
  const client = useClient();
  if (!data) return null;
  const { valid, entries, pendingEntries, brokenAtSeq, problem, lastFullVerification: last, latestCheckpoint: latest } = data.activityLogIntegrity;

  const download = async () => {
    setDownloading(true);
    const result = await client.query(ActivityCheckpointFileQuery, {}, { requestPolicy: 'network-only' }).toPromise();
    setDownloading(false);
    if (result.error || !result.data) return notifyError(errorMessage(result.error));
    const file = result.data.activityLogCheckpointFile as CheckpointFile;
    const newest = file.checkpoints.at(-1);
    if (!newest) return notifyError('The activity log is empty: there is nothing to sign yet.');
    const name = `keyforge-checkpoint-${file.company.keyPrefix}-${newest.seq}.json`;
    saveFile(new Blob([JSON.stringify(file, null, 2)], { type: 'application/json' }), name);
    notifySuccess(`Checkpoint of entry #${formatNumber(newest.seq)} saved as ${name}. Keep it outside Keyforge.`);
    reload({ requestPolicy: 'network-only' });
  };

  return (
    <Paper p="md" mb="md" data-testid="integrity-panel">
      <Group justify="space-between" align="flex-start" gap="md">
        <Stack gap={6} style={{ flex: '1 1 380px', minWidth: 0 }}>
          <Group gap="xs" wrap="nowrap">
            <ThemeIcon variant="light" color={valid ? 'teal' : 'red'} size="md">
              {valid ? <IconShieldCheck size={16} /> : <IconShieldX size={16} />}
            </ThemeIcon>
            <Text fw={600}>{valid ? `No tampering found: ${formatNumber(entries)} entries verify${pendingEntries > 0 ? ' so far' : ''}` : brokenAtSeq ? `The log was altered at entry #${formatNumber(brokenAtSeq)}` : 'The log was altered'}</Text>
          </Group>
          {valid && pendingEntries > 0 && (
            <Text size="sm" data-testid="integrity-pending">
              {formatNumber(pendingEntries)} newer entries are still to be checked: each visit checks a part (and signs a checkpoint of it), the background check every 15 minutes the rest.
            </Text>
          )}
          {!valid && problem && (
            <Alert color="red" variant="light" p="xs" data-testid="integrity-problem">
              {problem}
            </Alert>
          )}
          <Text size="sm" c="dimmed">
            Last full verification:{' '}
            {last
              ? `${formatDateTime(last.verifiedAt)} — ${last.valid ? 'every entry verified' : `found entry #${last.brokenAtSeq ?? '?'} altered`}${last.keptCheckpoints ? ` (against ${formatNumber(last.keptCheckpoints)} kept checkpoint${last.keptCheckpoints === 1 ? '' : 's'})` : ''}.`
              : 'not yet (it runs nightly).'}
          </Text>
          <Text size="sm" c="dimmed">
            Newest checkpoint: {latest ? `entry #${formatNumber(latest.seq)}, signed ${formatDateTime(latest.createdAt)}` : 'none yet'}. Keep checkpoints outside Keyforge (download
            one, or receive each as the <code>audit.checkpoint</code> webhook event): the log must still extend them later, whatever is done to the database.
          </Text>
        </Stack>
        <Group gap="xs">
          <Button variant="default" leftSection={<IconDownload size={16} />} loading={downloading} onClick={download}>
            Download checkpoint
          </Button>
          <Button leftSection={<IconShieldSearch size={16} />} onClick={verify.open}>
            Verify against kept checkpoints
          </Button>
        </Group>
      </Group>
      <VerifyCheckpointsModal opened={verifying} onClose={verify.close} onVerified={() => reload({ requestPolicy: 'network-only' })} />
    </Paper>
  );
}
