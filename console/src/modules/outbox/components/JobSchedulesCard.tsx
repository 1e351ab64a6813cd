import { Badge, Paper, Table, Text, Title, Tooltip } from '@mantine/core';
import { useQuery } from 'urql';
import { formatDateTime, relativeTime } from '../../../lib/format';
import { QueryState } from '../../../ui/QueryState';
import { JobSchedulesQuery } from '../graphql/documents';
import { ResponsiveTable } from '../../../ui/ResponsiveTable';

/** The scheduled jobs (weekly digest, expiry alerts, delivery…) with their last and next run. */
export function JobSchedulesCard() {
  const [result, reload] = useQuery({ query: JobSchedulesQuery });
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
