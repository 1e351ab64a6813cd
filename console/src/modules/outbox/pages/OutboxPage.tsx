import { Badge, Button, Group, Modal, Paper, Select, Stack, Table, Text, Tooltip } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useQuery } from 'urql';
import type { EnumOf, ResultOf } from '../../../graphql';
import { formatDateTime, relativeTime } from '../../../lib/format';
import { PageHeader } from '../../../ui/PageHeader';
import { Pager } from '../../../ui/Pager';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useCursorPages } from '../../../ui/useCursorPages';
import { useSearchFilters } from '../../../ui/useSearchFilters';
import { JobSchedulesCard } from '../components/JobSchedulesCard';
import { EmailsQuery } from '../graphql/documents';
import { EmailPreview } from '../components/EmailPreview';
import { ResponsiveTable } from '../../../ui/ResponsiveTable';

const PAGE_SIZE = 20;
const FILTERS = ['status', 'kind'] as const;
type Email = ResultOf<typeof EmailsQuery>['emails']['nodes'][number];
type Status = EnumOf<'EmailStatus'>;
type Kind = EnumOf<'EmailKind'>;

const STATUS_COLOR: Record<Status, string> = { pending: 'yellow', sent: 'teal', failed: 'red' };
export const KIND_LABEL: Record<Kind, string> = { weeklyDigest: 'Weekly digest', expiryAdmin: 'Expiry alert (admins)', expiryCustomer: 'Expiry notice (customer)' };

/** The email outbox (every email is written here first, then delivered) and the job schedule. */
export function OutboxPage() {
  const filters = useSearchFilters(FILTERS);
  const pages = useCursorPages();
  const [preview, setPreview] = useState<{ email: Email } | null>(null);
  const status = (filters.values.status || undefined) as Status | undefined;
  const kind = (filters.values.kind || undefined) as Kind | undefined;
  const { reset } = pages;
  useEffect(reset, [status, kind, reset]);
  const variables = { first: PAGE_SIZE, after: pages.after, status, kind };
  const [result, reload] = useQuery({ query: EmailsQuery, variables });

  return (
    <>
      <PageHeader title="Emails" description="Weekly digests and expiry notices: written to the outbox first, then delivered with retries." />
      <Stack gap="lg">
        <Paper>
          <Group p="sm" gap="sm" align="flex-end">
            <Select label="Status" placeholder="Any status" clearable w={180} data={Object.keys(STATUS_COLOR)} value={status ?? null} onChange={(value) => filters.set({ status: value })} />
            <Select label="Kind" placeholder="Any kind" clearable w={240} data={Object.entries(KIND_LABEL).map(([value, label]) => ({ value, label }))} value={kind ?? null} onChange={(value) => filters.set({ kind: value })} />
          </Group>
          <QueryState
            result={result}
            onRetry={() => reload({ requestPolicy: 'network-only' })}
            isEmpty={(data) => data.emails.nodes.length === 0}
            empty={<EmptyState title="No emails">Digests go out on Mondays at 09:00 UTC; expiry notices daily at 08:00 UTC, 30, 7 and 1 day before a license expires.</EmptyState>}
          >
            {(data) => (
              <>
                <ResponsiveTable minWidth={820}>
                  <Table>
                    <Table.Thead>
                      <Table.Tr>
                        <Table.Th>Subject</Table.Th>
                        <Table.Th>To</Table.Th>
                        <Table.Th>Status</Table.Th>
                        <Table.Th>Created</Table.Th>
                        <Table.Th aria-label="Actions" />
                      </Table.Tr>
                    </Table.Thead>
                    <Table.Tbody>
                      {data.emails.nodes.map((email) => (
                        <Table.Tr key={email.id}>
                          <Table.Td>
                            <Text size="sm" fw={500}>
                              {email.subject}
                            </Text>
                            <Text size="xs" c="dimmed">
                              {KIND_LABEL[email.kind]}
                            </Text>
                          </Table.Td>
                          <Table.Td>
                            <Text size="sm">{email.to}</Text>
                          </Table.Td>
                          <Table.Td>
                            <Tooltip label={email.lastError ?? `${email.attempts} attempt(s)`} disabled={!email.lastError && email.status !== 'pending'} multiline w={280}>
                              <Badge variant="light" color={STATUS_COLOR[email.status]}>
                                {email.status === 'sent' ? `sent ${relativeTime(email.sentAt)}` : email.status === 'pending' && email.attempts > 0 ? `retrying ${relativeTime(email.nextAttemptAt)}` : email.status}
                              </Badge>
                            </Tooltip>
                          </Table.Td>
                          <Table.Td title={formatDateTime(email.createdAt)}>{relativeTime(email.createdAt)}</Table.Td>
                          <Table.Td ta="right">
                            <Button size="xs" variant="default" onClick={() => setPreview({ email })}>
                              Preview
                            </Button>
                          </Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                  </Table>
                </ResponsiveTable>
                <Pager pages={pages} connection={data.emails} pageSize={PAGE_SIZE} busy={result.fetching} />
              </>
            )}
          </QueryState>
        </Paper>
        <JobSchedulesCard />
      </Stack>
      <Modal opened={preview !== null} onClose={() => setPreview(null)} title={preview?.email.subject} size="xl" centered>
        {preview && <EmailPreview id={preview.email.id} page={variables} />}
      </Modal>
    </>
  );
}
