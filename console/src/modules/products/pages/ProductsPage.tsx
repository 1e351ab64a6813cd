import { Anchor, Badge, Button, Group, Paper, Table, Text } from '@mantine/core';
import { IconPlus } from '@tabler/icons-react';
import { useState } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import type { FragmentOf } from '../../../graphql';
import { formatDate } from '../../../lib/format';
import { compactId } from '../../../lib/ids';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { ProductFormModal } from '../components/ProductFormModal';
import { DeleteProductMutation, ProductsQuery, type ProductFields } from '../graphql/documents';
import { refetchOn } from '../../../lib/client';
import { ResponsiveTable } from '../../../ui/ResponsiveTable';

type Product = FragmentOf<typeof ProductFields>;

export function ProductsPage() {
  const [result, reload] = useQuery({ query: ProductsQuery, context: refetchOn('Product') });
  const [editing, setEditing] = useState<Product | 'new' | null>(null);
  const canManage = useCanManage();
  const products = result.data?.products.nodes ?? [];

  return (
    <>
      <PageHeader
        title="Products"
        description="What you license. A bundle groups products: its licenses unlock every member."
        actions={
          <Button leftSection={<IconPlus size={16} />} onClick={() => setEditing('new')} disabled={!canManage}>
            New product
          </Button>
        }
      />
      <ProductFormModal opened={editing !== null} onClose={() => setEditing(null)} product={editing && editing !== 'new' ? editing : undefined} products={products} />
      <Paper>
        <QueryState
          result={result}
          onRetry={() => reload({ requestPolicy: 'network-only' })}
          isEmpty={(data) => data.products.nodes.length === 0}
          empty={
            <EmptyState title="No products yet" action={canManage && <Button onClick={() => setEditing('new')}>Create your first product</Button>}>
              Create a product, then issue licenses for it.
            </EmptyState>
          }
        >
          {(data) => (
            <ResponsiveTable minWidth={680}>
              <Table>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Name</Table.Th>
                    <Table.Th>Type</Table.Th>
                    <Table.Th ta="right">Licenses</Table.Th>
                    <Table.Th>Created</Table.Th>
                    <Table.Th aria-label="Actions" />
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {data.products.nodes.map((product) => (
                    <ProductRow key={product.id} product={product} canManage={canManage} onEdit={() => setEditing(product)} />
                  ))}
                </Table.Tbody>
              </Table>
            </ResponsiveTable>
          )}
        </QueryState>
      </Paper>
    </>
  );
}

function ProductRow({ product, canManage, onEdit }: { product: Product; canManage: boolean; onEdit: () => void }) {
  const remove = useApiMutation(DeleteProductMutation, { success: `${product.name} was deleted.`, invalidates: ['Product'] });
  return (
    <Table.Tr data-testid="product-row">
      <Table.Td>
        <Text size="sm" fw={500}>
          {product.name}
        </Text>
        {product.isBundle && (
          <Text size="xs" c="dimmed">
            {product.bundleMembers.map((member) => member.name).join(', ')}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        <Badge variant="light" color={product.isBundle ? 'grape' : 'gray'}>
          {product.isBundle ? 'Bundle' : 'Product'}
        </Badge>
      </Table.Td>
      <Table.Td ta="right">
        <Anchor component={Link} to={`/licenses?product=${compactId(product.id)}`} size="sm">
          {product.licenseCount}
        </Anchor>
      </Table.Td>
      <Table.Td>{formatDate(product.createdAt)}</Table.Td>
      <Table.Td>
        {canManage && (
          <Group gap="xs" justify="flex-end" wrap="nowrap">
            <Button size="xs" variant="default" onClick={onEdit}>
              Edit
            </Button>
            <ConfirmAction
              size="xs"
              label="Delete"
              message="This cannot be undone. Only a product without licenses, and not part of a bundle, can be deleted."
              confirmLabel="Delete product"
              busy={remove.saving}
              disabledReason={product.licenseCount > 0 ? `${product.licenseCount === 1 ? '1 license uses' : `${product.licenseCount} licenses use`} this product: only a product without licenses can be deleted.` : null}
              title={`Delete ${product.name}?`}
              onConfirm={() => remove.run({ id: product.id })}
            />
          </Group>
        )}
      </Table.Td>
    </Table.Tr>
  );
}
