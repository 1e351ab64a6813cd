import { ActionIcon, Badge, Button, Code, Group, Paper, Select, Text, TextInput, Tooltip } from '@mantine/core';
import { IconChevronDown, IconChevronRight, IconShieldCheck, IconShieldX } from '@tabler/icons-react';
import { useState } from 'react';
import { useQuery } from 'urql';
import type { ResultOf } from '../../../graphql';
import { formatDateTime, formatUtc } from '../../../lib/format';
import { DebouncedSearch } from '../../../ui/DebouncedSearch';
import { PageHeader } from '../../../ui/PageHeader';
import { DataTable } from '../../../ui/DataTable';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useCursorPages } from '../../../ui/useCursorPages';
import { useSearchFilters } from '../../../ui/useSearchFilters';
import { ACTIVITY_ACTIONS, actionColor, actionLabel, type ActivityAction } from '../actions';
import { DetailsDiff } from '../components/DetailsDiff';
import { IntegrityPanel } from '../components/IntegrityPanel';
import { ActivityIntegrityQuery, ActivityLogQuery } from '../graphql/documents';

const PAGE_SIZE = 25;
const FILTERS = ['action', 'user', 'entity', 'entityId', 'from', 'to'] as const;
type Entry = ResultOf<typeof ActivityLogQuery>['activityLog']['nodes'][number];

/** Dates from the filter inputs are UTC days: from 00:00 of `from` to the end of `to`. */
const dayStart = (day: string) => (day ? `${day}T00:00:00.000Z` : undefined);
const dayAfter = (day: string) => (day ? new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString() : undefined);

