import { Badge, Button, Paper, Text, Title, Tooltip } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useQuery } from 'urql';
import { formatDateTime, relativeTime } from '../../../lib/format';
import { QueryState } from '../../../ui/QueryState';
import { JobSchedulesQuery, RunJobNowMutation } from '../graphql/documents';
import { useApiMutation } from '../../../ui/useApiMutation';
import { usePollUntil } from '../../../ui/usePollUntil';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { DataTable } from '../../../ui/DataTable';

/** How long the last run took, once it finished (a run still going or that failed has none). */
function tookSeconds(job: { lastRunAt?: string | null; lastFinishedAt?: string | null }): number | null {
  if (!job.lastRunAt || !job.lastFinishedAt || job.lastFinishedAt < job.lastRunAt) return null;
  return Math.round((Date.parse(job.lastFinishedAt) - Date.parse(job.lastRunAt)) / 100) / 10;
}

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
  // A run in progress is followed until it ends, so its badge clears and "Run now" comes back on by itself (a page
  // opened during the every-minute delivery run kept both until reloaded).
  usePollUntil(!result.data?.jobSchedules.some((job) => job.running), reload);
  return (
    <Paper p="lg">
      <Title order={3} size="h4" mb="sm">
        Scheduled jobs
      </Title>
      <QueryState result={result} onRetry={() => reload({ requestPolicy: 'network-only' })}>
        {(data) => (
          <DataTable
            records={data.jobSchedules}
            idAccessor="name"
            minWidth={640}
            columns={[
              {
                accessor: 'description',
                title: 'Job',
                render: (job) => (
                  <div>
                    <Text size="sm" fw={500}>
                      {job.description}
                    </Text>
                    <Text size="xs" c="dimmed" ff="monospace">
                      {job.name}
                    </Text>
                  </div>
                ),
              },
              {
                accessor: 'schedule',
                title: 'Schedule',
                render: (job) => (
                  <div>
                    <Text size="sm" ff="monospace">
                      {job.schedule}
                    </Text>
                    <Text size="xs" c="dimmed">
                      {job.timezone}
                    </Text>
                  </div>
                ),
              },
              {
                accessor: 'lastRunAt',
                title: 'Last run',
                render: (job) =>
                  job.running ? (
                    <Badge variant="light">running</Badge>
                  ) : job.lastFailedAt && (!job.lastRunAt || job.lastFailedAt >= job.lastRunAt) ? (
                    <Tooltip label={job.lastFailReason ?? 'failed'} multiline w={280}>
                      <Badge color="red" variant="light">
                        failed {relativeTime(job.lastFailedAt)}
                      </Badge>
                    </Tooltip>
                  ) : (
                    <span title={formatDateTime(job.lastRunAt)}>
                      {relativeTime(job.lastRunAt)}
                      {tookSeconds(job) !== null && (
                        <Text span size="xs" c="dimmed">
                          {' '}
                          · took {tookSeconds(job)} s
                        </Text>
                      )}
                    </span>
                  ),
              },
              { accessor: 'nextRunAt', title: 'Next run', render: (job) => (job.nextRunAt ? formatDateTime(job.nextRunAt) : '—') },
              {
                accessor: 'actions',
                title: '',
                render: (job) =>
                  canManage &&
                  job.canRunNow && (
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
                  ),
              },
            ]}
          />
        )}
      </QueryState>
    </Paper>
  );
}
