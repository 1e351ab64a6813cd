import { Alert, Badge, Button, Code, Group, Modal, Paper, Select, Stack, Table, Text, Tooltip } from '@mantine/core';
import { IconInfoCircle, IconSend } from '@tabler/icons-react';
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
import { EmailsQuery, SendTestEmailMutation } from '../graphql/documents';
import { emailStatusView } from '../emailStatus';
import { useApiMutation } from '../../../ui/useApiMutation';
import { EmailPreview } from '../components/EmailPreview';
import { ResponsiveTable } from '../../../ui/ResponsiveTable';

const PAGE_SIZE = 20;
const FILTERS = ['status', 'kind'] as const;
type Email = ResultOf<typeof EmailsQuery>['emails']['nodes'][number];
type Status = EnumOf<'EmailStatus'>;
type Kind = EnumOf<'EmailKind'>;

const STATUSES: { value: Status; label: string }[] = [
  { value: 'PENDING', label: 'pending' },
  { value: 'SENT', label: 'sent' },
  { value: 'FAILED', label: 'failed' },
];
export const KIND_LABEL: Record<Kind, string> = { WEEKLY_DIGEST: 'Weekly digest', EXPIRY_ADMIN: 'Expiry alert (admins)', EXPIRY_CUSTOMER: 'Expiry notice (customer)', TEST: 'Test email', INVITATION: 'Invitation' };

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
  const testEmail = useApiMutation(SendTestEmailMutation, {
    invalidates: ['Email'],
    success: (data) =>
      data.sendTestEmail.email.providerMessageId === 'development'
        ? `Test email kept in the development outbox for ${data.sendTestEmail.email.to} (nothing is delivered).`
        : data.sendTestEmail.email.status === 'SENT'
          ? `Test email sent to ${data.sendTestEmail.email.to}.`
          : `Test email to ${data.sendTestEmail.email.to} not delivered yet: ${data.sendTestEmail.email.lastError ?? 'it will be retried'}.`,
  });
  const development = result.data?.emailDeliveryMode === 'DEVELOPMENT';

  return (
    <>
      <PageHeader
        title="Emails"
        description="Weekly digests and expiry notices: written to the outbox first, then delivered with retries."
        actions={
          <Button variant="default" leftSection={<IconSend size={16} />} loading={testEmail.saving} onClick={async () => (await testEmail.run({})) && reload({ requestPolicy: 'network-only' })}>
            Send test email
          </Button>
        }
      />
      <Stack gap="lg">
        {development && (
          <Alert color="yellow" variant="light" icon={<IconInfoCircle size={18} />} title="Development outbox: nothing is delivered" data-testid="development-outbox">
            No mail provider is configured, so emails are kept here (status “kept”) and can be read with Preview, but none reaches an inbox. To
            deliver them, start the server with <Code>POSTMARK_SERVER_TOKEN</Code> and <Code>MAIL_FROM</Code> (a confirmed Postmark sender).
          </Alert>
        )}
        <Paper>
          <Group p="sm" gap="sm" align="flex-end">
            <Select label="Status" placeholder="Any status" clearable w={180} data={STATUSES} value={status ?? null} onChange={(value) => filters.set({ status: value })} />
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
                            <EmailStatusCell email={email} />
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

function EmailStatusCell({ email }: { email: Email }) {
  const view = emailStatusView(email);
  return (
    <Group gap={6} wrap="nowrap">
      <Tooltip label={view.hint} disabled={!view.hint} multiline w={300}>
        <Badge variant="light" color={view.color} style={{ flex: 'none' }} data-testid="email-status">
          {view.label}
        </Badge>
      </Tooltip>
      {view.when && (
        <Text size="xs" c="dimmed" style={{ whiteSpace: 'nowrap' }}>
          {view.when}
        </Text>
      )}
    </Group>
  );
}
