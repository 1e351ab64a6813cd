import { z } from 'zod';
import { AppError } from '../domain/errors.js';
import type { Prisma } from '../generated/prisma/client.js';
import { diffChanges, recordAudit } from './audit/audit-log.js';
import { auditActor, requireAdmin, requireMember } from './auth/actor.js';
import type { ServiceContext } from './context.js';
import { isUuid } from './listing.js';
import { isUniqueViolation, parseInput } from './validation.js';
import { CustomerContactSchema } from './company.js';

/**
 * What the customer portal offers for a product: where to renew it (null: the company's renewal address), and how
 * many devices a customer may free per window of days (null: none; the portal then only lists devices).
 */
export const ProductPortalSchema = z.object({
  renewalUrl: CustomerContactSchema.shape.renewalUrl,
  deviceFreeLimit: z.number().int().min(0).max(1000).nullish(),
  deviceFreeWindowDays: z.number().int().min(1).max(365).optional(),
});
const portalFields = (data: z.output<typeof ProductPortalSchema>) => ({ renewalUrl: data.renewalUrl, deviceFreeLimit: data.deviceFreeLimit, deviceFreeWindowDays: data.deviceFreeWindowDays });

export const ProductInputSchema = z.object({
  name: z.string().trim().min(1).max(200),
  /** Names of member products: makes this product a bundle of them. */
  bundleOf: z.array(z.string().trim().min(1)).max(100).optional(),
  /** Ids of member products (the same, by id; both lists may be given). */
  bundleMemberIds: z.array(z.string().trim()).max(100).optional(),
  /** Days a signed license file of the product stays valid after it is issued (never past the license's expiry). */
  licenseFileTtlDays: z.number().int().min(1).max(3650).optional(),
  /**
   * Licenses may be created with a key the vendor issued elsewhere, in its own format (crypto/license-key.ts
   * `canonicalLicenseKey`); Keyforge-format keys are accepted either way. Turning it off later keeps existing keys working.
   */
  allowImportedKeys: z.boolean().optional(),
  ...ProductPortalSchema.shape,
});

type Tx = Prisma.TransactionClient;

/** What the API shows of a product: its bundle members (by name) and how many licenses use it. */
export const PRODUCT_INCLUDE = {
  bundleMembers: { include: { product: { select: { id: true, name: true } } }, orderBy: { product: { name: 'asc' } } },
  _count: { select: { licenses: true } },
} as const satisfies Prisma.ProductInclude;

const memberNames = (members: { name: string }[]) => members.map((member) => member.name).sort();
const bundleNames = (product: { bundleMembers: { product: { name: string } }[] }) => memberNames(product.bundleMembers.map((item) => item.product));

/** Bundle members by id and by name, within the tenant. Unknown ones answer NotFound; a bundle cannot hold a bundle. */
async function resolveMembers(db: Tx, tenantId: string, input: { bundleOf?: string[]; bundleMemberIds?: string[] }, selfId?: string) {
  const names = [...new Set(input.bundleOf ?? [])];
  const ids = [...new Set(input.bundleMemberIds ?? [])];
  if (!names.length && !ids.length) return [];
  const members = await db.product.findMany({
    where: { tenantId, OR: [{ name: { in: names } }, { id: { in: ids.filter(isUuid) } }] },
    select: { id: true, name: true, isBundle: true },
  });
  const missing = [...names.filter((name) => !members.some((m) => m.name === name)), ...ids.filter((id) => !members.some((m) => m.id === id))];
  if (missing.length) throw new AppError('NotFound', `Bundle member product(s) not found: ${missing.join(', ')}.`, { fields: { bundleOf: 'unknown product' } });
  if (members.some((member) => member.isBundle)) throw new AppError('InvalidRequest', 'A bundle cannot contain another bundle.', { fields: { bundleOf: 'bundle in bundle' } });
  if (selfId && members.some((member) => member.id === selfId)) throw new AppError('InvalidRequest', 'A bundle cannot contain itself.', { fields: { bundleOf: 'itself' } });
  return members;
}

