import { z } from 'zod';
import { AppError } from '../domain/errors.js';
import type { ServiceContext } from './context.js';
import { isUniqueViolation, parseInput } from './validation.js';

export const ProductInputSchema = z.object({
  name: z.string().trim().min(1).max(200),
  /** Names of member products: makes this product a bundle of them. */
  bundleOf: z.array(z.string().trim().min(1)).optional(),
});

type Ctx = Pick<ServiceContext, 'db' | 'now'>;

/** Creates a product of the tenant; with `bundleOf`, a bundle of existing products of the same tenant. */
export async function createProduct({ db }: Ctx, tenantId: string, input: z.input<typeof ProductInputSchema>) {
  const data = parseInput(ProductInputSchema, input);
  const memberNames = [...new Set(data.bundleOf ?? [])];
  const members = memberNames.length
    ? await db.prisma.product.findMany({ where: { tenantId, name: { in: memberNames } }, select: { id: true, name: true, isBundle: true } })
    : [];
  const missing = memberNames.filter((name) => !members.some((member) => member.name === name));
  if (missing.length) throw new AppError('InvalidRequest', `Unknown bundle member product(s): ${missing.join(', ')}.`, { fields: { bundleOf: 'unknown product' } });
  if (members.some((member) => member.isBundle)) throw new AppError('InvalidRequest', 'A bundle cannot contain another bundle.', { fields: { bundleOf: 'bundle in bundle' } });
  try {
    return await db.prisma.product.create({
      data: {
        tenantId,
        name: data.name,
        isBundle: members.length > 0,
        bundleMembers: { create: members.map((member) => ({ productId: member.id })) },
      },
      include: { bundleMembers: { include: { product: { select: { name: true } } } } },
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('Conflict', `A product named "${data.name}" already exists.`);
    throw error;
  }
}

export async function getProductByName({ db }: Ctx, tenantId: string, name: string) {
  const product = await db.prisma.product.findUnique({ where: { tenantId_name: { tenantId, name } } });
  if (!product) throw new AppError('NotFound', `No product named "${name}".`);
  return product;
}
