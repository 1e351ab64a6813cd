import { ActionIcon, Badge, Button, Code, Group, Paper, Select, Table, Text, TextInput, Tooltip } from '@mantine/core';
import { IconChevronDown, IconChevronRight, IconShieldCheck, IconShieldX } from '@tabler/icons-react';
import { Fragment, useEffect, useState } from 'react';
import { useQuery } from 'urql';
import type { ResultOf } from '../../../graphql';
import { formatDateTime, formatUtc } from '../../../lib/format';
import { expandId } from '../../../lib/ids';
import { DebouncedSearch } from '../../../ui/DebouncedSearch';
import { PageHeader } from '../../../ui/PageHeader';
import { Pager } from '../../../ui/Pager';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useCursorPages } from '../../../ui/useCursorPages';
import { useSearchFilters } from '../../../ui/useSearchFilters';
import { ACTIVITY_ACTIONS, actionColor, actionLabel, type ActivityAction } from '../actions';
import { DetailsDiff } from '../components/DetailsDiff';
import { ActivityIntegrityQuery, ActivityLogQuery } from '../graphql/documents';
import { refetchOn } from '../../../lib/client';
import { ResponsiveTable } from '../../../ui/ResponsiveTable';

const PAGE_SIZE = 25;
const FILTERS = ['action', 'user', 'entity', 'entityId', 'from', 'to'] as const;
type Entry = ResultOf<typeof ActivityLogQuery>['activityLog']['nodes'][number];

/** Dates from the filter inputs are UTC days: from 00:00 of `from` to the end of `to`. */
const dayStart = (day: string) => (day ? `${day}T00:00:00.000Z` : undefined);
const dayAfter = (day: string) => (day ? new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString() : undefined);

export function ActivityPage() {
  const filters = useSearchFilters(FILTERS);
  const pages = useCursorPages();
  const { values } = filters;
  const filter = {
    action: (values.action || undefined) as ActivityAction | undefined,
    user: values.user || undefined,
    entity: values.entity || undefined,
    entityId: values.entityId ? expandId(values.entityId) : undefined,
    from: dayStart(values.from),
    to: dayAfter(values.to),
  };
  const filterKey = JSON.stringify(filter);
  const { reset } = pages;
  useEffect(reset, [filterKey, reset]);
  const [result, reload] = useQuery({ query: ActivityLogQuery, variables: { first: PAGE_SIZE, after: pages.after, filter }, context: refetchOn('ActivityEntry') });

  return (
    <>
      <PageHeader title="Activity log" description="Every change, sign-in and failed sign-in in your company. Entries are append-only and hash-chained: they cannot be edited or deleted." actions={<IntegrityBadge />} />
      <Paper p="sm" mb="md">
        <Group gap="sm" align="flex-end" wrap="wrap">
          <Select
            label="Action"
            placeholder="All actions"
            clearable
            searchable
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
            <>
              <ResponsiveTable minWidth={880}>
                <Table>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th w={36} aria-label="Details" />
                      <Table.Th>Timestamp</Table.Th>
                      <Table.Th>Action</Table.Th>
                      <Table.Th>Entity</Table.Th>
                      <Table.Th>User</Table.Th>
                      <Table.Th>IP address</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {data.activityLog.nodes.map((entry) => (
                      <EntryRow key={entry.id} entry={entry} />
                    ))}
                  </Table.Tbody>
                </Table>
              </ResponsiveTable>
              <Pager pages={pages} connection={data.activityLog} pageSize={PAGE_SIZE} busy={result.fetching} />
            </>
          )}
        </QueryState>
      </Paper>
    </>
  );
}

function EntryRow({ entry }: { entry: Entry }) {
  const [open, setOpen] = useState(false);
  const hasDetails = entry.details !== null && entry.details !== undefined;
  return (
    <Fragment>
      <Table.Tr data-testid="activity-row">
        <Table.Td>
          {hasDetails && (
            <ActionIcon variant="subtle" color="gray" onClick={() => setOpen(!open)} aria-expanded={open} aria-label={open ? 'Hide details' : 'Show details'}>
              {open ? <IconChevronDown size={16} /> : <IconChevronRight size={16} />}
            </ActionIcon>
          )}
        </Table.Td>
        <Table.Td>
          <Text size="sm" title={formatDateTime(entry.timestamp)} style={{ whiteSpace: 'nowrap' }}>
            {formatUtc(entry.timestamp)}
          </Text>
        </Table.Td>
        <Table.Td>
          <Badge variant="light" color={actionColor(entry.action)} title={entry.action} style={{ textTransform: 'none' }}>
            {actionLabel(entry.action)}
          </Badge>
        </Table.Td>
        <Table.Td>
          <Text size="sm">{entry.entity}</Text>
          <Text size="xs" c="dimmed">
            {entry.entityType}
          </Text>
        </Table.Td>
        <Table.Td>
          <Text size="sm">{entry.user}</Text>
        </Table.Td>
        <Table.Td>
          <Text size="sm" ff="monospace" c={entry.ip ? undefined : 'dimmed'}>
            {entry.ip ?? '—'}
          </Text>
        </Table.Td>
      </Table.Tr>
      {open && (
        <Table.Tr>
          <Table.Td />
          <Table.Td colSpan={5}>
            <DetailsDiff details={entry.details} />
          </Table.Td>
        </Table.Tr>
      )}
    </Fragment>
  );
}

function IntegrityBadge() {
  const [{ data }] = useQuery({ query: ActivityIntegrityQuery, context: refetchOn('ActivityEntry') });
  if (!data) return null;
  const { valid, entries, brokenAtSeq } = data.activityLogIntegrity;
  return (
    <Tooltip label={valid ? `All ${entries} entries verify against the hash chain.` : `The chain breaks at entry #${brokenAtSeq}: the log was altered outside the service.`} withArrow multiline w={260}>
      <Badge size="lg" variant="light" color={valid ? 'teal' : 'red'} leftSection={valid ? <IconShieldCheck size={14} /> : <IconShieldX size={14} />}>
        {valid ? 'Chain verified' : 'Chain broken'}
      </Badge>
    </Tooltip>
  );
}
