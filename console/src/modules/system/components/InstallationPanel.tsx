import { Badge, SimpleGrid, Stack, Text, Tooltip } from '@mantine/core';
import { useQuery } from 'urql';
import { DataTable } from '../../../ui/DataTable';
import { QueryState } from '../../../ui/QueryState';
import { InstallationStatusQuery } from '../graphql/documents';
import { BacklogFacts, Card, DependencyFacts, Fact, since, VerdictBadge } from './Facts';

const seconds = (value: number | null) => (value === null ? '—' : value < 10 ? `${value.toFixed(1)} s` : `${Math.round(value)} s`);

/** The Installation tab (installation operators): every company together, the numbers /metrics exports. */
export function InstallationPanel() {
  const [result, reload] = useQuery({ query: InstallationStatusQuery, requestPolicy: 'cache-and-network' });
  return (
    <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
      {({ installationStatus: s }) => (
        <Stack gap="lg" data-testid="installation-status">
          <SimpleGrid cols={{ base: 1, md: 3 }}>
            <Card title="Backlogs, all companies">
              <BacklogFacts status={s} />
            </Card>
            <Card title="Activity logs">
              <Fact label="Companies">{s.companies}</Fact>
              <Fact label="Last checkpoint">{since(s.lastAuditCheckpointAt, 'none yet')}</Fact>
              <Fact label="Entries unanchored over an hour">
                <Text size="sm" c={s.companiesWithUnanchoredEntries ? 'red' : undefined}>
                  {s.companiesWithUnanchoredEntries === 0 ? 'no company' : `${s.companiesWithUnanchoredEntries} ${s.companiesWithUnanchoredEntries === 1 ? 'company' : 'companies'}`}
                </Text>
              </Fact>
              <Fact label="Last full verification">{since(s.lastAuditVerificationAt, 'none yet')}</Fact>
              <Fact label="Verdict">
                <VerdictBadge holds={s.auditVerificationHolds} />{' '}
                <Text span size="xs" c="dimmed">
                  {s.auditVerifiedCompanies} of {s.companies} verified
                </Text>
                {s.auditBrokenCompanies.length > 0 && <div>broken: {s.auditBrokenCompanies.join(', ')}</div>}
              </Fact>
            </Card>
            <Card title="Dependencies">
              <DependencyFacts redis={s.redis} mailProvider={s.mailProvider} />
              <Fact label="Signing key">created {since(s.signingKeyCreatedAt, '—')}</Fact>
            </Card>
          </SimpleGrid>
          <Card title="Job runs, every process">
            <DataTable
              records={s.jobRuns}
              idAccessor="job"
              minWidth={560}
              rowTestId="job-run"
              columns={[
                { accessor: 'job', title: 'Job', render: (run) => <Text size="sm" ff="monospace">{run.job}</Text> },
                { accessor: 'startedAt', title: 'Last run', render: (run) => since(run.startedAt, '—') },
                { accessor: 'durationSeconds', title: 'Took', render: (run) => seconds(run.durationSeconds) },
                {
                  accessor: 'outcome',
                  title: 'Outcome',
                  render: (run) =>
                    run.outcome === 'FAILED' ? (
                      <Tooltip label={run.failReason ?? 'failed'} multiline w={280}>
                        <Badge color="red" variant="light">
                          failed
                        </Badge>
                      </Tooltip>
                    ) : run.outcome === 'RUNNING' ? (
                      <Badge variant="light">running</Badge>
                    ) : (
                      <Badge color="green" variant="light">
                        succeeded
                      </Badge>
                    ),
                },
              ]}
            />
          </Card>
        </Stack>
      )}
    </QueryState>
  );
}
