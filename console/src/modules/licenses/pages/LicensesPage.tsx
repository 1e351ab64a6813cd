import { Button, Group, Paper, SegmentedControl, Select, Text } from '@mantine/core';
import { useDisclosure, useMediaQuery } from '@mantine/hooks';
import { IconPlus } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { useNavigate } from 'react-router';
import { useQuery } from 'urql';
import { DebouncedSearch } from '../../../ui/DebouncedSearch';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useCursorPages } from '../../../ui/useCursorPages';
import { useOpenFromLink } from '../../../ui/useOpenFromLink';
import { useSearchFilters } from '../../../ui/useSearchFilters';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { BulkActions } from '../components/BulkActions';
import { CreateLicenseModal } from '../components/CreateLicenseModal';
import { ImportLicensesButton } from '../components/ImportLicenses';
import { LicensesTable } from '../components/LicensesTable';
import type { LicenseStatus } from '../components/LicenseStatus';
import { LicensesQuery, ProductOptionsQuery } from '../graphql/documents';
import { licensePath } from '../paths';

const PAGE_SIZE = 20;
const FILTERS = ['product', 'plan', 'status', 'expiring', 'q'] as const;
/** A license key (or most of one, being typed) is a credential: searched for, never put in the address (the server refuses keys in URLs). */
const KEY_SHAPED = /[A-Z][A-Z0-9]{1,11}-[A-Z0-9]{4}/i; // the prefix and one group: a pause while typing a key
const STATUS_OPTIONS = [
  { value: '', label: 'All' },
  { value: 'active', label: 'Active' },
  { value: 'expired', label: 'Expired' },
  { value: 'suspended', label: 'Suspended' },
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
  // The search text is kept in the address (`q`) like the filters, except a key (kept in memory only).
  const [keySearch, setKeySearch] = useState('');
  const search = keySearch || values.q;
  const setSearch = (text: string) => {
    const isKey = KEY_SHAPED.test(text);
    setKeySearch(isKey ? text : '');
    filters.set({ q: isKey ? null : text });
  };
  const narrow = useMediaQuery('(max-width: 30em)');
  const filtered = filters.active || search !== '';
  const clearAll = () => {
    setKeySearch('');
    filters.clear();
  };
  const [creating, { open, close }] = useDisclosure(false);
  const canManage = useCanManage();
  useOpenFromLink(() => canManage && open()); // a read-only member's checklist link opens nothing they cannot use
  const navigate = useNavigate();
  const [products] = useQuery({ query: ProductOptionsQuery });

  const filter = {
    search: search || undefined,
    productId: values.product ? values.product : undefined,
    planId: values.plan ? values.plan : undefined,
    status: (values.status ? values.status.toUpperCase() : undefined) as LicenseStatus | undefined,
    expiringWithinDays: values.expiring ? Number(values.expiring) : undefined,
  };
  const filterKey = JSON.stringify(filter);
  const pages = useCursorPages(filterKey);
  const [selectedIds, setSelectedIds] = useState<string[]>([]);
  // Ticked rows belong to the list they were ticked in: another filter or search starts with none.
  useEffect(() => setSelectedIds([]), [filterKey]);
  const [result, reload] = useQuery({ query: LicensesQuery, variables: { first: PAGE_SIZE, after: pages.after, filter } });

  return (
    <>
      <PageHeader
        title="Licenses"
        description="Search by customer email, key hint or a whole key."
        actions={
          <Group gap="xs">
            <ImportLicensesButton disabled={!canManage} onImported={() => (pages.reset(), reload({ requestPolicy: 'network-only' }))} />
            <Button leftSection={<IconPlus size={16} />} onClick={open} disabled={!canManage}>
              New license
            </Button>
          </Group>
        }
      />
      <CreateLicenseModal opened={creating} onClose={close} onCreated={pages.reset} productId={values.product ? values.product : undefined} />
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
            value={values.product ? values.product : null}
            onChange={(product) => filters.set({ product: product })}
          />
          <Select
            label="Plan"
            placeholder="Any plan"
            clearable
            searchable
            w={200}
            data={(products.data?.plans.nodes ?? []).map((plan) => ({ value: plan.id, label: `${plan.product.name}: ${plan.name}` }))}
            value={values.plan ? values.plan : null}
            onChange={(plan) => filters.set({ plan })}
          />
          <Select label="Expiry" placeholder="Any expiry" clearable w={200} data={EXPIRING_OPTIONS} value={values.expiring || null} onChange={(expiring) => filters.set({ expiring })} />
          <div>
            <Text size="sm" fw={500} mb={2} id="status-filter-label">
              Status
            </Text>
            <SegmentedControl
              aria-labelledby="status-filter-label"
              data={STATUS_OPTIONS}
              value={values.status}
              onChange={(status) => filters.set({ status })}
              // Five statuses do not fit a phone's width side by side.
              orientation={narrow ? 'vertical' : 'horizontal'}
              fullWidth={narrow}
            />
          </div>
          {filtered && (
            <Button variant="subtle" onClick={clearAll}>
              Clear filters
            </Button>
          )}
        </Group>
        <Group mt="sm">
          <BulkActions
            filter={filter}
            selectedIds={selectedIds}
            canManage={canManage}
            onFinished={() => {
              setSelectedIds([]);
              reload({ requestPolicy: 'network-only' });
            }}
          />
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
            <LicensesTable
              licenses={data.licenses.nodes}
              onOpen={(id) => navigate(licensePath(id))}
              fetching={result.fetching}
              paging={{ connection: data.licenses, onLoadMore: pages.loadMore }}
              selectedIds={canManage ? selectedIds : undefined}
              onSelect={setSelectedIds}
            />
          )}
        </QueryState>
      </Paper>
    </>
  );
}
