import { Alert, Button, FileButton, Group, List, Progress, ScrollArea, Stack, Table, Text } from '@mantine/core';
import { IconFileImport } from '@tabler/icons-react';
import { useState } from 'react';
import { session } from '../../../lib/session';
import { plural } from '../../../lib/format';
import { notifySuccess } from '../../../ui/notify';

type Counts = { created: number; changed: number; unchanged: number; skipped: number };
/** The importer's report (server/src/services/keygen-import/import.ts KeygenImportReport), as POST /api/imports/keygen answers it. */
export interface KeygenReport {
  dryRun: boolean;
  read: Record<string, number>;
  products: Counts;
  plans: Counts;
  features: Counts;
  licenses: Counts;
  activations: Counts;
  notes: { type: string; field: string; message: string; count: number; examples: string[] }[];
  problems: { type: string; keygenId: string; message: string }[];
  problemCount: number;
}
/** The server's bound (services/keygen-import/source.ts MAX_ACCOUNT_BYTES): a larger selection is refused before upload. */
const MAX_BYTES = 512 * 1024 * 1024;
const PARTS = [
  ['products', 'Products'],
  ['plans', 'Plans (policies)'],
  ['features', 'Features (entitlements)'],
  ['licenses', 'Licenses'],
  ['activations', 'Activations (machines)'],
] as const;

/**
 * The bundle the server reads: one page a line. One file that is already a bundle (.ndjson / .jsonl, or a .json of
 * several lines) is sent as it is; several saved pages are each checked to be JSON and put on a line of their own,
 * with their path, which says whose entitlements a page lists when its links.self does not.
 */
export async function buildBundle(files: File[]): Promise<Blob> {
  if (files.length === 1 && /\.(ndjson|jsonl)$/i.test(files[0].name)) return files[0];
  const lines: string[] = [];
  for (const file of files) {
    const text = await file.text();
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      if (files.length === 1 && text.includes('\n')) return file; // a bundle saved as .json
      throw new Error(`${file.name} is not JSON: choose the pages saved from Keygen's API (.json), or one bundle file.`);
    }
    lines.push(JSON.stringify({ path: file.webkitRelativePath || file.name, document }));
  }
  return new Blob([lines.join('\n'), '\n'], { type: 'application/x-ndjson' });
}

