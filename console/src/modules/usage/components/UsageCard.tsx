import { ActionIcon, Button, Group, Modal, NumberInput, Paper, Progress, SegmentedControl, Select, Stack, Text, TextInput, Title, Tooltip } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconTrash } from '@tabler/icons-react';
import { useState } from 'react';
import { useQuery } from 'urql';
import { z } from 'zod';
import type { EnumOf } from '../../../graphql';
import { formatDate, formatNumber } from '../../../lib/format';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useZodForm } from '../../../ui/useZodForm';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { RemoveMeterQuotaMutation, SetMeterQuotaMutation, UsageTotalsQuery } from '../graphql/documents';
import { DataTable } from '../../../ui/DataTable';
import { ModalFooter } from '../../../ui/ModalFooter';

type Period = EnumOf<'MeterPeriod'>;
const PERIODS: { value: Period; label: string }[] = [
  { value: 'DAY', label: 'Today' },
  { value: 'MONTH', label: 'This month' },
  { value: 'YEAR', label: 'This year' },
  { value: 'LIFETIME', label: 'Lifetime' },
];

/** Metered usage of one license (POST /api/v1/meter) per event, with quotas. */
/** `inactive`: why no quota can be set or removed now (the server's License.quotaChangeBlockedReason), or null. */
export function UsageCard({ licenseId, inactive = null }: { licenseId: string; inactive?: string | null }) {
  const [period, setPeriod] = useState<Period>('MONTH');
  const [result, reload] = useQuery({ query: UsageTotalsQuery, variables: { licenseId, period } });
  const [quotaFor, setQuotaFor] = useState<string | null>(null);
  const [editing, { open, close }] = useDisclosure(false);
  const canManage = useCanManage();
  const remove = useApiMutation(RemoveMeterQuotaMutation, { success: 'Quota removed.' });

  return (
    <Paper p="lg">
      <Group justify="space-between" mb="sm" wrap="wrap">
        <Title order={3} size="h4">
          Usage
        </Title>
        <Group gap="xs">
          <SegmentedControl size="xs" data={PERIODS} value={period} onChange={(value) => setPeriod(value as Period)} aria-label="Usage period" />
          {canManage && (
            <Tooltip label={inactive} disabled={!inactive} withArrow>
              <span>
                <Button size="xs" variant="default" disabled={Boolean(inactive)} aria-description={inactive ?? undefined} onClick={() => { setQuotaFor(null); open(); }}>
                  Set quota
                </Button>
              </span>
            </Tooltip>
          )}
        </Group>
      </Group>
      <QuotaModal licenseId={licenseId} event={quotaFor} opened={editing} onClose={close} />
      <QueryState
        result={result}
        onRetry={() => reload({ requestPolicy: 'network-only' })}
        isEmpty={(data) => !data.usageTotals || data.usageTotals.totals.length === 0}
        empty={<EmptyState title="No usage recorded">Applications report usage with POST /api/v1/meter.</EmptyState>}
      >
        {({ usageTotals: usage }) => usage && (
          <>
            {usage.periodStart && (
              <Text size="xs" c="dimmed" mb="xs">
                {formatDate(usage.periodStart)} – {formatDate(usage.periodEnd)} (UTC)
              </Text>
            )}
            <DataTable
              records={usage.totals}
              idAccessor="event"
              minWidth={560}
              columns={[
                {
                  accessor: 'event',
                  title: 'Event',
                  render: (row) => (
                    <Text size="sm" ff="monospace">
                      {row.event}
                    </Text>
                  ),
                },
                { accessor: 'total', title: 'Quantity', textAlign: 'right', render: (row) => formatNumber(row.total) },
                { accessor: 'count', title: 'Records', textAlign: 'right', render: (row) => formatNumber(row.count) },
                {
                  accessor: 'quota',
                  title: 'Quota',
                  render: (row) =>
                    row.quota ? (
                      <Stack gap={2} miw={180}>
                        <Text size="xs">
                          {formatNumber(row.quota.limit)} per {row.quota.period.toLowerCase()}
                          {row.remaining !== null && ` · ${formatNumber(row.remaining)} left`}
                        </Text>
                        {row.quota.period === usage.period && <Progress size="sm" value={Math.min(100, (row.total / Math.max(1, row.quota.limit)) * 100)} color={row.remaining === 0 ? 'red' : 'indigo'} aria-label={`${row.event} quota used`} />}
                      </Stack>
                    ) : (
                      <Text size="xs" c="dimmed">
                        none
                      </Text>
                    ),
                },
                {
                  accessor: 'actions',
                  title: '',
                  render: (row) =>
                    canManage && !inactive && (
                      <Group gap={4} justify="flex-end" wrap="nowrap">
                        <Button size="compact-xs" variant="subtle" onClick={() => { setQuotaFor(row.event); open(); }}>
                          {row.quota ? 'Change' : 'Add quota'}
                        </Button>
                        {row.quota && (
                          <Tooltip label="Remove quota">
                            <ActionIcon size="sm" variant="subtle" color="red" aria-label={`Remove the ${row.event} quota`} loading={remove.saving} onClick={() => void remove.run({ licenseId, event: row.event })}>
                              <IconTrash size={14} />
                            </ActionIcon>
                          </Tooltip>
                        )}
                      </Group>
                    ),
                },
              ]}
            />
          </>
        )}
      </QueryState>
    </Paper>
  );
}

const quotaSchema = z.object({ name: z.string(), period: z.string(), limit: z.union([z.literal(''), z.number()]).refine((limit) => limit !== '', 'Enter a limit.') });

function QuotaModal({ licenseId, event, opened, onClose }: { licenseId: string; event: string | null; opened: boolean; onClose: () => void }) {
  const form = useZodForm(quotaSchema, { name: '', period: 'MONTH' as Period, limit: 1000 as number | '' });
  const save = useApiMutation(SetMeterQuotaMutation, { success: 'Quota saved.' });
  const values = form.getValues();
  const submit = form.onSubmit(async ({ name, period, limit }) => {
    if (limit === '') return;
    if (await save.run({ licenseId, event: event ?? name.trim(), period, limit }, { form })) onClose();
  });
  return (
    <Modal opened={opened} onClose={onClose} title={event ? `Quota for ${event}` : 'Set a usage quota'} centered>
      <form onSubmit={submit}>
        <Stack>
          {!event && <TextInput label="Event name" required data-autofocus {...form.getInputProps('name')} description="As your application sends it, e.g. api_call." />}
          <Select label="Per" data={PERIODS.map((p) => ({ value: p.value, label: p.value.toLowerCase() }))} value={values.period} allowDeselect={false} onChange={(value) => value && form.setFieldValue('period', value as Period)} />
          <NumberInput label="Limit" required min={0} clampBehavior="none" allowDecimal={false} {...form.getInputProps('limit')} />
          <ModalFooter onCancel={onClose} confirmLabel="Save quota" loading={save.saving} disabled={values.limit === '' || (!event && !values.name.trim())} />
        </Stack>
      </form>
    </Modal>
  );
}
