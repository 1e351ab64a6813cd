import { graphql } from '../../../graphql';
import { ProductFields } from '../components/ProductsTable';

export const ProductsQuery = graphql(
  `
    query Products {
      products {
        nodes {
          ...ProductFields
        }
      }
    }
  `,
  [ProductFields],
);

export const CreateProductMutation = graphql(
  `
    mutation CreateProduct($name: String!, $bundleMemberIds: [ID!], $renewalUrl: String, $deviceFreeLimit: Int, $deviceFreeWindowDays: Int, $allowImportedKeys: Boolean) {
      createProduct(
        input: {
          name: $name
          bundleMemberIds: $bundleMemberIds
          renewalUrl: $renewalUrl
          deviceFreeLimit: $deviceFreeLimit
          deviceFreeWindowDays: $deviceFreeWindowDays
          allowImportedKeys: $allowImportedKeys
        }
      ) {
        product {
          ...ProductFields
        }
      }
    }
  `,
  [ProductFields],
);

export const UpdateProductMutation = graphql(
  `
    mutation UpdateProduct($id: ID!, $name: String, $bundleMemberIds: [ID!], $renewalUrl: String, $deviceFreeLimit: Int, $deviceFreeWindowDays: Int, $allowImportedKeys: Boolean) {
      updateProduct(
        input: {
          id: $id
          name: $name
          bundleMemberIds: $bundleMemberIds
          renewalUrl: $renewalUrl
          deviceFreeLimit: $deviceFreeLimit
          deviceFreeWindowDays: $deviceFreeWindowDays
          allowImportedKeys: $allowImportedKeys
        }
      ) {
        product {
          ...ProductFields
        }
      }
    }
  `,
  [ProductFields],
);

export const DeleteProductMutation = graphql(`
  mutation DeleteProduct($id: ID!) {
    deleteProduct(input: { id: $id }) {
      deletedProductId
    }
  }
`);
