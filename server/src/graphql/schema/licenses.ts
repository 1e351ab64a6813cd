import { builder, screamingEnumValues } from '../builder.js';
import { keysetPage, orNull, pageConnection } from '../connections.js';
import { queryFromInfo } from '@pothos/plugin-prisma';
import type { GraphQLResolveInfo } from 'graphql';
import { serviceCtx, type GraphQLContext } from '../context.js';
import {
  createLicense,
  deactivateActivation,
  getLicense,
  LICENSE_COLUMNS,
  listLicenseActivations,
  listLicenses,
  revokeLicense,
  updateLicense,
} from '../../services/licenses/management.js';
import { LICENSE_STATUSES, licenseStatus } from '../../services/licenses/predicates.js';
import { reinstateLicense, renewLicense, suspendLicense, transferLicense } from '../../services/licenses/lifecycle.js';
import { MAX_OVERLAP_HOURS, reissueLicenseKey } from '../../services/licenses/reissue.js';
import { quotaChangeBlockedReason, remainingActivations } from '../../services/licenses/rules.js';
import { ProductRefType } from './products.js';
import { PlanRefType } from './plans.js';
import { daysUntil } from '../../domain/countdown.js';

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
type LicenseShape = Awaited<ReturnType<typeof listLicenses>>['nodes'][number];

export const LicenseStatusEnum = builder.enumType('LicenseStatus', {
  description: 'REVOKED (final); else SUSPENDED (paused by the vendor, reinstatable); else EXPIRED once expiresAt ≤ now; else ACTIVE.',
  values: screamingEnumValues(LICENSE_STATUSES),
});

