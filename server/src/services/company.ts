import { z } from 'zod';
import { AppError } from '../domain/errors.js';
import { diffChanges, recordAudit } from './audit/audit-log.js';
import { auditActor, requireAdmin, requireMember } from './auth/actor.js';
import type { ServiceContext } from './context.js';
import { TenantInputSchema } from './tenants.js';
import { isUniqueViolation, parseInput } from './validation.js';


export async function getCompany(ctx: ServiceContext) {
  return ctx.db.prisma.tenant.findUniqueOrThrow({ where: { id: requireMember(ctx) } });
}

/** What customers see in their expiry emails: where to renew (http or https only) and whom to write to. Empty: none. */
export const CustomerContactSchema = z.object({
  renewalUrl: z
    .string()
    .trim()
    .max(2000)
    .transform((value) => value || null)
    .refine((value) => value === null || /^https?:\/\/[^\s]+$/i.test(value), 'must be an http:// or https:// address')
    .nullish(),
  supportEmail: z
    .string()
    .trim()
    .max(320)
    .transform((value) => value.toLowerCase() || null)
    .refine((value) => value === null || z.email().safeParse(value).success, 'must be an email address')
    .nullish(),
});

/**
 * Company name (brands customer emails), the key prefix of new keys (existing keys keep theirs), and the renewal
 * address and support email that customers' expiry emails show.
 */
export async function updateCompanySettings(ctx: ServiceContext, input: { name?: string; keyPrefix?: string; renewalUrl?: string | null; supportEmail?: string | null }) {
  const admin = requireAdmin(ctx);
  const data = parseInput(TenantInputSchema.pick({ name: true, keyPrefix: true }).partial().merge(CustomerContactSchema), input);
  const tenant = await ctx.db.prisma.tenant.findUniqueOrThrow({ where: { id: admin.tenantId } });
  const changes = diffChanges({ name: tenant.name, keyPrefix: tenant.keyPrefix, renewalUrl: tenant.renewalUrl, supportEmail: tenant.supportEmail }, data);
  if (!changes) return tenant;
  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      const updated = await tx.tenant.update({ where: { id: tenant.id }, data });
      await recordAudit(tx, { tenantId: tenant.id, action: 'UpdateCompanySettings', entityType: 'Tenant', entityId: tenant.id, entity: updated.name, details: changes }, auditActor(ctx), ctx.now);
      return updated;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('Conflict', `The key prefix ${data.keyPrefix} is already used by another company.`);
    throw error;
  }
}
