import { z } from 'zod';
import { AppError } from '../domain/errors.js';
import { addPeriod, formatPeriod, parsePeriod } from '../domain/period.js';
import { Prisma, type Plan } from '../generated/prisma/client.js';
import { diffChanges, recordAudit } from './audit/audit-log.js';
import { auditActor, requireAdmin, requireMember } from './auth/actor.js';
import type { ServiceContext } from './context.js';
import { LicenseAttributesObject, VERSION_ORDER, versionsInOrder, type LicenseInput } from './licenses/attributes.js';
import { isUuid } from './listing.js';
import { QuotaSchema } from './metering/management.js';
import { isUniqueViolation, parseInput } from './validation.js';

// License plans: what a sold license of a product gets. createLicense (and the CSV import, through it) copies a
// plan's values onto the new license, its dates computed from the plan's periods; the license keeps the plan's id.
// Editing a plan changes no license sold before; a plan that licenses name is archived rather than deleted.

/** An ISO 8601 period of whole years, months, weeks and days, stored in its canonical form (p1y6m → P1Y6M). */
const PeriodText = z
  .string()
  .trim()
  .max(30)
  .transform((text, check) => {
    const period = parsePeriod(text);
    if (period) return formatPeriod(period);
    check.addIssue({ code: 'custom', message: 'must be an ISO 8601 period of years, months, weeks or days (P1Y, P6M, P2W, P30D), at most 100 years' });
    return z.NEVER;
  });

export const MAX_PLAN_QUOTAS = 50;

/** A plan holds exactly the attributes of a license, with periods for its dates and no customer. */
const PlanObject = LicenseAttributesObject.omit({ expiresAt: true, maintenanceExpiresAt: true, customerEmail: true }).extend({
  name: z.string().trim().min(1).max(200),
  /** Null: perpetual. */
  duration: PeriodText.nullable().optional(),
  maintenancePeriod: PeriodText.nullable().optional(),
  quotas: z
    .array(QuotaSchema)
    .max(MAX_PLAN_QUOTAS)
    .refine((quotas) => new Set(quotas.map((quota) => quota.event)).size === quotas.length, 'must name each event once')
    .optional(),
});
const PlanSchema = PlanObject.refine(versionsInOrder, { message: VERSION_ORDER, path: ['minVersion'] });
/** Fields of a plan as callers send them (customFields any JSON: the schema decides). */
type PlanIn = z.input<typeof PlanObject>;
export type PlanInput = { [K in keyof PlanIn]?: (K extends 'customFields' | 'quotas' ? unknown : PlanIn[K]) | null };
const PLAN_FIELDS = Object.keys(PlanObject.shape) as (keyof typeof PlanObject.shape)[];

export type PlanQuota = z.output<typeof QuotaSchema>;
export type PlanWithCount = Plan & { licenseCount: number };

const duplicateName = (name: string) =>
  new AppError('Conflict', `This product has a plan named "${name}" already.`, { fields: { name: 'Another plan of this product has this name.' } });
const PLAN_NOT_FOUND = () => new AppError('NotFound', 'Plan not found.', { fields: { planId: 'not found' } });

/** A plan of the tenant (any other: NotFound, exactly like one that does not exist). */
export async function findTenantPlan(ctx: Pick<ServiceContext, 'db'>, tenantId: string, id: string) {
  const plan = isUuid(id) ? await ctx.db.prisma.plan.findFirst({ where: { id, tenantId }, include: { product: { select: { id: true, name: true } } } }) : null;
  if (!plan) throw PLAN_NOT_FOUND();
  return plan;
}

/** The licenses that name each plan (one grouped count over the (tenant_id, plan_id, …) index). */
async function withLicenseCounts<P extends Plan>(ctx: Pick<ServiceContext, 'db'>, tenantId: string, plans: P[]): Promise<(P & { licenseCount: number })[]> {
  if (!plans.length) return [];
  const counts = await ctx.db.prisma.license.groupBy({ by: ['planId'], where: { tenantId, planId: { in: plans.map((plan) => plan.id) } }, _count: { _all: true } });
  const byPlan = new Map(counts.map((row) => [row.planId, row._count._all]));
  return plans.map((plan) => ({ ...plan, licenseCount: byPlan.get(plan.id) ?? 0 }));
}