const ActivationType = builder.prismaObject('Activation', {
  fields: (t) => ({
    id: t.exposeID('id'),
    active: t.boolean({ description: 'False once deactivated: its seat is free again.', resolve: (activation) => activation.deactivatedAt === null }),
    deviceId: t.exposeString('deviceId', { nullable: true }),
    deviceName: t.exposeString('deviceName', { nullable: true }),
    version: t.exposeString('version', { nullable: true }),
    userEmail: t.exposeString('userEmail', { nullable: true }),
    ip: t.exposeString('ip', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastSeenAt: t.expose('lastSeenAt', { type: 'DateTime' }),
    deactivatedAt: t.expose('deactivatedAt', { type: 'DateTime', nullable: true }),
    offline: t.boolean({
      description: 'Activated offline from an activation request: its device key is on record, so a deactivation proof signed by the device can free it.',
      // A string, not merely "not null": a row read without the column must not report a key on record.
      resolve: (activation) => typeof activation.devicePublicKey === 'string',
    }),
  }),
});

const ActivationConnection = builder.connectionObject({ type: ActivationType, name: 'ActivationConnection' }, { name: 'ActivationEdge' });

export const LicenseType = builder.prismaObject('License', {
  // Select mode: a license row is loaded with these columns only, never its key digest.
  select: LICENSE_COLUMNS,
  description: 'A license. Its key is shown once, by createLicense; afterwards only keyHint.',
  fields: (t) => ({
    id: t.exposeID('id'),
    keyHint: t.exposeString('keyHint', { description: 'PREFIX-…-LAST4' }),
    product: t.relation('product', { type: ProductRefType }),
    plan: t.relation('plan', { type: PlanRefType, nullable: true, description: 'The plan it was created from (its values were copied then); null: none.' }),
    status: t.field({ type: LicenseStatusEnum, resolve: (license, _args, ctx) => licenseStatus(license, ctx.now) }),
    maxActivations: t.exposeInt('maxActivations'),
    currentActivations: t.exposeInt('currentActivations'),
    remainingActivations: t.int({ resolve: (license) => remainingActivations(license) }),
    quotaChangeBlockedReason: t.string({
      nullable: true,
      description: 'Why usage quotas cannot be set or removed on this license now (setMeterQuota answers Conflict with it), or null when they can: only a revoked license refuses.',
      resolve: (license) => quotaChangeBlockedReason(license),
    }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', nullable: true, description: 'Null: perpetual.' }),
    daysUntilExpiry: t.int({
      nullable: true,
      description: 'UTC calendar days to the expiry date: 0 today, negative once past; null when perpetual. The one countdown rule of the console and the emails.',
      resolve: (license, _args, ctx) => (license.expiresAt ? daysUntil(license.expiresAt, ctx.now) : null),
    }),
    isTrial: t.exposeBoolean('isTrial'),
    nodeLocked: t.exposeBoolean('nodeLocked'),
    offlineGraceDays: t.exposeInt('offlineGraceDays', { nullable: true }),
    gracePeriodDays: t.exposeInt('gracePeriodDays', { nullable: true }),
    features: t.exposeStringList('features'),
    customFields: t.expose('customFields', { type: 'JSON', nullable: true, description: 'Flat object of string values.' }),
    minVersion: t.exposeString('minVersion', { nullable: true }),
    maxVersion: t.exposeString('maxVersion', { nullable: true }),
    maintenanceExpiresAt: t.expose('maintenanceExpiresAt', { type: 'DateTime', nullable: true }),
    customerEmail: t.exposeString('customerEmail', { nullable: true }),
    floatingSeats: t.exposeInt('floatingSeats', { nullable: true, description: 'Concurrent floating sessions allowed; null: none.' }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
    suspendedAt: t.expose('suspendedAt', { type: 'DateTime', nullable: true, description: 'When the current suspension began; null unless SUSPENDED.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    // Loaded for all the licenses of a page at once (services/licenses/management.ts: a keyset page per license).
    activations: t.loadable({
      type: ActivationConnection,
      description: 'Activations, active and deactivated, newest first; totalCount counts up to 10,000. first/last: 1–100 (default 20); after: an endCursor (with first), before: a startCursor (with last); not both directions at once.',
      byPath: true,
      args: { ...t.arg.connectionArgs() },
      load: async (licenses: { id: string; tenantId: string }[], ctx, args) => (await listLicenseActivations(serviceCtx(ctx), licenses, keysetPage(args))).map(pageConnection),
      loaderOptions: { cacheKeyFn: (license) => license.id },
      resolve: (license) => ({ id: license.id, tenantId: license.tenantId }),
    }),
  }),
});

/** The rows of a root field's licenses with the relations the request selects under `paths` (one query per relation). */
const licenseQuery = (ctx: GraphQLContext, info: GraphQLResolveInfo, paths: string[][]) => queryFromInfo({ context: ctx, info, paths, typeName: 'License' });

const CreateLicensePayload = builder.objectRef<{ key: string; license: LicenseShape }>('CreateLicensePayload').implement({
  fields: (t) => ({
    key: t.exposeString('key', { description: 'The plaintext license key: give it to the customer now, it is never shown again.' }),
    license: t.field({ type: LicenseType, resolve: (created) => created.license }),
  }),
});

const ReissueLicenseKeyPayload = builder
  .objectRef<{ key: string; previousKeyValidUntil: Date | null; license: LicenseShape }>('ReissueLicenseKeyPayload')
  .implement({
    fields: (t) => ({
      key: t.exposeString('key', { description: 'The new plaintext license key: give it to the customer now, it is never shown again.' }),
      previousKeyValidUntil: t.expose('previousKeyValidUntil', { type: 'DateTime', nullable: true, description: 'Until when the old key still works; null: it stopped at once.' }),
      license: t.field({ type: LicenseType, resolve: (reissued) => reissued.license }),
    }),
  });

/** The payload of a mutation that changes one license. */
const licensePayload = (name: string, description?: string) =>
  builder.objectRef<LicenseShape>(name).implement({
    description,
    fields: (t) => ({ license: t.field({ type: LicenseType, resolve: (license) => license }) }),
  });
const UpdateLicensePayload = licensePayload('UpdateLicensePayload');
const RevokeLicensePayload = licensePayload('RevokeLicensePayload');
const SuspendLicensePayload = licensePayload('SuspendLicensePayload');
const ReinstateLicensePayload = licensePayload('ReinstateLicensePayload');
const RenewLicensePayload = licensePayload('RenewLicensePayload');
const TransferLicensePayload = licensePayload('TransferLicensePayload');
const DeactivateActivationPayload = licensePayload('DeactivateActivationPayload', 'The license whose seat was freed.');

/** The attributes both createLicense and updateLicense take (on update: omitted = unchanged, null = cleared). */
const attributeFields = (t: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>) => ({
  expiresAt: t.field({ type: 'DateTime', description: 'Null: perpetual.' }),
  isTrial: t.boolean(),
  nodeLocked: t.boolean(),
  offlineGraceDays: t.int(),
  gracePeriodDays: t.int(),
  features: t.stringList(),
  customFields: t.field({ type: 'JSON', description: 'Flat object of string values.' }),
  minVersion: t.string(),
  maxVersion: t.string(),
  maintenanceExpiresAt: t.field({ type: 'DateTime' }),
  customerEmail: t.string(),
  floatingSeats: t.int(),
});

const CreateLicenseInput = builder.inputType('CreateLicenseInput', {
  description:
    "With planId, the plan's values are copied onto the license (expiresAt and maintenanceExpiresAt: now plus its periods, its quotas set); a field given here as well (null included) overrides the plan's. productId and maxActivations are then optional.",
  fields: (t) => ({
    productId: t.id({ description: "Required without planId; with it, the plan's product (else InvalidRequest)." }),
    planId: t.id({ description: 'A plan of your company, not archived.' }),
    maxActivations: t.int({ description: 'Required without planId.' }),
    key: t.string({
      description:
        "A key the vendor issued before (omitted: a new one is generated). A Keyforge key with your company's prefix for any product; for a product with allowImportedKeys, also a key of another format: 8–256 printable ASCII characters without white space, kept exactly (case-sensitive). Refused (Conflict) when any license has or had it.",
    }),
    ...attributeFields(t),
  }),
});
const UpdateLicenseInput = builder.inputType('UpdateLicenseInput', {
  description: 'Omitted fields stay unchanged; null clears a nullable attribute.',
  fields: (t) => ({ id: t.id({ required: true }), maxActivations: t.int(), ...attributeFields(t) }),
});
const RevokeLicenseInput = builder.inputType('RevokeLicenseInput', { fields: (t) => ({ id: t.id({ required: true }) }) });
const SuspendLicenseInput = builder.inputType('SuspendLicenseInput', { fields: (t) => ({ id: t.id({ required: true }) }) });
const ReinstateLicenseInput = builder.inputType('ReinstateLicenseInput', { fields: (t) => ({ id: t.id({ required: true }) }) });
const RenewLicenseInput = builder.inputType('RenewLicenseInput', {
  fields: (t) => ({
    id: t.id({ required: true }),
    expiresAt: t.field({ type: 'DateTime', required: true, description: 'The new expiry: later than now and than the current expiry.' }),
  }),
});
const TransferLicenseInput = builder.inputType('TransferLicenseInput', {
  fields: (t) => ({ id: t.id({ required: true }), customerEmail: t.string({ required: true, description: 'The new customer email.' }) }),
});
const ReissueLicenseKeyInput = builder.inputType('ReissueLicenseKeyInput', {
  fields: (t) => ({
    id: t.id({ required: true }),
    overlapHours: t.int({ description: `Hours the old key keeps working next to the new one (0–${MAX_OVERLAP_HOURS}); 0 or omitted: it stops at once.` }),
  }),
});
const DeactivateActivationInput = builder.inputType('DeactivateActivationInput', { fields: (t) => ({ id: t.id({ required: true, description: 'The activation.' }) }) });
export const LicenseFilterInput = builder.inputType('LicenseFilter', {
  fields: (t) => ({
    productId: t.id(),
    planId: t.id({ description: 'Licenses created from this plan.' }),
    status: t.field({ type: LicenseStatusEnum }),
    expiringWithinDays: t.int({ description: 'Active licenses with now < expiresAt ≤ now + N days (1–3650).' }),
    search: t.string({ description: 'Part of the customer email or key hint (case-insensitive), or a whole license key.' }),
  }),
});

builder.queryFields((t) => ({
  licenses: t.connection(
    {
      type: LicenseType,
      description: 'Newest first; totalCount counts up to 10,000 (1,000 with a search). first/last: 1–100 (default 20); after: an endCursor (with first), before: a startCursor (with last); not both directions at once.',
      args: { filter: t.arg({ type: LicenseFilterInput }) },
      resolve: async (_root, args, ctx, info) => {
        const filter = { ...args.filter, productId: args.filter?.productId?.toString(), planId: args.filter?.planId?.toString() };
        return pageConnection(await listLicenses(serviceCtx(ctx), filter, keysetPage(args), licenseQuery(ctx, info, [['nodes'], ['edges', 'node']])));
      },
    },
    { name: 'LicenseConnection' },
    { name: 'LicenseEdge' },
  ),
  license: t.field({
    type: LicenseType,
    nullable: true,
    description: 'Null when there is no such license in your company.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx, info) => orNull(getLicense(serviceCtx(ctx), String(args.id), licenseQuery(ctx, info, [[]]))),
  }),
}));

builder.mutationFields((t) => ({
  createLicense: t.field({
    type: CreateLicensePayload,
    args: { input: t.arg({ type: CreateLicenseInput, required: true }) },
    resolve: (_root, { input: { productId, planId, maxActivations, key, ...rest } }, ctx) => {
      const ids = { productId: productId === undefined || productId === null ? undefined : String(productId), planId: planId === undefined || planId === null ? undefined : String(planId) };
      return createLicense(serviceCtx(ctx), { ...rest, ...(maxActivations !== undefined && { maxActivations }), ...ids }, key === undefined || key === null ? {} : { key });
    },
  }),
  updateLicense: t.field({
    type: UpdateLicensePayload,
    args: { input: t.arg({ type: UpdateLicenseInput, required: true }) },
    resolve: (_root, { input: { id, ...changes } }, ctx) => updateLicense(serviceCtx(ctx), String(id), changes),
  }),
  revokeLicense: t.field({
    type: RevokeLicensePayload,
    description: 'A revoked license never validates again. Revoking twice changes nothing.',
    args: { input: t.arg({ type: RevokeLicenseInput, required: true }) },
    resolve: (_root, { input }, ctx) => revokeLicense(serviceCtx(ctx), String(input.id)),
  }),
  suspendLicense: t.field({
    type: SuspendLicensePayload,
    description: 'Pauses a license: validate, activate, floating and meter answer errorCode Suspended; activations keep their seats; no customer expiry emails meanwhile. A revoked license cannot be suspended (Conflict); suspending twice changes nothing.',
    args: { input: t.arg({ type: SuspendLicenseInput, required: true }) },
    resolve: (_root, { input }, ctx) => suspendLicense(serviceCtx(ctx), { id: String(input.id) }),
  }),
  reinstateLicense: t.field({
    type: ReinstateLicensePayload,
    description: 'Lifts a suspension: the license validates again as before. A revoked license cannot be reinstated (Conflict); reinstating an unsuspended license changes nothing.',
    args: { input: t.arg({ type: ReinstateLicenseInput, required: true }) },
    resolve: (_root, { input }, ctx) => reinstateLicense(serviceCtx(ctx), { id: String(input.id) }),
  }),
  renewLicense: t.field({
    type: RenewLicensePayload,
    description: 'Sets a later expiresAt and clears the sent expiry notices, so the 30/7/1-day emails fire again for the new period. An earlier or past date is InvalidRequest (field expiresAt); a perpetual license has nothing to renew.',
    args: { input: t.arg({ type: RenewLicenseInput, required: true }) },
    resolve: (_root, { input }, ctx) => renewLicense(serviceCtx(ctx), { id: String(input.id), expiresAt: input.expiresAt }),
  }),
  transferLicense: t.field({
    type: TransferLicensePayload,
    description: "Moves the license to another customer email (validated); expiry notices go there from now on.",
    args: { input: t.arg({ type: TransferLicenseInput, required: true }) },
    resolve: (_root, { input }, ctx) => transferLicense(serviceCtx(ctx), { id: String(input.id), customerEmail: input.customerEmail }),
  }),
  reissueLicenseKey: t.field({
    type: ReissueLicenseKeyPayload,
    description: 'Gives the license a new key (lost or leaked key): same license id, so activations, history, quotas, usage and analytics stay. The old key stops at once, or after overlapHours (both keys work meanwhile); then it answers like an unknown key. An earlier reissue\'s old key stops at once. A revoked license: Conflict.',
    args: { input: t.arg({ type: ReissueLicenseKeyInput, required: true }) },
    resolve: (_root, { input }, ctx) => reissueLicenseKey(serviceCtx(ctx), { id: String(input.id), overlapHours: input.overlapHours }),
  }),
  deactivateActivation: t.field({
    type: DeactivateActivationPayload,
    description: "Frees one activation's seat; answers with its license.",
    args: { input: t.arg({ type: DeactivateActivationInput, required: true }) },
    resolve: (_root, { input }, ctx) => deactivateActivation(serviceCtx(ctx), String(input.id)),
  }),
}));