/** The Keygen tab of the licenses page's Import dialog: choose the files, preview (dry run), import; the report. */
export function ImportKeygen({ onImported }: { onImported: () => void }) {
  const [files, setFiles] = useState<File[]>([]);
  const [running, setRunning] = useState<'preview' | 'import' | null>(null);
  const [report, setReport] = useState<KeygenReport | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  const run = async (dryRun: boolean) => {
    setRunning(dryRun ? 'preview' : 'import');
    setProblem(null);
    setReport(null);
    try {
      const bundle = await buildBundle(files);
      if (bundle.size > MAX_BYTES) throw new Error(`The files hold ${bundle.size.toLocaleString('en-US')} bytes; an import takes at most 512 MiB: use the CLI (pnpm cli import:keygen).`);
      const response = await session.fetch(`/api/imports/keygen?dryRun=${dryRun}`, { method: 'POST', headers: { 'content-type': 'application/x-ndjson' }, body: bundle });
      const body = (await response.json().catch(() => null)) as { report?: KeygenReport; error?: { message?: string } } | null;
      if (!response.ok || !body?.report) throw new Error(body?.error?.message ?? `The server answered ${response.status}.`);
      setReport(body.report);
      if (!dryRun) {
        notifySuccess(`${plural(body.report.licenses.created, 'license')} imported from Keygen.`);
        onImported();
      }
    } catch (error) {
      setProblem((error as Error).message);
    } finally {
      setRunning(null);
    }
  };

  return (
    <Stack>
      <Text size="sm">
        Choose the pages saved from Keygen's API (the answers of <code>products</code>, <code>entitlements</code>, <code>policies</code>, <code>users</code>,{' '}
        <code>licenses</code>, <code>machines</code> and each policy's <code>entitlements</code>, one <code>.json</code> file a page), or one bundle file (a page a
        line). Preview first: nothing is written until you import. Importing again creates nothing twice.
      </Text>
      <Group gap="sm">
        <FileButton
          accept=".json,.ndjson,.jsonl,application/json"
          multiple
          disabled={running !== null}
          onChange={(picked) => {
            setFiles(picked);
            setReport(null);
            setProblem(null);
          }}
        >
          {(props) => (
            <Button variant="default" leftSection={<IconFileImport size={16} />} {...props}>
              Choose Keygen files
            </Button>
          )}
        </FileButton>
        <Text size="sm" c="dimmed" data-testid="keygen-files">
          {files.length === 0 ? 'No file chosen' : files.length === 1 ? files[0].name : `${files.length} files chosen`}
        </Text>
      </Group>
      <Group justify="flex-end">
        <Button variant="default" disabled={!files.length || running !== null} loading={running === 'preview'} onClick={() => run(true)}>
          Preview (dry run)
        </Button>
        <Button disabled={!files.length || running !== null || !report?.dryRun} loading={running === 'import'} onClick={() => run(false)}>
          Import
        </Button>
      </Group>
      {running && (
        <Stack gap={4} data-testid="keygen-running">
          <Text size="sm" aria-live="polite">
            {running === 'preview' ? 'Reading and mapping the account (nothing is written)…' : 'Importing: each license with its activations…'}
          </Text>
          <Progress value={100} animated aria-label={running === 'preview' ? 'Preview in progress' : 'Import in progress'} />
        </Stack>
      )}
      {problem && (
        <Alert color="red" variant="light" title="The Keygen files could not be imported" data-testid="keygen-error">
          {problem}
        </Alert>
      )}
      {report && <KeygenReportView report={report} />}
    </Stack>
  );
}

function KeygenReportView({ report }: { report: KeygenReport }) {
  return (
    <Stack gap="xs" data-testid="keygen-report">
      <Alert color={report.problemCount ? 'yellow' : 'blue'} data-testid="keygen-summary">
        {report.dryRun ? 'Preview: nothing was written. ' : 'Imported. '}
        {plural(report.read.licenses ?? 0, 'license')} and {plural(report.read.machines ?? 0, 'machine')} read from {plural(report.read.pages ?? 0, 'page')};{' '}
        {report.dryRun ? 'would create' : 'created'} {plural(report.licenses.created, 'license')}
        {report.problemCount ? `; ${plural(report.problemCount, 'object')} not imported (listed below)` : ''}.
      </Alert>
      <Table withTableBorder striped data-testid="keygen-counts">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Type</Table.Th>
            <Table.Th>{report.dryRun ? 'To create' : 'Created'}</Table.Th>
            <Table.Th>{report.dryRun ? 'To change' : 'Changed'}</Table.Th>
            <Table.Th>Unchanged</Table.Th>
            <Table.Th>Skipped</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {PARTS.map(([part, label]) => (
            <Table.Tr key={part}>
              <Table.Td>{label}</Table.Td>
              <Table.Td>{report[part].created}</Table.Td>
              <Table.Td>{report[part].changed}</Table.Td>
              <Table.Td>{report[part].unchanged}</Table.Td>
              <Table.Td>{report[part].skipped}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {(report.notes.length > 0 || report.problems.length > 0) && (
        <ScrollArea.Autosize mah={240}>
          <Text size="sm" fw={500}>
            Not carried over
          </Text>
          <List size="sm" spacing={2} data-testid="keygen-not-carried">
            {report.problems.map((item, index) => (
              <List.Item key={`p${index}`}>
                {item.type} {item.keygenId}: {item.message}
              </List.Item>
            ))}
            {report.notes.map((note, index) => (
              <List.Item key={`n${index}`}>
                {note.type} {note.field} ({note.count}×): {note.message}
              </List.Item>
            ))}
          </List>
        </ScrollArea.Autosize>
      )}
    </Stack>
  );
}
