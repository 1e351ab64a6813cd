import { Anchor, Badge, Button, Group, Paper, SegmentedControl, Select, Stack, Table, Text } from '@mantine/core';
import { IconPencil, IconPlus, IconUpload } from '@tabler/icons-react';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { useQuery } from 'urql';
import { readFragment } from '../../../graphql';
import { formatDate, formatNumber, plural } from '../../../lib/format';
import { CHANNELS, channelLabel, parseChannel } from '../../../lib/releaseChannels';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { DataTable } from '../../../ui/DataTable';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCursorPages } from '../../../ui/useCursorPages';
import { useSearchFilters } from '../../../ui/useSearchFilters';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { EditReleaseModal } from '../components/EditReleaseModal';
import { NewReleaseModal } from '../components/NewReleaseModal';
import { UploadArtifactModal } from '../components/UploadArtifactModal';
import { DeleteArtifactMutation, DeleteReleaseMutation, ProductReleasesQuery, PublishReleaseMutation, ReleaseFields, RELEASES_PAGE_SIZE, YankReleaseMutation, type Release } from '../graphql/documents';
import { formatBytes } from '../upload';

const STATUS_COLORS = { DRAFT: 'gray', PUBLISHED: 'teal', YANKED: 'red' } as const;
const STATUS_LABELS = { DRAFT: 'Draft', PUBLISHED: 'Published', YANKED: 'Yanked' } as const;
type Status = keyof typeof STATUS_LABELS;
const FILTERS = ['channel', 'status'] as const;
const STATUS_OPTIONS = [{ value: '', label: 'All' }, ...Object.entries(STATUS_LABELS).map(([value, label]) => ({ value: value.toLowerCase(), label }))];
const CHANNEL_OPTIONS = CHANNELS.map(({ value, label }) => ({ value: value.toLowerCase(), label }));

/**
 * A product's releases (docs/console.md "Admin console", its Releases item): drafts take file uploads, are published, and a published
 * release can be yanked; drafts and published releases are edited. Every member reads the list (newest version
 * first, a page at a time, by channel and status) and the download counts; CompanyAdmins manage.
 */
