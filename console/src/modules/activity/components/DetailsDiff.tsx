import { Code, Table, Text } from '@mantine/core';
import { diffRows, isDiff } from '../diff';

/** An entry's details: a before/after table for updates, a field/value table otherwise. */
export function DetailsDiff({ details }: { details: unknown }) {
  const rows = diffRows(details);
  if (rows.length === 0) return <Text size="sm" c="dimmed">No details recorded.</Text>;
  const diff = isDiff(details);
  return (
    <Table withTableBorder withColumnBorders fz="sm" data-testid="details-diff">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Field</Table.Th>
          {diff ? (
            <>
              <Table.Th>Before</Table.Th>
              <Table.Th>After</Table.Th>
            </>
          ) : (
            <Table.Th>Value</Table.Th>
          )}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {rows.map((row) => (
          <Table.Tr key={row.field}>
            {/* data-label: the activity log shows rows as labelled cards on a phone, this table inside them too. */}
            <Table.Td data-label="Field">
              <Code>{row.field}</Code>
            </Table.Td>
            {diff && (
              <Table.Td data-label="Before" bg={row.changed ? 'var(--mantine-color-red-0)' : undefined} style={{ wordBreak: 'break-word' }}>
                {row.changed ? <del aria-label={`before: ${row.before}`}>{row.before}</del> : row.before}
              </Table.Td>
            )}
            <Table.Td data-label={diff ? 'After' : 'Value'} bg={diff && row.changed ? 'var(--mantine-color-green-0)' : undefined} style={{ wordBreak: 'break-word' }}>
              {diff && row.changed ? <ins aria-label={`after: ${row.after}`} style={{ textDecoration: 'none' }}>{row.after}</ins> : row.after}
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
