import { Anchor, Code, Text } from '@mantine/core';
import { Link } from 'react-router';
import { graphql, readFragment, type FragmentOf } from '../../../graphql';
import { seats } from '../../../lib/format';
import { DataTable, type PagedConnection } from '../../../ui/DataTable';
import { licensePath } from '../paths';
import { ExpiryText, LicenseStatusBadge } from './LicenseStatus';

/** What a row of the licenses list shows. */
export const LicenseListFields = graphql(`
  fragment LicenseListFields on License {
    id
    keyHint
    status
    customerEmail
    expiresAt
    daysUntilExpiry
    isTrial
    currentActivations
    maxActivations
    createdAt
    product {
      id
      name
    }
  }
`);

/** The licenses list: a row opens its license. */
export function LicensesTable({ licenses, onOpen, fetching, paging, selectedIds, onSelect }: {
  licenses: readonly FragmentOf<typeof LicenseListFields>[];
  onOpen: (id: string) => void;
  fetching?: boolean;
  paging?: { connection: PagedConnection; onLoadMore: (endCursor: string) => void };
  /** With these, rows have checkboxes (bulk actions on a selection). */
  selectedIds?: readonly string[];
  onSelect?: (ids: string[]) => void;
}) {
  const records = readFragment(LicenseListFields, licenses);
  const selection = selectedIds && onSelect ? { selected: records.filter((license) => selectedIds.includes(license.id)), onChange: (rows: typeof records) => onSelect(rows.map((row) => row.id)) } : undefined;
  return (
    <DataTable
      records={records}
      minWidth={860}
      rowTestId="license-row"
      onRowClick={(license) => onOpen(license.id)}
      fetching={fetching}
      paging={paging}
      selection={selection}
      columns={[
        {
          accessor: 'keyHint',
          title: 'Key',
          render: (license) => (
            <Anchor component={Link} to={licensePath(license.id)} ff="monospace" size="sm">
              {license.keyHint}
            </Anchor>
          ),
        },
        { accessor: 'product', title: 'Product', render: (license) => <Text size="sm">{license.product.name}</Text> },
        {
          accessor: 'customerEmail',
          title: 'Customer',
          render: (license) => (
            <Text size="sm" c={license.customerEmail ? undefined : 'dimmed'}>
              {license.customerEmail ?? '—'}
            </Text>
          ),
        },
        { accessor: 'status', title: 'Status', render: (license) => <LicenseStatusBadge status={license.status} isTrial={license.isTrial} /> },
        { accessor: 'seats', title: 'Seats', textAlign: 'right', render: (license) => <Code>{seats(license.currentActivations, license.maxActivations)}</Code> },
        {
          accessor: 'expiresAt',
          title: 'Expires',
          render: (license) => <ExpiryText expiresAt={license.expiresAt} daysUntilExpiry={license.daysUntilExpiry} status={license.status} />,
        },
      ]}
    />
  );
}