export function ReleasesPage() {
  const { productId = '' } = useParams();
  const filters = useSearchFilters(FILTERS);
  const channel = parseChannel(filters.values.channel) ?? undefined;
  const status = (Object.keys(STATUS_LABELS) as Status[]).find((value) => value.toLowerCase() === filters.values.status);
  const filterKey = JSON.stringify([productId, channel, status]);
  const pages = useCursorPages(filterKey);
  const [result, reload] = useQuery({ query: ProductReleasesQuery, variables: { productId, first: RELEASES_PAGE_SIZE, after: pages.after, channel, status } });
  const [creating, setCreating] = useState(false);
  const [uploadTo, setUploadTo] = useState<Release | null>(null);
  const [editing, setEditing] = useState<Release | null>(null);
  const canManage = useCanManage();
  const refetch = () => reload({ requestPolicy: 'network-only' });
  // After a change: with more than the first page loaded, start again from the newest (a list that changed is
  // dropped from the cache whole, and only the page asked for would come back); otherwise ask the server again.
  const changed = () => (pages.after ? pages.reset() : refetch());
  const productName = result.data?.product?.name;

  return (
    <>
      <PageHeader
        title={productName ? `Releases of ${productName}` : 'Releases'}
        description={
          <>
            Versions licensed applications can download. Upload files to a draft, then publish it; a published release can be yanked (withdrawn for good).{' '}
            <Anchor component={Link} to="/products" size="sm">
              All products
            </Anchor>
          </>
        }
        actions={
          <Button leftSection={<IconPlus size={16} />} onClick={() => setCreating(true)} disabled={!canManage || !result.data?.product}>
            New release
          </Button>
        }
      />
      <NewReleaseModal productId={productId} opened={creating} onClose={() => setCreating(false)} onCreated={changed} />
      <UploadArtifactModal release={uploadTo} onClose={() => setUploadTo(null)} onUploaded={changed} />
      <EditReleaseModal release={editing} onClose={() => setEditing(null)} onSaved={changed} />
      <Paper p="sm" mb="md">
        <Group gap="sm" align="flex-end" wrap="wrap">
          <Select label="Channel" placeholder="Any channel" clearable w={200} data={CHANNEL_OPTIONS} value={channel ? channel.toLowerCase() : null} onChange={(value) => filters.set({ channel: value })} />
          <div>
            <Text size="sm" fw={500} mb={2} id="release-status-filter-label">
              Status
            </Text>
            <SegmentedControl aria-labelledby="release-status-filter-label" data={STATUS_OPTIONS} value={status ? status.toLowerCase() : ''} onChange={(value) => filters.set({ status: value })} />
          </div>
          {filters.active && (
            <Button variant="subtle" onClick={filters.clear}>
              Clear filters
            </Button>
          )}
        </Group>
      </Paper>
      <Paper>
        <QueryState
          result={result}
          onRetry={refetch}
          isEmpty={(data) => !data.product || data.releases.nodes.length === 0}
          empty={
            result.data && !result.data.product ? (
              <EmptyState title="No such product">It may have been deleted.</EmptyState>
            ) : filters.active ? (
              <EmptyState title="No releases match" action={<Button variant="subtle" onClick={filters.clear}>Clear filters</Button>} />
            ) : (
              <EmptyState title="No releases yet" action={canManage && <Button onClick={() => setCreating(true)}>Create a draft release</Button>}>
                Create a draft, upload its files, then publish it.
              </EmptyState>
            )
          }
        >
          {(data) => (
            <DataTable
              records={readFragment(ReleaseFields, data.releases.nodes)}
              minWidth={760}
              rowTestId="release-row"
              fetching={result.fetching}
              paging={{ connection: data.releases, onLoadMore: pages.loadMore }}
              rowExpansion={{ trigger: 'always', content: ({ record }) => <Artifacts release={record} canManage={canManage} onChanged={changed} /> }}
              columns={[
                {
                  accessor: 'version',
                  title: 'Version',
                  render: (release) => (
                    <Text size="sm" fw={600}>
                      {release.version}
                    </Text>
                  ),
                },
                { accessor: 'channel', title: 'Channel', render: (release) => channelLabel(release.channel) },
                {
                  accessor: 'status',
                  title: 'Status',
                  render: (release) => (
                    <Badge variant="light" color={STATUS_COLORS[release.status]} data-testid="release-status">
                      {STATUS_LABELS[release.status]}
                    </Badge>
                  ),
                },
                { accessor: 'publishedAt', title: 'Published', render: (release) => formatDate(release.publishedAt) },
                { accessor: 'artifacts', title: 'Files', textAlign: 'right', render: (release) => formatNumber(release.artifacts.length) },
                { accessor: 'downloadCount', title: 'Downloads', textAlign: 'right', render: (release) => formatNumber(release.downloadCount) },
                { accessor: 'actions', title: '', render: (release) => canManage && <ReleaseActions release={release} onUpload={() => setUploadTo(release)} onEdit={() => setEditing(release)} onChanged={changed} /> },
              ]}
            />
          )}
        </QueryState>
      </Paper>
    </>
  );
}