/** The stored shape of parsed plan fields (customFields null → SQL NULL, quotas as JSON). */
function planData(data: Partial<z.output<typeof PlanObject>>) {
  const { customFields, quotas, ...rest } = data;
  return {
    ...rest,
    ...(customFields !== undefined && { customFields: customFields === null ? Prisma.DbNull : customFields }),
    ...(quotas !== undefined && { quotas: quotas as Prisma.InputJsonArray }),
  };
}

const planDetails = (plan: Record<string, unknown>) => Object.fromEntries(PLAN_FIELDS.map((key) => [key, plan[key] ?? null]));

/** Creates a plan of one of the caller's products (CompanyAdmin). Names are unique per product. Audited (CreatePlan). */
export async function createPlan(ctx: ServiceContext, input: PlanInput & { productId: string }) {
  const { tenantId } = requireAdmin(ctx);
  const { productId, ...rest } = input;
  const data = parseInput(PlanSchema, rest);
  const product = isUuid(productId) ? await ctx.db.prisma.product.findFirst({ where: { id: productId, tenantId }, select: { id: true, name: true } }) : null;
  if (!product) throw new AppError('NotFound', 'Product not found.', { fields: { productId: 'not found' } });
  try {
    const plan = await ctx.db.prisma.$transaction(async (tx) => {
      const created = await tx.plan.create({ data: { ...planData(data), name: data.name, maxActivations: data.maxActivations, tenantId, productId: product.id, createdAt: ctx.now }, include: { product: { select: { id: true, name: true } } } });
      const details = { productId: product.id, productName: product.name, ...planDetails(data) };
      await recordAudit(tx, { tenantId, action: 'CreatePlan', entityType: 'Plan', entityId: created.id, entity: `${created.name} (${product.name})`, details }, auditActor(ctx), ctx.now);
      return created;
    });
    return { ...plan, licenseCount: 0 };
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateName(data.name);
    if ((error as { code?: string }).code === 'P2003') throw new AppError('NotFound', 'Product not found.', { fields: { productId: 'not found' } });
    throw error;
  }
}

export const PlanFilterSchema = z.object({
  productId: z.string().trim().nullish(),
  /** Archived plans are listed only when asked for. */
  includeArchived: z.boolean().nullish(),
});

/** The tenant's plans (of one product when given), by product then name; archived ones only with includeArchived. */
export async function listPlans(ctx: ServiceContext, filterInput: z.input<typeof PlanFilterSchema> = {}) {
  const tenantId = requireMember(ctx);
  const filter = parseInput(PlanFilterSchema, filterInput);
  if (filter.productId && !isUuid(filter.productId)) return [];
  const plans = await ctx.db.prisma.plan.findMany({
    where: { tenantId, ...(filter.productId && { productId: filter.productId }), ...(!filter.includeArchived && { archivedAt: null }) },
    include: { product: { select: { id: true, name: true } } },
    orderBy: [{ product: { name: 'asc' } }, { name: 'asc' }, { id: 'asc' }],
  });
  return withLicenseCounts(ctx, tenantId, plans);
}

export async function getPlan(ctx: ServiceContext, id: string) {
  const tenantId = requireMember(ctx);
  return (await withLicenseCounts(ctx, tenantId, [await findTenantPlan(ctx, tenantId, id)]))[0];
}

/**
 * Changes a plan (CompanyAdmin): omitted fields stay, null clears a nullable one; `archived` archives or restores
 * it. Licenses created from it before keep the values they were sold with. Audited (UpdatePlan, before/after).
 */
