import { builder } from '../builder.js';
import { arrayConnection, orNull } from '../connections.js';
import { serviceCtx } from '../context.js';
import { createPlan, deletePlan, getPlan, listPlans, planQuotas, updatePlan, type PlanInput, type PlanWithCount } from '../../services/plans.js';
import { MeterPeriodEnum } from './floating.js';
import { ProductRefType } from './products.js';

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

/** A plan named from a license (the plan it was created from). */
export const PlanRefType = builder.prismaObject('Plan', {
  variant: 'PlanRef',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    archived: t.boolean({ resolve: (plan) => plan.archivedAt !== null }),
  }),
});

type Quota = ReturnType<typeof planQuotas>[number];
const PlanQuotaType = builder.objectRef<Quota>('PlanQuota').implement({
  description: 'A usage quota each license created from the plan gets (see setMeterQuota).',
  fields: (t) => ({
    event: t.exposeString('event'),
    period: t.field({ type: MeterPeriodEnum, resolve: (quota) => quota.period }),
    limit: t.exposeInt('limit'),
  }),
});

const PlanType = builder.prismaObject('Plan', {
  description:
    "What a sold license of a product gets. createLicense with planId copies these values onto the new license (expiresAt and maintenanceExpiresAt: now plus the periods); editing the plan changes no license sold before.",
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    product: t.relation('product', { type: ProductRefType }),
    duration: t.exposeString('duration', { nullable: true, description: 'ISO 8601 period (P1Y, P6M, P2W, P30D) from the license\'s creation to its expiry; null: perpetual.' }),
    maxActivations: t.exposeInt('maxActivations'),
    isTrial: t.exposeBoolean('isTrial'),
    nodeLocked: t.exposeBoolean('nodeLocked'),
    offlineGraceDays: t.exposeInt('offlineGraceDays', { nullable: true }),
    gracePeriodDays: t.exposeInt('gracePeriodDays', { nullable: true }),
    features: t.exposeStringList('features'),
    customFields: t.expose('customFields', { type: 'JSON', nullable: true, description: 'Flat object of string values.' }),
    minVersion: t.exposeString('minVersion', { nullable: true }),
    maxVersion: t.exposeString('maxVersion', { nullable: true }),
    maintenancePeriod: t.exposeString('maintenancePeriod', { nullable: true, description: 'ISO 8601 period from the license\'s creation to its maintenanceExpiresAt; null: none.' }),
    floatingSeats: t.exposeInt('floatingSeats', { nullable: true, description: 'Concurrent floating sessions allowed; null: none.' }),
    quotas: t.field({ type: [PlanQuotaType], resolve: (plan) => planQuotas(plan) }),
    archived: t.boolean({ description: 'An archived plan sells no new license; those sold keep it.', resolve: (plan) => plan.archivedAt !== null }),
    archivedAt: t.expose('archivedAt', { type: 'DateTime', nullable: true }),
    // Every service that answers a plan sets licenseCount (one grouped count over the license index).
    licenseCount: t.int({ description: 'Licenses created from this plan: a plan with licenses cannot be deleted (archive it).', resolve: (plan) => (plan as PlanWithCount).licenseCount }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const PlanFilterInput = builder.inputType('PlanFilter', {
  fields: (t) => ({
    productId: t.id({ description: "One product's plans." }),
    includeArchived: t.boolean({ description: 'Archived plans too (default: false).' }),
  }),
});

builder.queryFields((t) => ({
  plans: t.connection(
    {
      type: PlanType,
      description: 'Plans of your company, by product then name (archived ones only with includeArchived). first/last: 0–100 (default 100).',
      args: { filter: t.arg({ type: PlanFilterInput }) },
      resolve: async (_root, args, ctx) =>
        arrayConnection(args, await listPlans(serviceCtx(ctx), { productId: args.filter?.productId?.toString(), includeArchived: args.filter?.includeArchived })),
    },
    { name: 'PlanConnection' },
    { name: 'PlanEdge' },
  ),
  plan: t.field({
    type: PlanType,
    nullable: true,
    description: 'Null when there is no such plan in your company.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => orNull(getPlan(serviceCtx(ctx), String(args.id))),
  }),
}));

const PlanQuotaInput = builder.inputType('PlanQuotaInput', {
  fields: (t) => ({
    event: t.string({ required: true, description: 'Event name, e.g. api.calls.' }),
    period: t.field({ type: MeterPeriodEnum, required: true }),
    limit: t.int({ required: true, description: '0 blocks the event.' }),
  }),
});

/** The fields both createPlan and updatePlan take (on update: omitted = unchanged, null = cleared). */
const planFields = (t: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>) => ({
  duration: t.string({ description: "ISO 8601 period (P1Y, P6M, P2W, P30D, P1Y6M) from a license's creation to its expiry; null: perpetual." }),
  isTrial: t.boolean(),
  nodeLocked: t.boolean(),
  offlineGraceDays: t.int(),
  gracePeriodDays: t.int(),
  features: t.stringList(),
  customFields: t.field({ type: 'JSON', description: 'Flat object of string values.' }),
  minVersion: t.string(),
  maxVersion: t.string(),
  maintenancePeriod: t.string({ description: "ISO 8601 period from a license's creation to its maintenance end; null: none." }),
  floatingSeats: t.int(),
  quotas: t.field({ type: [PlanQuotaInput], description: 'Usage quotas each license gets (each event once); on update the list replaces the plan\'s.' }),
});

const CreatePlanInput = builder.inputType('CreatePlanInput', {
  fields: (t) => ({ productId: t.id({ required: true }), name: t.string({ required: true }), maxActivations: t.int({ required: true }), ...planFields(t) }),
});
const UpdatePlanInput = builder.inputType('UpdatePlanInput', {
  description: 'Omitted fields stay unchanged; null clears a nullable one. Licenses sold before keep their values.',
  fields: (t) => ({
    id: t.id({ required: true }),
    name: t.string(),
    maxActivations: t.int(),
    archived: t.boolean({ description: 'true archives the plan (no new license from it), false restores it.' }),
    ...planFields(t),
  }),
});
const DeletePlanInput = builder.inputType('DeletePlanInput', { fields: (t) => ({ id: t.id({ required: true }) }) });

const planPayload = (name: string) =>
  builder.objectRef<PlanWithCount>(name).implement({ fields: (t) => ({ plan: t.field({ type: PlanType, resolve: (plan) => plan }) }) });
const CreatePlanPayload = planPayload('CreatePlanPayload');
const UpdatePlanPayload = planPayload('UpdatePlanPayload');
const DeletePlanPayload = builder.objectRef<{ id: string }>('DeletePlanPayload').implement({ fields: (t) => ({ deletedPlanId: t.exposeID('id') }) });

/** GraphQL's input as the service's: ids as strings, omitted fields left out. */
const planInput = (input: Record<string, unknown>): PlanInput => Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));

builder.mutationFields((t) => ({
  createPlan: t.field({
    type: CreatePlanPayload,
    description: 'A plan of one of your products (names unique per product).',
    args: { input: t.arg({ type: CreatePlanInput, required: true }) },
    resolve: (_root, { input: { productId, ...rest } }, ctx) => createPlan(serviceCtx(ctx), { ...planInput(rest), productId: String(productId) }),
  }),
  updatePlan: t.field({
    type: UpdatePlanPayload,
    description: 'Changes or archives a plan. Licenses created from it before keep the values they were sold with.',
    args: { input: t.arg({ type: UpdatePlanInput, required: true }) },
    resolve: (_root, { input: { id, archived, ...rest } }, ctx) => updatePlan(serviceCtx(ctx), String(id), { ...planInput(rest), archived }),
  }),
  deletePlan: t.field({
    type: DeletePlanPayload,
    description: 'Deletes a plan no license was created from (Conflict otherwise: archive it instead).',
    args: { input: t.arg({ type: DeletePlanInput, required: true }) },
    resolve: async (_root, { input }, ctx) => ({ id: await deletePlan(serviceCtx(ctx), String(input.id)) }),
  }),
}));