/** A product name is unique per company: the error names the field, so a form shows it on the name input. */
const duplicateName = (name: string) =>
  new AppError('Conflict', `A product named "${name}" already exists.`, { fields: { name: 'Another product already has this name.' } });

/**
 * Creates a product of the caller's tenant (CompanyAdmin); with `bundleOf`/`bundleMemberIds`, a bundle of existing
 * products of the same tenant. Audited (CreateProduct).
 */
export async function createProduct(ctx: ServiceContext, input: z.input<typeof ProductInputSchema>) {
  const { tenantId } = requireAdmin(ctx);
  const { db, now } = ctx;
  const data = parseInput(ProductInputSchema, input);
  const members = await resolveMembers(db.prisma, tenantId, data);
  try {
    return await db.prisma.$transaction(async (tx) => {
      const product = await tx.product.create({
        data: { tenantId, name: data.name, ...portalFields(data), isBundle: members.length > 0, licenseFileTtlDays: data.licenseFileTtlDays, allowImportedKeys: data.allowImportedKeys, createdAt: now, bundleMembers: { create: members.map((member) => ({ productId: member.id })) } },
        include: PRODUCT_INCLUDE,
      });
      const details = { name: product.name, isBundle: product.isBundle, bundleOf: memberNames(members), ...portalFields(data), ...(product.allowImportedKeys && { allowImportedKeys: true }) };
      await recordAudit(tx, { tenantId, action: 'CreateProduct', entityType: 'Product', entityId: product.id, entity: product.name, details }, auditActor(ctx), now);
      return product;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateName(data.name);
    throw error;
  }
}

export async function getProductByName(ctx: ServiceContext, name: string) {
  const tenantId = requireMember(ctx);
  const product = await ctx.db.prisma.product.findUnique({ where: { tenantId_name: { tenantId, name } } });
  if (!product) throw new AppError('NotFound', `No product named "${name}".`);
  return product;
}

// ─── Management API (tenant-scoped: another tenant's product answers NotFound) ──────────────────────

/** Relations a caller wants loaded with the product rows, in the same query (the GraphQL layer's planned selection). */
export interface ProductQuery {
  include?: Prisma.ProductInclude;
}
/** PRODUCT_INCLUDE (or `base`) with the caller's relations besides; the rows are typed as `base` gives them. */
const productInclude = <I extends Prisma.ProductInclude>(base: I, query: ProductQuery = {}) => ({ ...query.include, ...base }) as I;

async function findTenantProduct({ db }: Pick<ServiceContext, 'db'>, tenantId: string, id: string, query?: ProductQuery) {
  const product = isUuid(id) ? await db.prisma.product.findFirst({ where: { id, tenantId }, include: productInclude(PRODUCT_INCLUDE, query) }) : null;
  if (!product) throw new AppError('NotFound', 'Product not found.');
  return product;
}

/**
 * All products of the tenant, by name. Their license counts come from the license_tallies rollup (kept by
 * triggers): counting a big tenant's licenses per product would read every one of them.
 */
export async function listProducts(ctx: ServiceContext, query?: ProductQuery) {
  const tenantId = requireMember(ctx);
  const [products, tallies] = await Promise.all([
    ctx.db.prisma.product.findMany({ where: { tenantId }, include: productInclude({ bundleMembers: PRODUCT_INCLUDE.bundleMembers }, query), orderBy: { name: 'asc' } }),
    ctx.db.prisma.licenseTally.groupBy({ by: ['productId'], where: { tenantId }, _sum: { licenses: true } }),
  ]);
  const counts = new Map(tallies.map((tally) => [tally.productId, tally._sum.licenses ?? 0]));
  return products.map((product) => ({ ...product, _count: { licenses: counts.get(product.id) ?? 0 } }));
}

export async function getProduct(ctx: ServiceContext, id: string, query?: ProductQuery) {
  return findTenantProduct(ctx, requireMember(ctx), id, query);
}

/**
 * Renames a product and/or replaces its bundle members (an empty list makes it a plain product again).
 * Audited with a before/after diff; a change that changes nothing writes nothing.
 */
export async function updateProduct(ctx: ServiceContext, id: string, input: Partial<z.input<typeof ProductInputSchema>>) {
  const admin = requireAdmin(ctx);
  const data = parseInput(ProductInputSchema.partial(), input);
  const product = await findTenantProduct(ctx, admin.tenantId, id);
  const newMembers = data.bundleOf !== undefined || data.bundleMemberIds !== undefined ? await resolveMembers(ctx.db.prisma, admin.tenantId, data, product.id) : undefined;
  if (newMembers?.length && (await ctx.db.prisma.bundleItem.count({ where: { productId: product.id } }))) {
    throw new AppError('InvalidRequest', `"${product.name}" is part of a bundle, so it cannot become a bundle itself.`, { fields: { bundleOf: 'bundle in bundle' } });
  }
  const changesFrom = (stored: typeof product) =>
    diffChanges(
      { name: stored.name, bundleOf: bundleNames(stored), licenseFileTtlDays: stored.licenseFileTtlDays, allowImportedKeys: stored.allowImportedKeys, ...portalFields(stored) },
      { name: data.name, bundleOf: newMembers && memberNames(newMembers), licenseFileTtlDays: data.licenseFileTtlDays, allowImportedKeys: data.allowImportedKeys, ...portalFields(data) },
    );
  if (!changesFrom(product)) return product;
  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      // The row first, as deleteProduct takes it: the same edit sent twice at once waits here, then is measured
      // against what the first one stored, and is logged once.
      // FOR NO KEY UPDATE: the lock the update takes anyway; rows inserted that reference this one do not wait for it.
      await tx.$executeRaw`SELECT 1 FROM products WHERE id = ${product.id}::uuid FOR NO KEY UPDATE`;
      const stored = await tx.product.findUniqueOrThrow({ where: { id: product.id }, include: PRODUCT_INCLUDE });
      const changes = changesFrom(stored);
      if (!changes) return stored;
      const updated = await tx.product.update({
        where: { id: product.id },
        data: {
          name: data.name,
          licenseFileTtlDays: data.licenseFileTtlDays,
          allowImportedKeys: data.allowImportedKeys,
          ...portalFields(data),
          ...(newMembers && { isBundle: newMembers.length > 0, bundleMembers: { deleteMany: {}, create: newMembers.map((member) => ({ productId: member.id })) } }),
        },
        include: PRODUCT_INCLUDE,
      });
      await recordAudit(tx, { tenantId: admin.tenantId, action: 'UpdateProduct', entityType: 'Product', entityId: product.id, entity: updated.name, details: changes }, auditActor(ctx), ctx.now);
      return updated;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateName(data.name ?? '');
    throw error;
  }
}

/** Deletes a product no license uses and no bundle contains (Conflict otherwise). Returns its id. */
export async function deleteProduct(ctx: ServiceContext, id: string) {
  const admin = requireAdmin(ctx);
  const product = await findTenantProduct(ctx, admin.tenantId, id);
  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      const licenses = await tx.license.count({ where: { productId: product.id } });
      if (licenses) throw new AppError('Conflict', `"${product.name}" is used by ${licenses} license(s): a product with licenses cannot be deleted.`);
      const bundles = await tx.bundleItem.findMany({ where: { productId: product.id }, select: { bundle: { select: { name: true } } } });
      if (bundles.length) throw new AppError('Conflict', `"${product.name}" is part of the bundle(s) ${memberNames(bundles.map((item) => item.bundle)).join(', ')}: remove it from them first.`);
      await tx.product.delete({ where: { id: product.id } });
      const details = { name: product.name, isBundle: product.isBundle, bundleOf: bundleNames(product) };
      await recordAudit(tx, { tenantId: admin.tenantId, action: 'DeleteProduct', entityType: 'Product', entityId: product.id, entity: product.name, details }, auditActor(ctx), ctx.now);
      return product.id;
    });
  } catch (error) {
    // A license created for it meanwhile: the database's foreign key refuses the delete.
    if ((error as { code?: string }).code === 'P2003') throw new AppError('Conflict', `"${product.name}" is used by licenses: a product with licenses cannot be deleted.`);
    throw error;
  }
}