export async function updatePlan(ctx: ServiceContext, id: string, input: PlanInput & { archived?: boolean | null }) {
  const { tenantId } = requireAdmin(ctx);
  const { archived, ...rest } = input;
  if (archived !== undefined && archived !== null && typeof archived !== 'boolean') throw new AppError('InvalidRequest', 'Invalid input: archived: must be true or false', { fields: { archived: 'must be true or false' } });
  const data = parseInput(PlanObject.partial(), rest);
  const plan = await findTenantPlan(ctx, tenantId, id);
  if (!versionsInOrder({ minVersion: data.minVersion === undefined ? plan.minVersion : data.minVersion, maxVersion: data.maxVersion === undefined ? plan.maxVersion : data.maxVersion })) {
    throw new AppError('InvalidRequest', `Invalid input: minVersion: ${VERSION_ORDER}`, { fields: { minVersion: VERSION_ORDER } });
  }
  const changesFrom = (stored: typeof plan) => diffChanges({ ...planDetails(stored), archived: stored.archivedAt !== null }, { ...data, archived: archived ?? undefined });
  if (!changesFrom(plan)) return getPlan(ctx, plan.id);
  try {
    await ctx.db.prisma.$transaction(async (tx) => {
      // The row first, as deletePlan takes it: the same edit sent twice at once waits here, then is measured
      // against what the first one stored, and is logged once.
      // FOR NO KEY UPDATE: the lock the update takes anyway; rows inserted that reference this one do not wait for it.
      await tx.$executeRaw`SELECT 1 FROM plans WHERE id = ${plan.id}::uuid FOR NO KEY UPDATE`;
      const stored = await tx.plan.findUniqueOrThrow({ where: { id: plan.id }, include: { product: { select: { id: true, name: true } } } });
      const changes = changesFrom(stored);
      if (!changes) return;
      const archivedAt = archived === true ? (stored.archivedAt ?? ctx.now) : archived === false ? null : undefined;
      const updated = await tx.plan.update({ where: { id: plan.id }, data: { ...planData(data), archivedAt } });
      const entity = `${updated.name} (${plan.product.name})`;
      await recordAudit(tx, { tenantId, action: 'UpdatePlan', entityType: 'Plan', entityId: plan.id, entity, details: changes }, auditActor(ctx), ctx.now);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateName(data.name ?? '');
    throw error;
  }
  return getPlan(ctx, plan.id);
}

/**
 * Deletes a plan no license names (CompanyAdmin). A plan licenses were sold from is kept for them (their reports and
 * renewals): Conflict, archive it instead. Audited (DeletePlan). Returns its id.
 */
export async function deletePlan(ctx: ServiceContext, id: string) {
  const { tenantId } = requireAdmin(ctx);
  const plan = await findTenantPlan(ctx, tenantId, id);
  const inUse = () => new AppError('Conflict', `"${plan.name}" is the plan of licenses sold: archive it instead (no new license from it, those sold keep it).`);
  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      if (await tx.license.findFirst({ where: { tenantId, planId: plan.id }, select: { id: true } })) throw inUse();
      await tx.plan.delete({ where: { id: plan.id } });
      const details = { productId: plan.productId, productName: plan.product.name, ...planDetails(plan) };
      await recordAudit(tx, { tenantId, action: 'DeletePlan', entityType: 'Plan', entityId: plan.id, entity: `${plan.name} (${plan.product.name})`, details }, auditActor(ctx), ctx.now);
      return plan.id;
    });
  } catch (error) {
    // A license created from it meanwhile: the database's foreign key refuses the delete.
    if ((error as { code?: string }).code === 'P2003') throw inUse();
    throw error;
  }
}

/**
 * The plan a new license is created from, within the tenant: NotFound for an unknown id or another company's plan,
 * Conflict for an archived one.
 */
export async function planForNewLicense(ctx: Pick<ServiceContext, 'db'>, tenantId: string, planId: string) {
  const plan = await findTenantPlan(ctx, tenantId, planId);
  if (plan.archivedAt) throw new AppError('Conflict', `The plan "${plan.name}" is archived: no new license is sold from it.`, { fields: { planId: 'archived' } });
  return plan;
}

