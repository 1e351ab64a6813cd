import { queryFromInfo } from '@pothos/plugin-prisma';
import { builder } from '../builder.js';
import { arrayConnection, orNull } from '../connections.js';
import { serviceCtx } from '../context.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { createProduct, deleteProduct, getProduct, listProducts, updateProduct, type PRODUCT_INCLUDE } from '../../services/products.js';

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
type ProductShape = Prisma.ProductGetPayload<{ include: typeof PRODUCT_INCLUDE }>;

/** A product named from another record (a license's product, a bundle's members). */
export const ProductRefType = builder.prismaObject('Product', {
  variant: 'ProductRef',
  fields: (t) => ({ id: t.exposeID('id'), name: t.exposeString('name') }),
});

const ProductType = builder.prismaObject('Product', {
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    isBundle: t.exposeBoolean('isBundle'),
    licenseFileTtlDays: t.exposeInt('licenseFileTtlDays', { description: "Days a signed license file of the product stays valid after it is issued (never past the license's expiry)." }),
    allowImportedKeys: t.exposeBoolean('allowImportedKeys', { description: IMPORTED_KEYS_DESCRIPTION }),
    bundleMembers: t.field({
      type: [ProductRefType],
      description: 'Member products of a bundle, by name.',
      select: (_args, _ctx, nestedSelection) => ({ bundleMembers: { select: { product: nestedSelection(true) }, orderBy: { product: { name: 'asc' } } } }),
      resolve: (product) => product.bundleMembers.map((item) => item.product),
    }),
    // Every service that answers a product sets _count.licenses (the list from the license_tallies rollup, which a
    // planned count of a big tenant's licenses per product would not use).
    licenseCount: t.int({ description: 'Licenses of this product: a product with licenses cannot be deleted.', resolve: (product) => (product as ProductShape)._count.licenses }),
    renewalUrl: t.exposeString('renewalUrl', { nullable: true, description: 'Where a customer renews this product (the portal’s Renew button); null: the company’s renewal address.' }),
    deviceFreeLimit: t.exposeInt('deviceFreeLimit', { nullable: true, description: 'Devices a customer may free in the customer portal per deviceFreeWindowDays days; null: none.' }),
    deviceFreeWindowDays: t.exposeInt('deviceFreeWindowDays', { description: 'The window deviceFreeLimit counts over, in days (1–365).' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

builder.queryFields((t) => ({
  products: t.connection(
    {
      type: ProductType,
      description: 'All products of your company, by name. first/last: 0–100 (default 100).',
      resolve: async (_root, args, ctx, info) => arrayConnection(args, await listProducts(serviceCtx(ctx), queryFromInfo({ context: ctx, info, paths: [['nodes'], ['edges', 'node']], typeName: 'Product' }))),
    },
    { name: 'ProductConnection' },
    { name: 'ProductEdge' },
  ),
  product: t.field({
    type: ProductType,
    nullable: true,
    description: 'Null when there is no such product in your company.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx, info) => orNull(getProduct(serviceCtx(ctx), String(args.id), queryFromInfo({ context: ctx, info, typeName: 'Product' }))),
  }),
}));

const bundleFields = (t: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>) => ({
  bundleOf: t.stringList({ description: 'Member products by name.' }),
  bundleMemberIds: t.idList({ description: 'Member products by id.' }),
  renewalUrl: t.string({ description: 'Where a customer renews this product (http or https); empty: the company’s renewal address.' }),
  allowImportedKeys: t.boolean({ description: `${IMPORTED_KEYS_DESCRIPTION} Default false.` }),
  deviceFreeLimit: t.int({ description: 'Devices a customer may free in the customer portal per window (0–1000); null: none.' }),
  deviceFreeWindowDays: t.int({ description: 'The window of deviceFreeLimit in days (1–365, default 30).' }),
});
const IMPORTED_KEYS_DESCRIPTION =
  "Licenses may be created (createLicense's key, the CSV import) with a key the vendor issued elsewhere, in any format: 8–256 printable ASCII characters without white space, kept exactly. Keyforge keys are accepted either way; turning it off keeps existing keys working.";
const licenseFileTtlField = (t: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>) =>
  t.int({ description: 'Days a signed license file of the product stays valid (1–3650; default 30).' });
const CreateProductInput = builder.inputType('CreateProductInput', {
  description: 'With bundleOf and/or bundleMemberIds, the product is a bundle of those products.',
  fields: (t) => ({ name: t.string({ required: true }), ...bundleFields(t), licenseFileTtlDays: licenseFileTtlField(t) }),
});
const UpdateProductInput = builder.inputType('UpdateProductInput', {
  description: 'Omitted fields stay unchanged; an empty member list makes the product a plain one.',
  fields: (t) => ({ id: t.id({ required: true }), name: t.string(), ...bundleFields(t), licenseFileTtlDays: licenseFileTtlField(t) }),
});
const DeleteProductInput = builder.inputType('DeleteProductInput', { fields: (t) => ({ id: t.id({ required: true }) }) });

const productPayload = (name: string) =>
  builder.objectRef<ProductShape>(name).implement({ fields: (t) => ({ product: t.field({ type: ProductType, resolve: (product) => product }) }) });
const CreateProductPayload = productPayload('CreateProductPayload');
const UpdateProductPayload = productPayload('UpdateProductPayload');
const DeleteProductPayload = builder.objectRef<{ id: string }>('DeleteProductPayload').implement({
  fields: (t) => ({ deletedProductId: t.exposeID('id') }),
});

const members = (args: {
  bundleOf?: string[] | null;
  bundleMemberIds?: (string | number)[] | null;
  renewalUrl?: string | null;
  deviceFreeLimit?: number | null;
  deviceFreeWindowDays?: number | null;
  allowImportedKeys?: boolean | null;
}) => ({
  allowImportedKeys: args.allowImportedKeys ?? undefined,
  bundleOf: args.bundleOf ?? undefined,
  bundleMemberIds: args.bundleMemberIds?.map(String),
  renewalUrl: args.renewalUrl,
  deviceFreeLimit: args.deviceFreeLimit,
  deviceFreeWindowDays: args.deviceFreeWindowDays ?? undefined,
});

builder.mutationFields((t) => ({
  createProduct: t.field({
    type: CreateProductPayload,
    args: { input: t.arg({ type: CreateProductInput, required: true }) },
    resolve: (_root, { input }, ctx) => createProduct(serviceCtx(ctx), { name: input.name, ...members(input), licenseFileTtlDays: input.licenseFileTtlDays ?? undefined }),
  }),
  updateProduct: t.field({
    type: UpdateProductPayload,
    description: 'Renames and/or replaces the bundle members.',
    args: { input: t.arg({ type: UpdateProductInput, required: true }) },
    resolve: (_root, { input }, ctx) => updateProduct(serviceCtx(ctx), String(input.id), { name: input.name ?? undefined, ...members(input), licenseFileTtlDays: input.licenseFileTtlDays ?? undefined }),
  }),
  deleteProduct: t.field({
    type: DeleteProductPayload,
    description: 'Deletes a product that no license uses and no bundle contains (Conflict otherwise).',
    args: { input: t.arg({ type: DeleteProductInput, required: true }) },
    resolve: async (_root, { input }, ctx) => ({ id: await deleteProduct(serviceCtx(ctx), String(input.id)) }),
  }),
}));
