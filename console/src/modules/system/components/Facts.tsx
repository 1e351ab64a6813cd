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

/** A backlog: how many, and since when the oldest waits. */
export const backlog = (count: number, oldestAt: string | null | undefined) => (
  <>
    {count} {count > 0 && <>(oldest {since(oldestAt, '—')})</>}
  </>
);

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

export function RedisBadge({ redis }: { redis: 'UP' | 'DOWN' | 'NOT_CONFIGURED' }) {
  return (
    <Badge variant="light" color={redis === 'UP' ? 'green' : redis === 'DOWN' ? 'red' : 'gray'}>
      {redis === 'UP' ? 'up' : redis === 'DOWN' ? 'down: limits count per process' : 'not configured'}
    </Badge>
  );
}

export function MailProvider({ provider }: { provider: 'POSTMARK' | 'DEVELOPMENT' }) {
  return (
    <Text size="sm" c={provider === 'POSTMARK' ? 'green' : 'orange'}>
      {provider === 'POSTMARK' ? 'Postmark' : 'development outbox: nothing is sent'}
    </Text>
  );
}

/** Unfinished per-company runs (expiry, digest), or "none". */
export function UnfinishedRuns({ runs }: { runs: readonly { job: string; period: string; companiesPending: number; companiesFailed: number }[] }) {
  if (runs.length === 0) return <>none</>;
  return (
    <>
      {runs.map((run) => (
        <div key={`${run.job}:${run.period}`}>
          {run.job} {run.period}: {run.companiesPending} pending, {run.companiesFailed} failed
        </div>
      ))}
    </>
  );
}
