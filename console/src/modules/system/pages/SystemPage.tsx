import { Badge, Paper, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';
import { useQuery } from 'urql';
import { formatDateTime, relativeTime } from '../../../lib/format';
import { PageHeader } from '../../../ui/PageHeader';
import { QueryState } from '../../../ui/QueryState';
import { JobSchedulesCard } from '../../outbox/components/JobSchedulesCard';
import { SystemStatusQuery } from '../graphql/documents';

function Fact({ label, children }: { label: string; children: ReactNode }) {
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

function Card({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Paper p="lg">
      <Title order={3} size="h4" mb="sm">
        {title}
      </Title>
      <Stack gap="sm">{children}</Stack>
    </Paper>
  );
}

const since = (at: string | null | undefined, none: string) => (at ? <span title={formatDateTime(at)}>{relativeTime(at)}</span> : none);

/** The System page (CompanyAdmins): what the Prometheus metrics count, for this company (README "Observability"). */
export function SystemPage() {
  const [result, reload] = useQuery({ query: SystemStatusQuery, requestPolicy: 'cache-and-network' });
  return (
    <>
      <PageHeader title="System" description="Backlogs, the activity log's anchors, scheduled jobs and the service's dependencies — the numbers your operator's monitoring sees." />
      <Stack gap="lg">
        <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
          {({ systemStatus: s }) => (
            <SimpleGrid cols={{ base: 1, md: 3 }}>
              <Card title="Backlogs">
                  <Fact label="Emails pending">
                    {s.emailsPending} {s.emailsPending > 0 && <>(oldest {since(s.oldestPendingEmailAt, '—')})</>}
                  </Fact>
                  <Fact label="Webhook deliveries pending">
                    {s.webhookDeliveriesPending} {s.webhookDeliveriesPending > 0 && <>(oldest {since(s.oldestPendingWebhookAt, '—')})</>}
                  </Fact>
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
              </Card>
              <Card title="Activity log">
                  <Fact label="Last checkpoint">{since(s.lastAuditCheckpointAt, 'none yet')}</Fact>
                  <Fact label="Last full verification">{since(s.lastAuditVerificationAt, 'none yet')}</Fact>
                  <Fact label="Verdict">
                    {s.auditVerificationHolds === null ? (
                      <Badge variant="light" color="gray">not verified yet</Badge>
                    ) : s.auditVerificationHolds ? (
                      <Badge variant="light" color="green">holds</Badge>
                    ) : (
                      <Badge variant="light" color="red">broken</Badge>
                    )}
                  </Fact>
              </Card>
              <Card title="Dependencies">
                  <Fact label="Redis (shared rate limits)">
                    <Badge variant="light" color={s.redis === 'UP' ? 'green' : s.redis === 'DOWN' ? 'red' : 'gray'}>
                      {s.redis === 'UP' ? 'up' : s.redis === 'DOWN' ? 'down: limits count per process' : 'not configured'}
                    </Badge>
                  </Fact>
                  <Fact label="Mail provider">
                    <Text size="sm" c={s.mailProvider === 'POSTMARK' ? 'green' : 'orange'}>
                      {s.mailProvider === 'POSTMARK' ? 'Postmark' : 'development outbox: nothing is sent'}
                    </Text>
                  </Fact>
              </Card>
            </SimpleGrid>
          )}
        </QueryState>
        <JobSchedulesCard />
      </Stack>
    </>
  );
}
