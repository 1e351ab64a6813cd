import { builder } from '../builder.js';
import { serviceCtx } from '../context.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { createProduct, deleteProduct, getProduct, listProducts, updateProduct, type PRODUCT_INCLUDE } from '../../services/products.js';

type ProductShape = Prisma.ProductGetPayload<{ include: typeof PRODUCT_INCLUDE }>;

export const ProductRefType = builder.objectRef<{ id: string; name: string }>('ProductRef').implement({
  fields: (t) => ({ id: t.exposeID('id'), name: t.exposeString('name') }),
});

const ProductType = builder.objectRef<ProductShape>('Product').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    isBundle: t.exposeBoolean('isBundle'),
    bundleMembers: t.field({ type: [ProductRefType], description: 'Member products of a bundle, by name.', resolve: (product) => product.bundleMembers.map((item) => item.product) }),
    licenseCount: t.int({ description: 'Licenses of this product: a product with licenses cannot be deleted.', resolve: (product) => product._count.licenses }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

builder.queryFields((t) => ({
  products: t.field({ type: [ProductType], description: 'All products of your company, by name.', resolve: (_root, _args, ctx) => listProducts(serviceCtx(ctx)) }),
  product: t.field({
    type: ProductType,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => getProduct(serviceCtx(ctx), String(args.id)),
  }),
}));

const members = (args: { bundleOf?: string[] | null; bundleMemberIds?: (string | number)[] | null }) => ({
  bundleOf: args.bundleOf ?? undefined,
  bundleMemberIds: args.bundleMemberIds?.map(String),
});

builder.mutationFields((t) => ({
  createProduct: t.field({
    type: ProductType,
    description: 'With bundleOf (names) and/or bundleMemberIds, the product is a bundle of those products.',
    args: { name: t.arg.string({ required: true }), bundleOf: t.arg.stringList(), bundleMemberIds: t.arg.idList() },
    resolve: (_root, args, ctx) => createProduct(serviceCtx(ctx), { name: args.name, ...members(args) }),
  }),
  updateProduct: t.field({
    type: ProductType,
    description: 'Renames and/or replaces the bundle members (an empty list makes it a plain product). Omitted arguments stay unchanged.',
    args: { id: t.arg.id({ required: true }), name: t.arg.string(), bundleOf: t.arg.stringList(), bundleMemberIds: t.arg.idList() },
    resolve: (_root, args, ctx) => updateProduct(serviceCtx(ctx), String(args.id), { name: args.name ?? undefined, ...members(args) }),
  }),
  deleteProduct: t.id({
    description: 'Deletes a product that no license uses and no bundle contains (Conflict otherwise); returns its id.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => deleteProduct(serviceCtx(ctx), String(args.id)),
  }),
}));
