import { Alert, Badge, Button, Code, Group, Modal, Paper, Select, Stack, Text, Tooltip } from '@mantine/core';
import { IconInfoCircle, IconSend } from '@tabler/icons-react';
import { useState } from 'react';
import { useQuery } from 'urql';
import type { EnumOf, ResultOf } from '../../../graphql';
import { formatDateTime, relativeTime } from '../../../lib/format';
import { PageHeader } from '../../../ui/PageHeader';
import { DataTable } from '../../../ui/DataTable';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useCursorPages } from '../../../ui/useCursorPages';
import { useSearchFilters } from '../../../ui/useSearchFilters';
import { JobSchedulesCard } from '../components/JobSchedulesCard';
import { EmailsQuery, SendTestEmailMutation } from '../graphql/documents';
import { emailStatusView } from '../emailStatus';
import { useApiMutation } from '../../../ui/useApiMutation';
import { EmailPreview } from '../components/EmailPreview';

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
export const KIND_LABEL: Record<Kind, string> = {
  WEEKLY_DIGEST: 'Weekly digest',
  EXPIRY_ADMIN: 'Expiry alert (admins)',
  EXPIRY_CUSTOMER: 'Expiry notice (customer)',
  TEST: 'Test email',
  INVITATION: 'Invitation',
  PASSWORD_RESET: 'Password reset link',
  WEBHOOK_DISABLED: 'Webhook endpoint disabled',
  LICENSE_KEY: 'License key (purchase)',
  PORTAL_SIGN_IN: 'Portal sign-in link (customer)',
};

/** The email outbox (every email is written here first, then delivered) and the job schedule. */
export function OutboxPage() {
  const filters = useSearchFilters(FILTERS);
  const [preview, setPreview] = useState<{ email: Email } | null>(null);
  const status = (filters.values.status || undefined) as Status | undefined;
  const kind = (filters.values.kind || undefined) as Kind | undefined;
  const pages = useCursorPages(`${status}:${kind}`);
  const variables = { first: PAGE_SIZE, after: pages.after, status, kind };
  const [result, reload] = useQuery({ query: EmailsQuery, variables });
  const testEmail = useApiMutation(SendTestEmailMutation, {
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
        description="Every email the service sends — weekly digests, expiry alerts to admins and notices to customers, invitations, password reset links, disabled-webhook alerts and test emails: written to the outbox first, then delivered with retries."
        actions={
          <Button variant="default" leftSection={<IconSend size={16} />} loading={testEmail.saving} onClick={async () => (await testEmail.run({})) && (pages.reset(), reload({ requestPolicy: 'network-only' }))}>
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
              <DataTable
                records={data.emails.nodes}
                minWidth={820}
                fetching={result.fetching}
                paging={{ connection: data.emails, onLoadMore: pages.loadMore }}
                columns={[
                  {
                    accessor: 'subject',
                    title: 'Subject',
                    render: (email) => (
                      <div>
                        <Text size="sm" fw={500}>
                          {email.subject}
                        </Text>
                        <Text size="xs" c="dimmed">
                          {KIND_LABEL[email.kind]}
                        </Text>
                      </div>
                    ),
                  },
                  { accessor: 'to', title: 'To', render: (email) => <Text size="sm">{email.to}</Text> },
                  { accessor: 'status', title: 'Status', render: (email) => <EmailStatusCell email={email} /> },
                  { accessor: 'createdAt', title: 'Created', render: (email) => <span title={formatDateTime(email.createdAt)}>{relativeTime(email.createdAt)}</span> },
                  {
                    accessor: 'actions',
                    title: '',
                    render: (email) => (
                      <Button size="xs" variant="default" onClick={() => setPreview({ email })}>
                        Preview
                      </Button>
                    ),
                  },
                ]}
              />
            )}
          </QueryState>
        </Paper>
        <JobSchedulesCard />
      </Stack>
      <Modal opened={preview !== null} onClose={() => setPreview(null)} title={preview?.email.subject} size="xl" centered>
        {/* The bodies of every row loaded so far, in one page from the start: graphcache merges the pages of a
            connection, so a later page alone would leave the earlier rows without bodies. */}
        {preview && <EmailPreview id={preview.email.id} page={{ first: Math.min(100, Math.max(PAGE_SIZE, result.data?.emails.nodes.length ?? 0)), status, kind }} />}
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
