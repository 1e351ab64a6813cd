import { z } from 'zod';
import { AppError } from '../domain/errors.js';
import { diffChanges, lockTenantAudit, recordAudit } from './audit/audit-log.js';
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

/** Paths under /portal that a handle cannot take (the portal's own endpoints and assets). */
const RESERVED_HANDLES = new Set(['graphql', 'assets', 'api', 'admin', 'static']);

/**
 * The customer portal (docs/guide/customer-portal.md): its handle (`/portal/<handle>`; empty turns the portal off),
 * a logo shown in its header (https only: the portal is served over the vendor's own origin and a mixed-content
 * image would not load) and an accent colour (#rrggbb).
 */
export const PortalSettingsSchema = z.object({
  portalHandle: z
    .string()
    .trim()
    .toLowerCase()
    .max(40)
    .transform((value) => value || null)
    .refine((value) => value === null || /^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/.test(value), 'must be 1–40 lower-case letters, digits or hyphens, not starting or ending with a hyphen')
    .refine((value) => value === null || !RESERVED_HANDLES.has(value), 'is reserved: choose another handle')
    .nullish(),
  portalLogoUrl: z
    .string()
    .trim()
    .max(2000)
    .transform((value) => value || null)
    .refine((value) => value === null || /^https:\/\/[^\s"'<>]+$/i.test(value), 'must be an https:// address')
    .nullish(),
  portalAccentColor: z
    .string()
    .trim()
    .toLowerCase()
    .transform((value) => value || null)
    .refine((value) => value === null || /^#[0-9a-f]{6}$/.test(value), 'must be a colour as #rrggbb')
    .nullish(),
});

const handleTaken = (handle: string | null | undefined) =>
  new AppError('Conflict', `The portal handle ${handle ?? ''} is taken by another company.`, { fields: { portalHandle: 'Another company uses this handle.' } });

type CompanySettingsInput = {
  name?: string;
  keyPrefix?: string;
  renewalUrl?: string | null;
  supportEmail?: string | null;
  portalHandle?: string | null;
  portalLogoUrl?: string | null;
  portalAccentColor?: string | null;
};

/**
 * Company name (brands customer emails), the key prefix of new keys (existing keys keep theirs), and the renewal
 * address and support email that customers' expiry emails show.
 */
export async function updateCompanySettings(ctx: ServiceContext, input: CompanySettingsInput) {
  const admin = requireAdmin(ctx);
  const data = parseInput(TenantInputSchema.pick({ name: true, keyPrefix: true }).partial().merge(CustomerContactSchema).merge(PortalSettingsSchema), input);
  const tenant = await ctx.db.prisma.tenant.findUniqueOrThrow({ where: { id: admin.tenantId } });
  const changesFrom = (stored: typeof tenant) =>
    diffChanges(
      {
        name: stored.name,
        keyPrefix: stored.keyPrefix,
        renewalUrl: stored.renewalUrl,
        supportEmail: stored.supportEmail,
        portalHandle: stored.portalHandle,
        portalLogoUrl: stored.portalLogoUrl,
        portalAccentColor: stored.portalAccentColor,
      },
      data,
    );
  if (!changesFrom(tenant)) return tenant;
  if (data.portalHandle && data.portalHandle !== tenant.portalHandle && (await ctx.db.prisma.tenant.count({ where: { portalHandle: data.portalHandle } }))) throw handleTaken(data.portalHandle);
  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      // The activity log's lock first, as every audited writer. The key prefix's and portal handle's unique indexes
      // are partial (migration tenant_unique_partial), so changing them does not lock the company's row against the
      // inserts that reference it: a writer that inserts first and takes the log's lock after does not wait for this.
      await lockTenantAudit(tx, tenant.id);
      // Under that lock no other settings change is under way: measured against the row as stored now, the same
      // change sent twice at once is logged once.
      const stored = await tx.tenant.findUniqueOrThrow({ where: { id: tenant.id } });
      const changes = changesFrom(stored);
      if (!changes) return stored;
      const updated = await tx.tenant.update({ where: { id: tenant.id }, data });
      await recordAudit(tx, { tenantId: tenant.id, action: 'UpdateCompanySettings', entityType: 'Tenant', entityId: tenant.id, entity: updated.name, details: changes }, auditActor(ctx), ctx.now);
      return updated;
    });
  } catch (error) {
    // Two unique columns: a key prefix that did not change cannot be the one refused.
    if (isUniqueViolation(error) && (!data.keyPrefix || data.keyPrefix === tenant.keyPrefix)) throw handleTaken(data.portalHandle);
    if (isUniqueViolation(error)) throw new AppError('Conflict', `The key prefix ${data.keyPrefix} is already used by another company.`);
    throw error;
  }
}
