import { Button, Group, Paper } from '@mantine/core';
import { IconPlus } from '@tabler/icons-react';
import { useState } from 'react';
import { useQuery } from 'urql';
import { readFragment } from '../../../graphql';
import { ConfirmAction } from '../../../ui/ConfirmAction';
import { PageHeader } from '../../../ui/PageHeader';
import { EmptyState, QueryState } from '../../../ui/QueryState';
import { useApiMutation } from '../../../ui/useApiMutation';
import { useOpenFromLink } from '../../../ui/useOpenFromLink';
import { useCanManage } from '../../auth/hooks/useCurrentUser';
import { ProductFormModal } from '../components/ProductFormModal';
import { PlansSection } from '../../plans/components/PlansSection';
import { ProductFields, ProductsTable, type Product } from '../components/ProductsTable';
import { DeleteProductMutation, ProductsQuery } from '../graphql/documents';

export function ProductsPage() {
  const [result, reload] = useQuery({ query: ProductsQuery });
  const [editing, setEditing] = useState<Product | 'new' | null>(null);
  const canManage = useCanManage();
  const products = readFragment(ProductFields, result.data?.products.nodes ?? []);
  useOpenFromLink(() => canManage && setEditing('new'));

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
            <ProductsTable products={data.products.nodes} renderActions={(product) => canManage && <ProductActions product={product} onEdit={() => setEditing(product)} />} />
          )}
        </QueryState>
      </Paper>
      <PlansSection products={products} canManage={canManage} />
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
