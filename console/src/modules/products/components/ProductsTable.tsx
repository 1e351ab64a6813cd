import { Anchor, Badge, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { graphql, readFragment, type FragmentOf, type ResultOf } from '../../../graphql';
import { formatDate } from '../../../lib/format';
import { DataTable } from '../../../ui/DataTable';

/** What the products list (and the product dialog) shows of a product. */
export const ProductFields = graphql(`
  fragment ProductFields on Product {
    id
    name
    isBundle
    licenseCount
    createdAt
    renewalUrl
    deviceFreeLimit
    deviceFreeWindowDays
    allowImportedKeys
    bundleMembers {
      id
      name
    }
  }
`);

export type Product = ResultOf<typeof ProductFields>;

/** The products list; the page supplies each row's actions. */
export function ProductsTable({ products, renderActions }: { products: readonly FragmentOf<typeof ProductFields>[]; renderActions: (product: Product) => ReactNode }) {
  const records = readFragment(ProductFields, products);
  return (
    <DataTable
      records={records}
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
        {
          accessor: 'deviceFreeLimit',
          title: 'Portal frees',
          render: (product) =>
            product.deviceFreeLimit === null ? (
              <Text size="sm" c="dimmed">
                None
              </Text>
            ) : (
              `${product.deviceFreeLimit} per ${product.deviceFreeWindowDays} days`
            ),
        },
        { accessor: 'createdAt', title: 'Created', render: (product) => formatDate(product.createdAt) },
        {
          accessor: 'releases',
          title: 'Releases',
          render: (product) => (
            <Anchor component={Link} to={`/products/${product.id}/releases`} size="sm" aria-label={`Releases of ${product.name}`}>
              Releases
            </Anchor>
          ),
        },
        { accessor: 'actions', title: '', render: (product) => renderActions(product) },
      ]}
    />
  );
}
