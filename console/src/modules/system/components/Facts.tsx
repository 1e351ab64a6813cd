import { Badge, Paper, Stack, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';
import { formatDateTime, relativeTime } from '../../../lib/format';

/** A labelled figure of the System page. */
export function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <Text size="sm" component="div">
        {children}
      </Text>
    </div>
  );
}

export function Card({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Paper p="lg">
      <Title order={3} size="h4" mb="sm">
        {title}
      </Title>
      <Stack gap="sm">{children}</Stack>
    </Paper>
  );
}

/** "3 minutes ago", the exact time on hover; `none` when there is no time. */
export const since = (at: string | null | undefined, none: string) => (at ? <span title={formatDateTime(at)}>{relativeTime(at)}</span> : none);

export function VerdictBadge({ holds }: { holds: boolean | null }) {
  if (holds === null)
    return (
      <Badge variant="light" color="gray">
        not verified yet
      </Badge>
    );
  return (
    <Badge variant="light" color={holds ? 'green' : 'red'}>
      {holds ? 'holds' : 'broken'}
    </Badge>
  );
}

/** Redis (shared rate limits) and the mail provider, as the serving process sees them. */
export function DependencyFacts({ redis, mailProvider }: { redis: 'UP' | 'DOWN' | 'NOT_CONFIGURED'; mailProvider: 'POSTMARK' | 'DEVELOPMENT' }) {
  return (
    <>
      <Fact label="Redis (shared rate limits)">
        <Badge variant="light" color={redis === 'UP' ? 'green' : redis === 'DOWN' ? 'red' : 'gray'}>
          {redis === 'UP' ? 'up' : redis === 'DOWN' ? 'down: limits count per process' : 'not configured'}
        </Badge>
      </Fact>
      <Fact label="Mail provider">
        <Text size="sm" c={mailProvider === 'POSTMARK' ? 'green' : 'orange'}>
          {mailProvider === 'POSTMARK' ? 'Postmark' : 'development outbox: nothing is sent'}
        </Text>
      </Fact>
    </>
  );
}

type Run = { job: string; period: string; companiesPending: number; companiesFailed: number };

/** The outboxes' backlogs and the unfinished runs: a company's, or every company's together. */
export function BacklogFacts({ status: s }: {
  status: { emailsPending: number; oldestPendingEmailAt?: string | null; webhookDeliveriesPending: number; oldestPendingWebhookAt?: string | null; webhookEndpointsDisabled: number; unfinishedRuns: readonly Run[] };
}) {
  const backlog = (count: number, oldestAt: string | null | undefined) => (
    <>
      {count} {count > 0 && <>(oldest {since(oldestAt, '—')})</>}
    </>
  );
  return (
    <>
      <Fact label="Emails pending">{backlog(s.emailsPending, s.oldestPendingEmailAt)}</Fact>
      <Fact label="Webhook deliveries pending">{backlog(s.webhookDeliveriesPending, s.oldestPendingWebhookAt)}</Fact>
      <Fact label="Webhook endpoints disabled">{s.webhookEndpointsDisabled}</Fact>
      <Fact label="Unfinished runs">
        {s.unfinishedRuns.length === 0
          ? 'none'
          : s.unfinishedRuns.map((run) => (
              <div key={`${run.job}:${run.period}`}>
                {run.job} {run.period}: {run.companiesPending} pending, {run.companiesFailed} failed
              </div>
            ))}
      </Fact>
    </>
  );
}
