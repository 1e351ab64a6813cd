import { Alert, Button, FileInput, List, Modal, Progress, ScrollArea, Stack, Table, Tabs, Text } from '@mantine/core';
import { IconDownload, IconFileImport } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { useQuery } from 'urql';
import { readFragment, type ResultOf } from '../../../graphql';
import { saveFile } from '../../../lib/download';
import { plural } from '../../../lib/format';
import { notifySuccess } from '../../../ui/notify';
import { useApiMutation } from '../../../ui/useApiMutation';
import { usePollUntil } from '../../../ui/usePollUntil';
import { ModalFooter } from '../../../ui/ModalFooter';
import { ImportKeygen } from './ImportKeygen';
import {
  CheckLicenseImportMutation, LicenseImportJobFields, LicenseImportJobQuery, LicenseImportReportFields, StartLicenseImportMutation, TakeLicenseImportKeysMutation,
} from '../graphql/import';

type Report = ResultOf<typeof LicenseImportReportFields>;
type Job = ResultOf<typeof LicenseImportJobFields>;
/** The server's limit (services/licenses/import.ts MAX_IMPORT_BYTES): a larger file is refused here before upload. */
const MAX_BYTES = 200_000;

/**
 * Import (CompanyAdmins), from a CSV file or from a Keygen account (ImportKeygen.tsx). CSV: pick a file, see the dry run's every error by line and column, confirm, follow the
 * background job, then download the generated keys — once. `onImported` refreshes the list.
 */
export function ImportLicensesButton({ disabled, onImported }: { disabled: boolean; onImported: () => void }) {
  const [opened, setOpened] = useState(false);
  // Kept here, not in the dialog: closed while the job runs or before its keys are downloaded, the dialog opens on
  // the same job again (the generated keys exist nowhere else).
  const [jobId, setJobId] = useState<string | null>(null);
  return (
    <>
      <Button variant="default" leftSection={<IconFileImport size={16} />} disabled={disabled} onClick={() => setOpened(true)}>
        Import
      </Button>
      {opened && (
        <ImportDialog
          jobId={jobId}
          onStarted={setJobId}
          onClose={(done) => {
            setOpened(false);
            if (done) setJobId(null);
          }}
          onImported={onImported}
        />
      )}
    </>
  );
}