export function ActivityPage() {
  const filters = useSearchFilters(FILTERS);
  const { values } = filters;
  const [expanded, setExpanded] = useState<string[]>([]);
  const toggle = (id: string) => setExpanded((ids) => (ids.includes(id) ? ids.filter((other) => other !== id) : [...ids, id]));
  const filter = {
    action: (values.action || undefined) as ActivityAction | undefined,
    user: values.user || undefined,
    entity: values.entity || undefined,
    entityId: values.entityId || undefined,
    from: dayStart(values.from),
    to: dayAfter(values.to),
  };
  const pages = useCursorPages(JSON.stringify(filter));
  const [result, reload] = useQuery({ query: ActivityLogQuery, variables: { first: PAGE_SIZE, after: pages.after, filter } });

  return (
    <>
      <PageHeader title="Activity log" description="Every change, sign-in and failed sign-in in your company. Entries are append-only and hash-chained: they cannot be edited or deleted." actions={<IntegrityBadge />} />
      <IntegrityPanel />
      <Paper p="sm" mb="md">
        <Group gap="sm" align="flex-end" wrap="wrap">
          <Select
            label="Action"
            placeholder="All actions"
            clearable
            searchable
            // The whole list, scrolled with the page: a scroll area inside a listbox can take no keyboard focus.
            withScrollArea={false}
            w={220}
            data={ACTIVITY_ACTIONS.map((action) => ({ value: action, label: actionLabel(action) }))}
            value={values.action || null}
            onChange={(action) => filters.set({ action })}
          />
          <DebouncedSearch label="User" placeholder="Email or API key" w={200} value={values.user} onSearch={(user) => filters.set({ user })} />
          <DebouncedSearch label="Entity" placeholder="Product, email, key hint…" w={220} value={values.entity} onSearch={(entity) => filters.set({ entity })} />
          <TextInput label="From (UTC)" type="date" w={160} value={values.from} onChange={(e) => filters.set({ from: e.currentTarget.value })} />
          <TextInput label="To (UTC)" type="date" w={160} value={values.to} onChange={(e) => filters.set({ to: e.currentTarget.value })} />
          {filters.active && (
            <Button variant="subtle" onClick={filters.clear}>
              Clear filters
            </Button>
          )}
        </Group>
        {values.entityId && (
          <Text size="xs" c="dimmed" mt="xs">
            Showing one record's history (<Code>{values.entityId}</Code>).
          </Text>
        )}
      </Paper>
      <Paper>
        <QueryState
          result={result}
          onRetry={() => reload({ requestPolicy: 'network-only' })}
          isEmpty={(data) => data.activityLog.nodes.length === 0}
          empty={<EmptyState title={filters.active ? 'No entries match these filters' : 'No activity yet'}>{filters.active ? 'Try a wider date range or clear the filters.' : 'Changes and sign-ins will appear here.'}</EmptyState>}
        >
          {(data) => (
            <DataTable
              records={data.activityLog.nodes}
              minWidth={880}
              rowTestId="activity-row"
              fetching={result.fetching}
              paging={{ connection: data.activityLog, onLoadMore: pages.loadMore }}
              rowExpansion={{
                trigger: 'never',
                allowMultiple: true,
                expanded: { recordIds: expanded, onRecordIdsChange: (ids: unknown[]) => setExpanded(ids as string[]) },
                content: ({ record }) => (
                  <div style={{ padding: '8px 12px' }}>
                    <DetailsDiff details={record.details} />
                  </div>
                ),
              }}
              columns={[
                {
                  accessor: 'details',
                  title: '',
                  width: 36,
                  textAlign: 'left',
                  render: (entry) => <DetailsToggle entry={entry} open={expanded.includes(entry.id)} onToggle={toggle} />,
                },
                {
                  accessor: 'timestamp',
                  title: 'Timestamp',
                  render: (entry) => (
                    <Text size="sm" title={formatDateTime(entry.timestamp)} style={{ whiteSpace: 'nowrap' }}>
                      {formatUtc(entry.timestamp)}
                    </Text>
                  ),
                },
                {
                  accessor: 'action',
                  title: 'Action',
                  render: (entry) => (
                    <Badge variant="light" color={actionColor(entry.action)} title={entry.action} style={{ textTransform: 'none' }}>
                      {actionLabel(entry.action)}
                    </Badge>
                  ),
                },
                {
                  accessor: 'entity',
                  title: 'Entity',
                  render: (entry) => (
                    <div>
                      <Text size="sm">{entry.entity}</Text>
                      <Text size="xs" c="dimmed">
                        {entry.entityType}
                      </Text>
                    </div>
                  ),
                },
                { accessor: 'user', title: 'User', render: (entry) => <Text size="sm">{entry.user}</Text> },
                {
                  accessor: 'ip',
                  title: 'IP address',
                  render: (entry) => (
                    <Text size="sm" ff="monospace" c={entry.ip ? undefined : 'dimmed'}>
                      {entry.ip ?? '—'}
                    </Text>
                  ),
                },
              ]}
            />
          )}
        </QueryState>
      </Paper>
    </>
  );
}

function DetailsToggle({ entry, open, onToggle }: { entry: Entry; open: boolean; onToggle: (id: string) => void }) {
  if (entry.details === null || entry.details === undefined) return null;
  return (
    <ActionIcon variant="subtle" color="gray" onClick={() => onToggle(entry.id)} aria-expanded={open} aria-label={open ? 'Hide details' : 'Show details'}>
      {open ? <IconChevronDown size={16} /> : <IconChevronRight size={16} />}
    </ActionIcon>
  );
}

function IntegrityBadge() {
  const [{ data }] = useQuery({ query: ActivityIntegrityQuery });
  if (!data) return null;
  const { valid, entries, brokenAtSeq } = data.activityLogIntegrity;
  return (
    <Tooltip label={valid ? `All ${entries} entries verify against the hash chain and its checkpoints.` : `The log was altered outside the service${brokenAtSeq ? ` at entry #${brokenAtSeq}` : ''}.`} withArrow multiline w={260}>
      <Badge size="lg" variant="light" color={valid ? 'teal' : 'red'} leftSection={valid ? <IconShieldCheck size={14} /> : <IconShieldX size={14} />}>
        {valid ? 'Chain verified' : 'Chain broken'}
      </Badge>
    </Tooltip>
  );
}
