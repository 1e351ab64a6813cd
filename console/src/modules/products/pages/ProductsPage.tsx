import { Anchor, Badge, Button, Group, Paper, Text } from '@mantine/core';
import { IconPlus } from '@tabler/icons-react';
import { useState } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import type { FragmentOf } from '../../../graphql';
import { formatDate } from '../../../lib/format';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { ProductFormModal } from '../components/ProductFormModal';
import { DeleteProductMutation, ProductsQuery, type ProductFields } from '../graphql/documents';
import { DataTable } from '../../../ui/DataTable';

type Product = FragmentOf<typeof ProductFields>;

export function ProductsPage() {
  const [result, reload] = useQuery({ query: ProductsQuery });
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
            <DataTable
              records={data.products.nodes}
              minWidth={680}
              rowTestId="product-row"
              columns={[
                {
                  accessor: 'name',
                  title: 'Name',
                  render: (product) => (
                    <div>
                      <Text size="sm" fw={500}>
                        {product.name}
                      </Text>
                      {product.isBundle && (
                        <Text size="xs" c="dimmed">
                          {product.bundleMembers.map((member) => member.name).join(', ')}
                        </Text>
                      )}
                    </div>
                  ),
                },
                {
                  accessor: 'isBundle',
                  title: 'Type',
                  render: (product) => (
                    <Badge variant="light" color={product.isBundle ? 'grape' : 'gray'}>
                      {product.isBundle ? 'Bundle' : 'Product'}
                    </Badge>
                  ),
                },
                {
                  accessor: 'licenseCount',
                  title: 'Licenses',
                  textAlign: 'right',
                  render: (product) => (
                    <Anchor component={Link} to={`/licenses?product=${product.id}`} size="sm">
                      {product.licenseCount}
                    </Anchor>
                  ),
                },
                { accessor: 'createdAt', title: 'Created', render: (product) => formatDate(product.createdAt) },
                { accessor: 'actions', title: '', render: (product) => canManage && <ProductActions product={product} onEdit={() => setEditing(product)} /> },
              ]}
            />
          )}
        </QueryState>
      </Paper>
    </>
  );
}

function ProductActions({ product, onEdit }: { product: Product; onEdit: () => void }) {
  const remove = useApiMutation(DeleteProductMutation, { success: `${product.name} was deleted.` });
  return (
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
  );
}