function ReleaseActions({ release, onUpload, onEdit, onChanged }: { release: Release; onUpload: () => void; onEdit: () => void; onChanged: () => void }) {
  const then = (done: unknown) => {
    if (done) onChanged();
    return done;
  };
  const publish = useApiMutation(PublishReleaseMutation, { success: `${release.version} was published.` });
  const yank = useApiMutation(YankReleaseMutation, { success: `${release.version} was yanked.` });
  const remove = useApiMutation(DeleteReleaseMutation, { success: `Draft ${release.version} was deleted.` });
  return (
    <Group gap="xs" justify="flex-end" wrap="nowrap">
      {release.status !== 'YANKED' && (
        <Button size="xs" variant="default" leftSection={<IconPencil size={14} />} onClick={onEdit} aria-label={`Edit ${release.version}`}>
          Edit
        </Button>
      )}
      {release.status === 'DRAFT' && (
        <>
          <Button size="xs" variant="default" leftSection={<IconUpload size={14} />} onClick={onUpload}>
            Upload file
          </Button>
          <ConfirmAction
            size="xs"
            label="Publish"
            danger={false}
            variant="filled"
            title={`Publish ${release.version}?`}
            message={`Licenses meeting its requirements see ${release.version} on the ${channelLabel(release.channel)} channel from now on, and the release.published webhook is sent.`}
            confirmLabel="Publish"
            busy={publish.saving}
            disabledReason={release.artifacts.length === 0 ? 'Upload at least one file first.' : null}
            onConfirm={async () => then(await publish.run({ id: release.id }))}
          />
          <ConfirmAction
            size="xs"
            label="Delete"
            title={`Delete draft ${release.version}?`}
            message="The draft and its uploaded files are deleted. This cannot be undone."
            confirmLabel="Delete draft"
            busy={remove.saving}
            onConfirm={async () => then(await remove.run({ id: release.id }))}
          />
        </>
      )}
      {release.status === 'PUBLISHED' && (
        <ConfirmAction
          size="xs"
          label="Yank"
          title={`Yank ${release.version}?`}
          message={`${release.version} is withdrawn for good: never listed, offered or downloadable again, and its version cannot be reused. The release.yanked webhook is sent.`}
          confirmLabel="Yank release"
          busy={yank.saving}
          onConfirm={async () => then(await yank.run({ id: release.id }))}
        />
      )}
    </Group>
  );
}

function Artifacts({ release, canManage, onChanged }: { release: Release; canManage: boolean; onChanged: () => void }) {
  if (release.artifacts.length === 0) {
    return (
      <Text size="sm" c="dimmed" px="md" py="xs">
        No files yet{release.status === 'DRAFT' && canManage ? ': upload one before publishing.' : '.'}
      </Text>
    );
  }
  return (
    <Stack gap={0} px="md" py="xs" bg="var(--mantine-color-gray-light)">
      <Table fz="sm" verticalSpacing={4} aria-label={`Files of ${release.version}`}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>File</Table.Th>
            <Table.Th>Platform</Table.Th>
            <Table.Th>Type</Table.Th>
            <Table.Th ta="right">Size</Table.Th>
            <Table.Th>SHA-256</Table.Th>
            <Table.Th ta="right">Downloads</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {release.artifacts.map((artifact) => (
            <Table.Tr key={artifact.id} data-testid="artifact-row">
              <Table.Td>{artifact.filename}</Table.Td>
              <Table.Td>
                {artifact.platform} / {artifact.arch}
              </Table.Td>
              <Table.Td>{artifact.filetype}</Table.Td>
              <Table.Td ta="right">{formatBytes(artifact.size)}</Table.Td>
              <Table.Td>
                <Text span ff="monospace" size="xs" title={artifact.sha256}>
                  {artifact.sha256.slice(0, 12)}…
                </Text>
              </Table.Td>
              <Table.Td ta="right">{formatNumber(artifact.downloadCount)}</Table.Td>
              <Table.Td ta="right">{canManage && release.status === 'DRAFT' && <DeleteArtifact id={artifact.id} filename={artifact.filename} onDeleted={onChanged} />}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Text size="xs" c="dimmed">
        {plural(release.artifacts.length, 'file')}
      </Text>
    </Stack>
  );
}

function DeleteArtifact({ id, filename, onDeleted }: { id: string; filename: string; onDeleted: () => void }) {
  const remove = useApiMutation(DeleteArtifactMutation, { success: `${filename} was deleted.` });
  return (
    <ConfirmAction
      size="compact-xs"
      label="Delete"
      title={`Delete ${filename}?`}
      message="The file is removed from the draft and from storage."
      confirmLabel="Delete file"
      busy={remove.saving}
      onConfirm={async () => {
        const done = await remove.run({ id });
        if (done) onDeleted();
        return done;
      }}
    />
  );
}
