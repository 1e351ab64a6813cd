import { z } from 'zod';
import { KEY_PREFIX_PATTERN } from '../crypto/license-key.js';
import { AppError } from '../domain/errors.js';
import { requireOperator } from './auth/actor.js';
import type { ServiceContext } from './context.js';
import { isUniqueViolation, parseInput, StorableDate } from './validation.js';

export const TenantInputSchema = z.object({
  name: z.string().trim().min(1).max(200),
  keyPrefix: z
    .string()
    .trim()
    .toUpperCase()
    .regex(KEY_PREFIX_PATTERN, 'must be 2–12 letters or digits, starting with a letter (for example ACME)'),
  subscriptionEndsAt: StorableDate.nullable().optional(),
});

// Tenants are made and looked up by the server's operator (the CLI), never through the management API.


export async function createTenant(ctx: ServiceContext, input: z.input<typeof TenantInputSchema>) {
  requireOperator(ctx);
  const { db } = ctx;
  const data = parseInput(TenantInputSchema, input);
  try {
    return await db.prisma.tenant.create({ data });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('Conflict', `The key prefix ${data.keyPrefix} is already used by another tenant.`);
    throw error;
  }
}

export async function getTenantByPrefix(ctx: ServiceContext, keyPrefix: string) {
  requireOperator(ctx);
  const { db } = ctx;
  const tenant = await db.prisma.tenant.findUnique({ where: { keyPrefix: keyPrefix.trim().toUpperCase() } });
  if (!tenant) throw new AppError('NotFound', `No tenant with key prefix ${keyPrefix}.`);
  return tenant;
}
