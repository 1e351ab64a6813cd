import { AppError } from '../domain/errors.js';
import { diffChanges, recordAudit } from './audit/audit-log.js';
import { auditActor, requireActor, requireAdmin, type Actor, type RequestMeta } from './auth/actor.js';
import type { ServiceContext } from './context.js';
import { TenantInputSchema } from './tenants.js';
import { isUniqueViolation, parseInput } from './validation.js';

type Ctx = Pick<ServiceContext, 'db' | 'now'>;

export async function getCompany(ctx: Ctx, actor: Actor | null) {
  return ctx.db.prisma.tenant.findUniqueOrThrow({ where: { id: requireActor(actor).tenantId } });
}

/** Company name (brands customer emails) and the key prefix of new keys (existing keys keep theirs). */
export async function updateCompanySettings(ctx: Ctx, actor: Actor | null, input: { name?: string; keyPrefix?: string }, meta: RequestMeta) {
  const admin = requireAdmin(actor);
  const data = parseInput(TenantInputSchema.pick({ name: true, keyPrefix: true }).partial(), input);
  const tenant = await ctx.db.prisma.tenant.findUniqueOrThrow({ where: { id: admin.tenantId } });
  const changes = diffChanges({ name: tenant.name, keyPrefix: tenant.keyPrefix }, data);
  if (!changes) return tenant;
  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      const updated = await tx.tenant.update({ where: { id: tenant.id }, data });
      await recordAudit(tx, { tenantId: tenant.id, action: 'UpdateCompanySettings', entityType: 'Tenant', entityId: tenant.id, entity: updated.name, details: changes }, auditActor(admin, meta), ctx.now);
      return updated;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('Conflict', `The key prefix ${data.keyPrefix} is already used by another company.`);
    throw error;
  }
}