function ImportDialog({ jobId, onStarted, onClose, onImported }: { jobId: string | null; onStarted: (id: string) => void; onClose: (done: boolean) => void; onImported: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [csv, setCsv] = useState<string | null>(null);
  const [report, setReport] = useState<Report | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const check = useApiMutation(CheckLicenseImportMutation, { errorTitle: 'The file could not be checked' });
  const start = useApiMutation(StartLicenseImportMutation, { errorTitle: 'The import did not start' });

  const pick = async (picked: File | null) => {
    setFile(picked);
    setReport(null);
    setCsv(null);
    setProblem(null);
    if (!picked) return;
    if (picked.size > MAX_BYTES) return setProblem(`${picked.name} is ${picked.size.toLocaleString('en-US')} bytes; an import takes at most ${MAX_BYTES.toLocaleString('en-US')}: split the file.`);
    const text = await picked.text();
    const data = await check.run({ input: { csv: text } });
    if (!data) return;
    setCsv(text);
    setReport(readFragment(LicenseImportReportFields, data.checkLicenseImport.report));
  };
  const toImport = report ? report.valid - report.alreadyImported : 0;

  return (
    // Once a job runs, only its own buttons close the dialog (a stray click or Escape would hide the keys' download).
    <Modal opened onClose={() => onClose(false)} closeOnClickOutside={!jobId} closeOnEscape={!jobId} title="Import licenses" size="xl" centered>
      {jobId ? (
        <ImportProgress id={jobId} onFinished={onImported} onClose={onClose} />
      ) : (
        <Tabs defaultValue="csv" keepMounted={false}>
          <Tabs.List mb="md">
            <Tabs.Tab value="csv">CSV</Tabs.Tab>
            <Tabs.Tab value="keygen">From Keygen</Tabs.Tab>
          </Tabs.List>
          <Tabs.Panel value="keygen">
            <ImportKeygen onImported={onImported} />
          </Tabs.Panel>
          <Tabs.Panel value="csv">
            <Stack>
              <Text size="sm">
                One row per license. Columns: <code>product</code> (name or id) and <code>max_activations</code> (or <code>seats</code>) are required;{' '}
                <code>key</code> (empty: a new key is generated), <code>customer_email</code>, <code>expires_at</code>, <code>features</code>,{' '}
                <code>custom.&lt;name&gt;</code>, <code>notes</code> and the other columns of the CSV export are optional. Importing the same file again creates
                nothing twice.
              </Text>
              <FileInput label="CSV file" placeholder="Choose a file" accept=".csv,text/csv" clearable value={file} onChange={pick} disabled={check.saving} />
              {check.saving && <Text size="sm">Checking every row…</Text>}
              {problem && (
                <Alert color="red" variant="light">
                  {problem}
                </Alert>
              )}
              {report && <DryRunReport report={report} />}
              <ModalFooter
                onCancel={() => onClose(false)}
                disabled={!report || report.errorCount > 0 || report.valid === 0}
                loading={start.saving}
                confirmLabel={report && report.errorCount === 0 && toImport > 0 ? `Import ${plural(toImport, 'license')}` : 'Import'}
                onConfirm={async () => {
                  const data = await start.run({ input: { csv: csv! } });
                  if (data) onStarted(readFragment(LicenseImportJobFields, data.startLicenseImport.job).id);
                }}
              />
            </Stack>
          </Tabs.Panel>
        </Tabs>
      )}
    </Modal>
  );
}

/** The dry run: a summary, then every error by line and column (the first 1,000). */
function DryRunReport({ report }: { report: Report }) {
  const skipped = report.alreadyImported ? ` ${plural(report.alreadyImported, 'row was', 'rows were')} imported before from this file and will be skipped.` : '';
  if (report.errorCount === 0) {
    return (
      <Alert color="blue" data-testid="import-summary">
        {plural(report.rows, 'row')}, all valid.{skipped} Nothing is created until you confirm.
      </Alert>
    );
  }
  return (
    <Stack gap="xs">
      <Alert color="red" data-testid="import-summary">
        {plural(report.valid, 'row')} of {report.rows} valid; {plural(report.errorCount, 'error')} to fix first{report.errorCount > report.errors.length ? ` (the first ${report.errors.length} are listed)` : ''}.
      </Alert>
      <ScrollArea.Autosize mah={320}>
        <Table striped withTableBorder data-testid="import-errors">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Line</Table.Th>
              <Table.Th>Column</Table.Th>
              <Table.Th>Problem</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {report.errors.map((error, index) => (
              <Table.Tr key={index}>
                <Table.Td>{error.line}</Table.Td>
                <Table.Td>{error.column ?? '—'}</Table.Td>
                <Table.Td>{error.message}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </ScrollArea.Autosize>
    </Stack>
  );
}

/** The job, polled every second until it finishes; then its outcome, the failed rows and the keys to download once. */
function ImportProgress({ id, onFinished, onClose }: { id: string; onFinished: () => void; onClose: (done: boolean) => void }) {
  const [result, reload] = useQuery({ query: LicenseImportJobQuery, variables: { id }, requestPolicy: 'network-only' });
  const job: Job | null = result.data?.licenseImportJob ? readFragment(LicenseImportJobFields, result.data.licenseImportJob) : null;
  const finished = job?.finished ?? false;
  const take = useApiMutation(TakeLicenseImportKeysMutation, { errorTitle: 'The keys could not be downloaded' });
  const [downloaded, setDownloaded] = useState(false);
  usePollUntil(finished, reload);
  useEffect(() => {
    if (finished) onFinished();
  }, [finished]); // eslint-disable-line react-hooks/exhaustive-deps
  if (!job) return <Text size="sm">Starting…</Text>;
  const processed = job.done + job.failed;
  const keys = downloaded ? 0 : job.keysToDownload;

  return (
    <Stack data-testid="import-progress">
      <Text size="sm" aria-live="polite">
        {finished
          ? `Finished: ${plural(job.created, 'license')} created, ${job.skipped.toLocaleString('en-US')} imported before (skipped), ${job.failed.toLocaleString('en-US')} failed.`
          : `Importing in the background: ${processed.toLocaleString('en-US')} of ${plural(job.total, 'row')}…`}
      </Text>
      <Progress value={job.total ? (100 * processed) / job.total : 0} animated={!finished} aria-label="Import progress" />
      {job.failures.length > 0 && (
        <List size="sm" spacing={4}>
          {job.failures.map((failure) => (
            <List.Item key={failure.line}>
              Line {failure.line}: {failure.error}
            </List.Item>
          ))}
        </List>
      )}
      {finished && keys > 0 && (
        <Alert color="yellow" title="Download the generated keys now">
          <Stack gap="xs" align="flex-start">
            <Text size="sm">The {plural(keys, 'generated key')} can be downloaded once: the server then keeps only their digests.</Text>
            <Button
              leftSection={<IconDownload size={16} />}
              loading={take.saving}
              onClick={async () => {
                const data = await take.run({ input: { jobId: id } });
                if (!data) return;
                saveFile(new Blob([data.takeLicenseImportKeys.csv], { type: 'text/csv' }), `license-keys-${new Date().toISOString().slice(0, 10)}.csv`);
                setDownloaded(true);
                notifySuccess(`${plural(data.takeLicenseImportKeys.keys, 'key')} downloaded.`);
              }}
            >
              Download {plural(keys, 'key')} (once)
            </Button>
          </Stack>
        </Alert>
      )}
      {downloaded && <Text size="sm">The keys were downloaded: they are not shown again.</Text>}
      <ModalFooter
        variant={finished && keys === 0 ? 'filled' : 'default'}
        onConfirm={() => onClose(finished && keys === 0)}
        confirmLabel={!finished ? 'Close (it goes on in the background)' : keys > 0 ? 'Close (the keys wait under Import)' : 'Close'}
      />
    </Stack>
  );
}
