import { Anchor, Grid, Group, Paper, Stack, Text, Title } from '@mantine/core';
import { useCallback } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { BarChart } from '../../../charts';
import { bucketLabel } from '../../../charts/buckets';
import { relativeTime } from '../../../lib/format';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { actionLabel } from '../../activity/actions';
import { useCurrentUser } from '../../auth/hooks/useCurrentUser';
import { ExpiringSoonPanel } from '../components/ExpiringSoonPanel';
import { OnboardingChecklist } from '../components/OnboardingChecklist';
import { StatCards } from '../components/StatCards';
import { DashboardQuery } from '../graphql/documents';

export function DashboardPage() {
  const [result, reload] = useQuery({ query: DashboardQuery });
  const { company } = useCurrentUser();
  const poll = useCallback(() => reload({ requestPolicy: 'network-only' }), [reload]);

  return (
    <>
      <PageHeader title="Dashboard" description={`${company.name} at a glance.`} />
      <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
        {(data) => (
          <Stack gap="lg">
            <OnboardingChecklist stats={data.dashboardStats} onPoll={poll} />
            <StatCards stats={data.dashboardStats} />
            <ExpiringSoonPanel stats={data.dashboardStats} />
            <Grid gutter="lg">
              <Grid.Col span={{ base: 12, md: 7 }}>
                <Paper p="lg" h="100%">
                  <Group justify="space-between" mb="sm">
                    <Title order={3} size="h4">
                      Activations, last 7 days
                    </Title>
                    <Anchor component={Link} to="/analytics" size="sm">
                      Analytics →
                    </Anchor>
                  </Group>
                  <BarChart
                    label="New activations per day, last 7 days"
                    labels={data.analytics.activationTrend.map((bucket) => bucketLabel(bucket.start, 'DAY'))}
                    series={[{ label: 'Activations', data: data.analytics.activationTrend.map((bucket) => bucket.activations) }]}
                    height={220}
                  />
                </Paper>
              </Grid.Col>
              <Grid.Col span={{ base: 12, md: 5 }}>
                <Paper p="lg" h="100%">
                  <Group justify="space-between" mb="sm">
                    <Title order={3} size="h4">
                      Recent activity
                    </Title>
                    <Anchor component={Link} to="/activity" size="sm">
                      Activity log →
                    </Anchor>
                  </Group>
                  {data.activityLog.nodes.length === 0 ? (
                    <EmptyState title="Nothing yet" />
                  ) : (
                    <Stack gap="xs">
                      {data.activityLog.nodes.slice(0, 6).map((entry) => (
                        <Group key={entry.id} justify="space-between" wrap="nowrap" gap="xs">
                          <Text size="sm" truncate>
                            <b>{actionLabel(entry.action)}</b> · {entry.entity}
                          </Text>
                          <Text size="xs" c="dimmed" style={{ whiteSpace: 'nowrap' }} title={entry.user}>
                            {relativeTime(entry.timestamp)}
                          </Text>
                        </Group>
                      ))}
                    </Stack>
                  )}
                </Paper>
              </Grid.Col>
            </Grid>
          </Stack>
        )}
      </QueryState>
    </>
  );
}
