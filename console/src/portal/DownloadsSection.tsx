import { Alert, Badge, Button, Group, Paper, Stack, Text, Title } from '@mantine/core';
import { IconDownload } from '@tabler/icons-react';
import { useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { formatBytes, formatDate } from '../lib/format';
import { DownloadArtifactMutation, DownloadsQuery, errorMessage, type LicenseDownloads, type ReleaseArtifact } from './api';

/** The releases each of the customer's licenses may download; a file's button asks for a short-lived link and follows it. */
export function DownloadsSection() {
  const [result] = useQuery({ query: DownloadsQuery });
  const licenses = result.data?.downloads;
  return (
    <Stack gap="md" component="section" aria-labelledby="portal-downloads">
      <div>
        <Title order={2} size="h3" id="portal-downloads">
          Downloads
        </Title>
        <Text c="dimmed" size="sm">
          The releases your licenses may download.
        </Text>
      </div>
      {result.error && (
        <Alert color="red" variant="light" title="Downloads could not be loaded">
          {errorMessage(result.error)}
        </Alert>
      )}
      {licenses?.map((license) => <LicenseDownloadsCard key={license.licenseId} license={license} />)}
    </Stack>
  );
}

function LicenseDownloadsCard({ license }: { license: LicenseDownloads }) {
  const [download, send] = useMutation(DownloadArtifactMutation);
  const [pending, setPending] = useState<string | null>(null);
  const fetchLink = async (artifact: ReleaseArtifact) => {
    setPending(artifact.id);
    const answer = await send({ licenseId: license.licenseId, artifactId: artifact.id });
    setPending(null);
    if (answer.data) window.location.assign(answer.data.downloadArtifact.url);
  };
  const label = `Downloads for ${license.productName} (${license.keyHint})`;
  return (
    <Paper p="lg" withBorder component="article" aria-label={label}>
      <Stack gap="sm">
        <Text fw={600}>
          {license.productName}{' '}
          <Text span c="dimmed" size="sm">
            {license.keyHint}
          </Text>
        </Text>
        {download.error && (
          <Alert color="red" variant="light" title="The download could not start">
            {errorMessage(download.error)}
          </Alert>
        )}
        {license.refusal && <Text size="sm">{license.refusal}</Text>}
        {!license.refusal && license.releases.length === 0 && (
          <Text size="sm" c="dimmed">
            No release is available to this license yet.
          </Text>
        )}
        {license.releases.map((release) => (
          <Stack key={release.id} gap={6}>
            <Group gap="xs">
              <Title order={3} size="h5">
                Version {release.version}
              </Title>
              {release.channel !== 'stable' && <Badge variant="light">{release.channel}</Badge>}
              <Text size="sm" c="dimmed">
                Published {formatDate(release.publishedAt)}
              </Text>
            </Group>
            {release.notes && (
              <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
                {release.notes}
              </Text>
            )}
            <Group gap="xs">
              {release.artifacts.map((artifact) => (
                <Button
                  key={artifact.id}
                  size="xs"
                  variant="default"
                  leftSection={<IconDownload size={14} aria-hidden />}
                  loading={pending === artifact.id}
                  aria-label={`Download ${artifact.platform} ${artifact.arch} (${formatBytes(artifact.size)}), ${artifact.filename}`}
                  onClick={() => void fetchLink(artifact)}
                >
                  Download {artifact.platform} {artifact.arch} ({formatBytes(artifact.size)})
                </Button>
              ))}
            </Group>
          </Stack>
        ))}
      </Stack>
    </Paper>
  );
}