/** The attributes a license created from `plan` at `now` gets (its dates: now plus the plan's periods). */
export function planLicenseValues(plan: Plan, now: Date): LicenseInput {
  const at = (text: string | null) => {
    const period = text ? parsePeriod(text) : null;
    return period ? addPeriod(now, period) : null;
  };
  return {
    maxActivations: plan.maxActivations,
    expiresAt: at(plan.duration),
    isTrial: plan.isTrial,
    nodeLocked: plan.nodeLocked,
    offlineGraceDays: plan.offlineGraceDays,
    gracePeriodDays: plan.gracePeriodDays,
    features: plan.features,
    customFields: plan.customFields,
    minVersion: plan.minVersion,
    maxVersion: plan.maxVersion,
    maintenanceExpiresAt: at(plan.maintenancePeriod),
    floatingSeats: plan.floatingSeats,
  };
}

type CustomFields = Record<string, string>;
const fieldsOf = (value: unknown): CustomFields => (value && typeof value === 'object' && !Array.isArray(value) ? (value as CustomFields) : {});

/** What a license got from its plan when it was sold or moved to it: the features and custom fields it took. */
export interface PlanValues {
  planId: string;
  features: string[];
  customFields: CustomFields;
}

/** What a license sold from `plan` got from it (all of its features and custom fields). */
export const planValuesOf = (plan: Pick<Plan, 'id' | 'features' | 'customFields'>): PlanValues => ({ planId: plan.id, features: plan.features, customFields: fieldsOf(plan.customFields) });

/**
 * What a license moved to plan `to` (a payment provider's plan change) gets. `from` is what it got from its old plan
 * when it was sold or moved to it (PlanValues; not that plan as edited since): a custom field the license still holds
 * with that value came from the plan and gives way to the new plan's (or goes); one the vendor changed, or one the old
 * plan did not give, is the vendor's: kept, and it wins over the new plan's. A feature the old plan gave is replaced by
 * the new plan's features; those the vendor added stay. Without `from`, everything the license holds is kept and the
 * new plan's values are added. `update`: only the changed attributes; `got`: what the license now holds from `to`.
 */
export function planChangeValues(from: { features: string[]; customFields: unknown } | null, to: Pick<Plan, 'id' | 'features' | 'customFields'>, license: { features: string[]; customFields: unknown }) {
  const oldFields = fieldsOf(from?.customFields);
  const held = fieldsOf(license.customFields);
  const kept = Object.fromEntries(Object.entries(held).filter(([name, value]) => oldFields[name] !== value));
  const planFields = fieldsOf(to.customFields);
  const customFields: CustomFields = { ...planFields, ...kept };
  const keptFeatures = license.features.filter((feature) => !(from?.features ?? []).includes(feature));
  const features = [...new Set([...to.features, ...keptFeatures])];
  const update: { features?: string[]; customFields?: CustomFields | null } = {};
  if (features.length !== license.features.length || features.some((feature) => !license.features.includes(feature))) update.features = features;
  const same = Object.keys(customFields).length === Object.keys(held).length && Object.entries(customFields).every(([name, value]) => held[name] === value);
  if (!same) update.customFields = Object.keys(customFields).length ? customFields : null;
  // The vendor's own values stay the vendor's, even where the new plan has the same feature or a field of the same name.
  const got: PlanValues = {
    planId: to.id,
    features: to.features.filter((feature) => !keptFeatures.includes(feature)),
    customFields: Object.fromEntries(Object.entries(planFields).filter(([name]) => !Object.hasOwn(kept, name))),
  };
  return { update, got };
}

/** The usage quotas a license created from `plan` gets. */
export const planQuotas = (plan: Plan): PlanQuota[] => (Array.isArray(plan.quotas) ? (plan.quotas as unknown as PlanQuota[]) : []);
