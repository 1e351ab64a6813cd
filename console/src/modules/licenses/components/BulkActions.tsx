import { Alert, Button, Group, List, Modal, Progress, Radio, Select, Stack, Text, TextInput } from '@mantine/core';
import { IconDownload, IconStack2 } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { useQuery } from 'urql';
import { readFragment, type ResultOf, type VariablesOf } from '../../../graphql';
import { saveFile } from '../../../lib/download';
import { plural } from '../../../lib/format';
import { session } from '../../../lib/session';
import { notifyError, notifySuccess } from '../../../ui/notify';
import { useApiMutation } from '../../../ui/useApiMutation';
import { usePollUntil } from '../../../ui/usePollUntil';
import { BulkJobFields, BulkJobQuery, BulkSelectionCountQuery, StartBulkLicenseActionMutation } from '../graphql/documents';
import { dayOf, endOfDay } from '../licenseForm';
import { ModalFooter } from '../../../ui/ModalFooter';

type Filter = NonNullable<VariablesOf<typeof BulkSelectionCountQuery>['selection']['filter']>;
type Action = VariablesOf<typeof StartBulkLicenseActionMutation>['input']['action'];
type Job = ResultOf<typeof BulkJobFields>;

const ACTIONS: { value: Action; label: string; verb: string; danger?: boolean }[] = [
  { value: 'SUSPEND', label: 'Suspend', verb: 'suspend' },
  { value: 'REINSTATE', label: 'Reinstate', verb: 'reinstate' },
  { value: 'RENEW', label: 'Renew', verb: 'renew' },
  { value: 'TRANSFER', label: 'Transfer', verb: 'transfer' },
  { value: 'REVOKE', label: 'Revoke (final)', verb: 'revoke', danger: true },
];
const licenses = (n: number) => plural(n, 'license');
/** The selection's size as the confirmation states it: "4 licenses", or "more than 10,000 licenses" past the server's cap. */
export const selectionSize = (total: { totalCount: number; totalCountCapped: boolean }) =>
  total.totalCountCapped ? `more than ${licenses(total.totalCount)}` : licenses(total.totalCount);

/** The licenses matching `filter` as a CSV download (streamed by the server; the search text travels in the body). */
export async function downloadLicensesCsv(filter: Filter) {
  const response = await session.fetch('/api/licenses/export', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...filter, status: filter.status?.toLowerCase() }),
  });
  if (!response.ok) throw new Error(((await response.json().catch(() => null)) as { error?: { message?: string } } | null)?.error?.message ?? `HTTP ${response.status}`);
  const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? 'licenses.csv';
  saveFile(await response.blob(), name);
}

/**
 * Export CSV (any member) and Bulk action (CompanyAdmins): on the selected rows or on every license matching the
 * list's filters. The dialog states how many licenses the action changes before it starts, then follows the
 * background job to its end; `onFinished` refreshes the list.
 */
export function BulkActions({ filter, selectedIds, canManage, onFinished }: { filter: Filter; selectedIds: readonly string[]; canManage: boolean; onFinished: () => void }) {
  const [exporting, setExporting] = useState(false);
  const [opened, setOpened] = useState(false);
  return (
    <Group gap="xs">
      <Button
        variant="default"
        leftSection={<IconDownload size={16} />}
        loading={exporting}
        onClick={async () => {
          setExporting(true);
          try {
            await downloadLicensesCsv(filter);
          } catch (error) {
            notifyError((error as Error).message, 'The export did not work');
          } finally {
            setExporting(false);
          }
        }}
      >
        Export CSV
      </Button>
      {canManage && (
        <Button variant="default" leftSection={<IconStack2 size={16} />} onClick={() => setOpened(true)}>
          Bulk action{selectedIds.length ? ` (${selectedIds.length} selected)` : ''}
        </Button>
      )}
      {opened && <BulkActionDialog filter={filter} selectedIds={selectedIds} onClose={() => setOpened(false)} onFinished={onFinished} />}
    </Group>
  );
}

