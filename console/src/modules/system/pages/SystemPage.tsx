import { SimpleGrid, Stack, Tabs } from '@mantine/core';
import { useQuery } from 'urql';
import { PageHeader } from '../../../ui/PageHeader';
import { QueryState } from '../../../ui/QueryState';
import { JobSchedulesCard } from '../../outbox/components/JobSchedulesCard';
import { BacklogFacts, Card, DependencyFacts, Fact, since, VerdictBadge } from '../components/Facts';
import { InstallationPanel } from '../components/InstallationPanel';
import { SystemStatusQuery } from '../graphql/documents';

/**
 * The System page (CompanyAdmins): what the Prometheus metrics count, for this company; for an installation operator
 * (OPERATOR_EMAILS) also an Installation tab with every company together (docs/operate/observability.md).
 */
export function SystemPage() {
  const [result, reload] = useQuery({ query: SystemStatusQuery, requestPolicy: 'cache-and-network' });
  return (
    <>
      <PageHeader title="System" description="Backlogs, the activity log's anchors, scheduled jobs and the service's dependencies — the numbers your operator's monitoring sees." />
      <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
        {({ systemStatus: s }) => {
          const company = (
            <Stack gap="lg">
              <SimpleGrid cols={{ base: 1, md: 3 }}>
                <Card title="Backlogs">
                  <BacklogFacts status={s} />
                </Card>
                <Card title="Activity log">
                  <Fact label="Last checkpoint">{since(s.lastAuditCheckpointAt, 'none yet')}</Fact>
                  <Fact label="Last full verification">{since(s.lastAuditVerificationAt, 'none yet')}</Fact>
                  <Fact label="Verdict">
                    <VerdictBadge holds={s.auditVerificationHolds} />
                  </Fact>
                </Card>
                <Card title="Dependencies">
                  <DependencyFacts redis={s.redis} mailProvider={s.mailProvider} />
                </Card>
              </SimpleGrid>
              <JobSchedulesCard />
            </Stack>
          );
          if (!s.installationOperator) return company;
          return (
            <Tabs defaultValue="company" keepMounted={false}>
              <Tabs.List mb="lg">
                <Tabs.Tab value="company">Your company</Tabs.Tab>
                <Tabs.Tab value="installation">Installation</Tabs.Tab>
              </Tabs.List>
              <Tabs.Panel value="company">{company}</Tabs.Panel>
              <Tabs.Panel value="installation">
                <InstallationPanel />
              </Tabs.Panel>
            </Tabs>
          );
        }}
      </QueryState>
    </>
  );
}
