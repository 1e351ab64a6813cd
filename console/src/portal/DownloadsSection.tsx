import { Alert, Badge, Button, Group, NativeSelect, Paper, Stack, Text, Title } from '@mantine/core';
import { IconDownload } from '@tabler/icons-react';
import { useState } from 'react';
import { useMutation, useQuery } from 'urql';
import { formatBytes, formatDate } from '../lib/format';
import { CHANNELS, channelLabel, parseChannel, type ReleaseChannel } from '../lib/releaseChannels';
import { DownloadArtifactMutation, DownloadsQuery, errorMessage, type LicenseDownloads, type Release, type ReleaseArtifact } from './api';

/** The channel in the address (`?channel=beta`), so that a reload or a shared link keeps it; stable when absent. */
function useChannel(): [ReleaseChannel, (channel: ReleaseChannel) => void] {
  const [channel, setChannel] = useState<ReleaseChannel>(() => parseChannel(new URLSearchParams(window.location.search).get('channel')) ?? 'STABLE');
  const choose = (next: ReleaseChannel) => {
    const url = new URL(window.location.href);
    if (next === 'STABLE') url.searchParams.delete('channel');
    else url.searchParams.set('channel', next.toLowerCase());
    window.history.replaceState(window.history.state, '', url);
    setChannel(next);
  };
  return [channel, choose];
}

/**
 * The releases each of the customer's licenses may download, on the chosen channel and the more stable ones (for a
 * bundle, per member product); a file's button asks for a short-lived link and follows it.
 */
export function DownloadsSection() {
  const [channel, setChannel] = useChannel();
  const [result] = useQuery({ query: DownloadsQuery, variables: { channel } });
  const licenses = result.data?.downloads;
  return (
    <Stack gap="md" component="section" aria-labelledby="portal-downloads">
      <Group justify="space-between" align="flex-end" gap="sm">
        <div>
          <Title order={2} size="h3" id="portal-downloads">
            Downloads
          </Title>
          <Text c="dimmed" size="sm">
            The releases your licenses may download.
          </Text>
        </div>
        <NativeSelect
          label="Release channel"
          description="Each channel includes the more stable ones."
          data={CHANNELS.map((option) => ({ ...option }))}
          value={channel}
          onChange={(event) => setChannel(parseChannel(event.currentTarget.value) ?? 'STABLE')}
        />
      </Group>
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
  // A bundle lists each member product it grants under its name; a plain license its product's releases alone.
  const grouped = license.products.some((product) => product.productName !== license.productName);
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
        {!license.refusal && !grouped && (
          <ReleaseList releases={license.products[0]?.releases ?? []} headingOrder={3} empty="No release is available to this license yet." pending={pending} onDownload={fetchLink} />
        )}
        {!license.refusal &&
          grouped &&
          license.products.map((product) => (
            <Stack key={product.productId} gap="xs">
              <Title order={3} size="h4">
                {product.productName}
              </Title>
              <ReleaseList releases={product.releases} headingOrder={4} empty={`No release of ${product.productName} is available yet.`} pending={pending} onDownload={fetchLink} />
            </Stack>
          ))}
      </Stack>
    </Paper>
  );
}

function ReleaseList({ releases, headingOrder, empty, pending, onDownload }: { releases: Release[]; headingOrder: 3 | 4; empty: string; pending: string | null; onDownload: (artifact: ReleaseArtifact) => Promise<void> }) {
  if (!releases.length) {
    return (
      <Text size="sm" c="dimmed">
        {empty}
      </Text>
    );
  }
  return releases.map((release) => (
    <Stack key={release.id} gap={6}>
      <Group gap="xs">
        <Title order={headingOrder} size="h5">
          Version {release.version}
        </Title>
        {release.channel !== 'STABLE' && <Badge variant="light">{channelLabel(release.channel)}</Badge>}
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
            onClick={() => void onDownload(artifact)}
          >
            Download {artifact.platform} {artifact.arch} ({formatBytes(artifact.size)})
          </Button>
        ))}
      </Group>
    </Stack>
  ));
}