function BulkActionDialog({ filter, selectedIds, onClose, onFinished }: { filter: Filter; selectedIds: readonly string[]; onClose: () => void; onFinished: () => void }) {
  const [scope, setScope] = useState<'selected' | 'filter'>(selectedIds.length ? 'selected' : 'filter');
  const [action, setAction] = useState<Action>('SUSPEND');
  const [renewOn, setRenewOn] = useState(() => dayOf(new Date(Date.now() + 365 * 86_400_000).toISOString()));
  const [email, setEmail] = useState('');
  const [fieldError, setFieldError] = useState<string | null>(null);
  const [jobId, setJobId] = useState<string | null>(null);
  const selection = scope === 'selected' ? { licenseIds: [...selectedIds] } : { filter };
  const [count] = useQuery({ query: BulkSelectionCountQuery, variables: { selection }, requestPolicy: 'network-only', pause: jobId !== null });
  const start = useApiMutation(StartBulkLicenseActionMutation);
  const chosen = ACTIONS.find((candidate) => candidate.value === action)!;
  const total = count.data?.bulkSelectionTotal;
  const n = total?.totalCount;

  return (
    <Modal opened onClose={onClose} title="Bulk action" centered>
      {jobId ? (
        <BulkJobProgress id={jobId} onFinished={onFinished} onClose={onClose} />
      ) : (
        <Stack>
          <Radio.Group label="Licenses" value={scope} onChange={(value) => setScope(value as 'selected' | 'filter')}>
            <Stack gap={6} mt={6}>
              <Radio value="selected" label={selectedIds.length ? `The ${licenses(selectedIds.length)} ticked on this page` : 'Ticked rows (none ticked)'} disabled={selectedIds.length === 0} />
              <Radio value="filter" label="Every license matching the current filters" />
            </Stack>
          </Radio.Group>
          <Select label="Action" data={ACTIONS.map(({ value, label }) => ({ value, label }))} withScrollArea={false} value={action} allowDeselect={false} onChange={(value) => value && (setAction(value as Action), setFieldError(null))} />
          {action === 'RENEW' && (
            <TextInput label="New expiry date (UTC, end of day)" type="date" value={renewOn} error={fieldError} onChange={(event) => (setRenewOn(event.currentTarget.value), setFieldError(null))} />
          )}
          {action === 'TRANSFER' && (
            <TextInput label="New customer email" type="email" value={email} error={fieldError} onChange={(event) => (setEmail(event.currentTarget.value), setFieldError(null))} />
          )}
          <Alert color={chosen.danger ? 'red' : 'blue'} data-testid="bulk-confirmation">
            {n === undefined
              ? 'Counting the licenses…'
              : n === 0
                ? 'No license matches: there is nothing to do.'
                : `This will ${chosen.verb} ${selectionSize(total!)}${chosen.danger ? '. Revocation is final' : ''}. Licenses it cannot change (a revoked one, a perpetual one for a renewal) are listed afterwards.`}
          </Alert>
          <ModalFooter
            onCancel={onClose}
            danger={chosen.danger}
            disabled={!n}
            loading={start.saving}
            confirmLabel={n ? `${chosen.label.replace(' (final)', '')} ${total!.totalCountCapped ? 'all matching' : licenses(n)}` : chosen.label.replace(' (final)', '')}
            onConfirm={async () => {
              if (action === 'TRANSFER' && !email.trim()) return setFieldError('Enter the new customer email.');
              if (action === 'RENEW' && !renewOn) return setFieldError('Pick the new expiry date.');
              const input = { action, ...selection, ...(action === 'RENEW' && { expiresAt: endOfDay(renewOn) }), ...(action === 'TRANSFER' && { customerEmail: email.trim() }) };
              const data = await start.run({ input }, { form: { setErrors: (errors) => setFieldError(errors.expiresAt ?? errors.customerEmail ?? null) } });
              if (data) setJobId(readFragment(BulkJobFields, data.startBulkLicenseAction.job).id);
            }}
          />
        </Stack>
      )}
    </Modal>
  );
}

/** The job's progress, polled every second until it finishes; then its outcome and the licenses it could not change. */
function BulkJobProgress({ id, onFinished, onClose }: { id: string; onFinished: () => void; onClose: () => void }) {
  const [result, reload] = useQuery({ query: BulkJobQuery, variables: { id }, requestPolicy: 'network-only' });
  const job: Job | null = result.data?.bulkJob ? readFragment(BulkJobFields, result.data.bulkJob) : null;
  const finished = job?.finished ?? false;
  usePollUntil(finished, reload);
  useEffect(() => {
    if (!finished || !job) return;
    onFinished();
    if (job.failed === 0) notifySuccess(`Bulk action done: ${licenses(job.done)}.`);
  }, [finished]); // eslint-disable-line react-hooks/exhaustive-deps
  if (!job) return <Text size="sm">Starting…</Text>;
  const processed = job.done + job.failed;
  return (
    <Stack data-testid="bulk-progress">
      <Text size="sm" aria-live="polite">
        {finished ? `Finished: ${licenses(job.done)} done, ${job.failed.toLocaleString('en-US')} could not be changed.` : `Working in the background: ${processed.toLocaleString('en-US')} of ${licenses(job.total)}…`}
      </Text>
      <Progress value={job.total ? (100 * processed) / job.total : 0} animated={!finished} aria-label="Bulk action progress" />
      {job.failures.length > 0 && (
        <List size="sm" spacing={4}>
          {job.failures.map((failure) => (
            <List.Item key={failure.licenseId}>
              <Text span ff="monospace" size="sm">
                {failure.keyHint}
              </Text>
              : {failure.error}
            </List.Item>
          ))}
        </List>
      )}
      <ModalFooter variant={finished ? 'filled' : 'default'} onConfirm={onClose} confirmLabel={finished ? 'Close' : 'Close (it goes on in the background)'} />
    </Stack>
  );
}
