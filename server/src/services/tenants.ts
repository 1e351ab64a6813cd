import { z } from 'zod';
import { KEY_PREFIX_PATTERN } from '../crypto/license-key.js';
import { AppError } from '../domain/errors.js';
import type { ServiceContext } from './context.js';
import { isUniqueViolation, parseInput } from './validation.js';

export const TenantInputSchema = z.object({
  name: z.string().trim().min(1).max(200),
  keyPrefix: z
    .string()
    .trim()
    .toUpperCase()
    .regex(KEY_PREFIX_PATTERN, 'must be 2–12 letters or digits, starting with a letter (for example ACME)'),
  subscriptionEndsAt: z.coerce.date().nullable().optional(),
});

type Ctx = Pick<ServiceContext, 'db' | 'now'>;

export async function createTenant({ db }: Ctx, input: z.input<typeof TenantInputSchema>) {
  const data = parseInput(TenantInputSchema, input);
  try {
    return await db.prisma.tenant.create({ data });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('Conflict', `The key prefix ${data.keyPrefix} is already used by another tenant.`);
    throw error;
  }
}

export async function getTenantByPrefix({ db }: Ctx, keyPrefix: string) {
  const tenant = await db.prisma.tenant.findUnique({ where: { keyPrefix: keyPrefix.trim().toUpperCase() } });
  if (!tenant) throw new AppError('NotFound', `No tenant with key prefix ${keyPrefix}.`);
  return tenant;
}
