import { Badge, Button, Paper, Table, Text, Title, Tooltip } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useQuery } from 'urql';
import { formatDateTime, relativeTime } from '../../../lib/format';
import { QueryState } from '../../../ui/QueryState';
import { JobSchedulesQuery, RunJobNowMutation } from '../graphql/documents';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { ResponsiveTable } from '../../../ui/ResponsiveTable';

/** The scheduled jobs (weekly digest, expiry alerts, delivery…) with their last and next run. */
export function JobSchedulesCard() {
  const [result, reload] = useQuery({ query: JobSchedulesQuery });
  const canManage = useCanManage();
  const runNow = useApiMutation(RunJobNowMutation, { success: (data) => `${data.runJobNow.jobSchedule.name} is queued: the next free worker runs it.` });
  // After "Run now", refresh every 2 s for a while so the run shows up (running, then its last run).
  const [watchUntil, setWatchUntil] = useState(0);
  useEffect(() => {
    if (!watchUntil) return;
    const timer = setInterval(() => {
      if (Date.now() > watchUntil) setWatchUntil(0);
      else reload({ requestPolicy: 'network-only' });
    }, 2_000);
    return () => clearInterval(timer);
  }, [watchUntil, reload]);
  return (
    <Paper p="lg">
      <Title order={3} size="h4" mb="sm">
        Scheduled jobs
      </Title>
      <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
        {(data) => (
          <ResponsiveTable minWidth={640}>
            <Table>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Job</Table.Th>
                  <Table.Th>Schedule</Table.Th>
                  <Table.Th>Last run</Table.Th>
                  <Table.Th>Next run</Table.Th>
                  {canManage && <Table.Th />}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {data.jobSchedules.map((job) => (
                  <Table.Tr key={job.name}>
                    <Table.Td>
                      <Text size="sm" fw={500}>
                        {job.description}
                      </Text>
                      <Text size="xs" c="dimmed" ff="monospace">
                        {job.name}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm" ff="monospace">
                        {job.schedule}
                      </Text>
                      <Text size="xs" c="dimmed">
                        {job.timezone}
                      </Text>
                    </Table.Td>
                    <Table.Td title={formatDateTime(job.lastRunAt)}>
                      {job.running ? (
                        <Badge variant="light">running</Badge>
                      ) : job.lastFailedAt && (!job.lastRunAt || job.lastFailedAt >= job.lastRunAt) ? (
                        <Tooltip label={job.lastFailReason ?? 'failed'} multiline w={280}>
                          <Badge color="red" variant="light">
                            failed {relativeTime(job.lastFailedAt)}
                          </Badge>
                        </Tooltip>
                      ) : (
                        relativeTime(job.lastRunAt)
                      )}
                    </Table.Td>
                    <Table.Td title={formatDateTime(job.nextRunAt)}>{job.nextRunAt ? formatDateTime(job.nextRunAt) : '—'}</Table.Td>
                    {canManage && (
                      <Table.Td ta="right">
                        {job.canRunNow && (
                          <Button
                            size="xs"
                            variant="default"
                            disabled={job.running}
                            loading={runNow.saving}
                            aria-label={`Run ${job.name} now`}
                            onClick={async () => {
                              if (await runNow.run({ name: job.name })) setWatchUntil(Date.now() + 30_000);
                            }}
                          >
                            Run now
                          </Button>
                        )}
                      </Table.Td>
                    )}
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ResponsiveTable>
        )}
      </QueryState>
    </Paper>
  );
}
