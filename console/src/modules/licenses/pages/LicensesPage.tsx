import { Anchor, Button, Code, Group, Paper, SegmentedControl, Select, Table, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconPlus } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useQuery } from 'urql';
import { seats } from '../../../lib/format';
import { compactId, expandId, licensePath } from '../../../lib/ids';
import { DebouncedSearch } from '../../../ui/DebouncedSearch';
import { PageHeader } from '../../../ui/PageHeader';
import { Pager } from '../../../ui/Pager';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useCursorPages } from '../../../ui/useCursorPages';
import { useSearchFilters } from '../../../ui/useSearchFilters';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { CreateLicenseModal } from '../components/CreateLicenseModal';
import { ExpiryText, LicenseStatusBadge, type LicenseStatus } from '../components/LicenseStatus';
import { LicensesQuery, ProductOptionsQuery } from '../graphql/documents';
import { refetchOn } from '../../../lib/client';
import { ResponsiveTable } from '../../../ui/ResponsiveTable';

const PAGE_SIZE = 20;
// The search text stays out of the URL: it may be a whole license key, which must never travel in a URL.
const FILTERS = ['product', 'status', 'expiring'] as const;
const STATUS_OPTIONS = [
  { value: '', label: 'All' },
  { value: 'active', label: 'Active' },
  { value: 'expired', label: 'Expired' },
  { value: 'revoked', label: 'Revoked' },
];
const EXPIRING_OPTIONS = [
  { value: '1', label: 'Today or tomorrow' },
  { value: '7', label: 'Within 7 days' },
  { value: '30', label: 'Within 30 days' },
  { value: '90', label: 'Within 90 days' },
];

export function LicensesPage() {
  const filters = useSearchFilters(FILTERS);
  const { values } = filters;
  const [search, setSearch] = useState('');
  const filtered = filters.active || search !== '';
  const clearAll = () => {
    setSearch('');
    filters.clear();
  };
  const pages = useCursorPages();
  const [creating, { open, close }] = useDisclosure(false);
  const canManage = useCanManage();
  const navigate = useNavigate();
  const [products] = useQuery({ query: ProductOptionsQuery });

  const filter = {
    search: search || undefined,
    productId: values.product ? expandId(values.product) : undefined,
    status: (values.status ? values.status.toUpperCase() : undefined) as LicenseStatus | undefined,
    expiringWithinDays: values.expiring ? Number(values.expiring) : undefined,
  };
  const filterKey = JSON.stringify(filter);
  const { reset } = pages;
  useEffect(reset, [filterKey, reset]);
  const [result, reload] = useQuery({ query: LicensesQuery, variables: { first: PAGE_SIZE, after: pages.after, filter }, context: refetchOn('License') });

  return (
    <>
      <PageHeader
        title="Licenses"
        description="Search by customer email, key hint or a whole key."
        actions={
          <Button leftSection={<IconPlus size={16} />} onClick={open} disabled={!canManage}>
            New license
          </Button>
        }
      />
      <CreateLicenseModal opened={creating} onClose={close} productId={values.product ? expandId(values.product) : undefined} />
      <Paper p="sm" mb="md">
        <Group gap="sm" align="flex-end" wrap="wrap">
          <DebouncedSearch label="Search" placeholder="Email, key hint or full key" autoComplete="off" w={{ base: '100%', sm: 260 }} value={search} onSearch={setSearch} />
          <Select
            label="Product"
            placeholder="All products"
            clearable
            searchable
            w={200}
            data={(products.data?.products.nodes ?? []).map((product) => ({ value: product.id, label: product.name }))}
            value={values.product ? expandId(values.product) : null}
            onChange={(product) => filters.set({ product: product && compactId(product) })}
          />
          <Select label="Expiry" placeholder="Any expiry" clearable w={200} data={EXPIRING_OPTIONS} value={values.expiring || null} onChange={(expiring) => filters.set({ expiring })} />
          <div>
            <Text size="sm" fw={500} mb={2} id="status-filter-label">
              Status
            </Text>
            <SegmentedControl aria-labelledby="status-filter-label" data={STATUS_OPTIONS} value={values.status} onChange={(status) => filters.set({ status })} />
          </div>
          {filtered && (
            <Button variant="subtle" onClick={clearAll}>
              Clear filters
            </Button>
          )}
        </Group>
      </Paper>
      <Paper>
        <QueryState
          result={result}
          onRetry={() => reload({ requestPolicy: 'network-only' })}
          isEmpty={(data) => data.licenses.nodes.length === 0}
          empty={
            filtered ? (
              <EmptyState title="No licenses match" action={<Button variant="subtle" onClick={clearAll}>Clear filters</Button>} />
            ) : (
              <EmptyState title="No licenses yet" action={canManage && <Button onClick={open}>Create your first license</Button>}>
                Licenses are what your customers' applications activate and validate.
              </EmptyState>
            )
          }
        >
          {(data) => (
            <>
              <ResponsiveTable minWidth={860}>
                <Table>
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Key</Table.Th>
                      <Table.Th>Product</Table.Th>
                      <Table.Th>Customer</Table.Th>
                      <Table.Th>Status</Table.Th>
                      <Table.Th ta="right">Seats</Table.Th>
                      <Table.Th>Expires</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {data.licenses.nodes.map((license) => (
                      <Table.Tr key={license.id} data-testid="license-row" style={{ cursor: 'pointer' }} onClick={(event) => !(event.target as HTMLElement).closest('a') && navigate(licensePath(license.id))}>
                        <Table.Td>
                          <Anchor component={Link} to={licensePath(license.id)} ff="monospace" size="sm">
                            {license.keyHint}
                          </Anchor>
                        </Table.Td>
                        <Table.Td>
                          <Text size="sm">{license.product.name}</Text>
                        </Table.Td>
                        <Table.Td>
                          <Text size="sm" c={license.customerEmail ? undefined : 'dimmed'}>
                            {license.customerEmail ?? '—'}
                          </Text>
                        </Table.Td>
                        <Table.Td>
                          <LicenseStatusBadge status={license.status} isTrial={license.isTrial} />
                        </Table.Td>
                        <Table.Td ta="right">
                          <Code>{seats(license.currentActivations, license.maxActivations)}</Code>
                        </Table.Td>
                        <Table.Td>
                          <ExpiryText expiresAt={license.expiresAt} daysUntilExpiry={license.daysUntilExpiry} status={license.status} />
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </ResponsiveTable>
              <Pager pages={pages} connection={data.licenses} pageSize={PAGE_SIZE} busy={result.fetching} />
            </>
          )}
        </QueryState>
      </Paper>
    </>
  );
}
