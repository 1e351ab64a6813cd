import { builder } from '../builder.js';
import { serviceCtx } from '../context.js';
import type { Activation } from '../../generated/prisma/client.js';
import {
  createLicense,
  deactivateActivation,
  getLicense,
  listLicenseActivations,
  listLicenses,
  revokeLicense,
  updateLicense,
} from '../../services/licenses/management.js';
import { licenseStatus } from '../../services/licenses/predicates.js';
import { remainingActivations } from '../../services/licenses/rules.js';
import type { Page } from '../../services/listing.js';
import { ProductRefType } from './products.js';
import { daysUntil } from '../../services/licenses/countdown.js';

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
type LicenseShape = Awaited<ReturnType<typeof listLicenses>>['nodes'][number];

export const PageInfoType = builder.objectRef<Page<unknown>['pageInfo']>('PageInfo').implement({
  description: 'Pass endCursor as `after` to get the next page.',
  fields: (t) => ({
    endCursor: t.exposeString('endCursor', { nullable: true }),
    hasNextPage: t.exposeBoolean('hasNextPage'),
  }),
});

export const LicenseStatusEnum = builder.enumType('LicenseStatus', {
  description: 'revoked; else expired once expiresAt ≤ now; else active.',
  values: ['active', 'expired', 'revoked'] as const,
});

const ActivationType = builder.objectRef<Activation>('Activation').implement({
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
  }),
});

const ActivationConnectionType = builder.objectRef<Page<Activation>>('ActivationConnection').implement({
  fields: (t) => ({
    nodes: t.field({ type: [ActivationType], resolve: (page) => page.nodes }),
    pageInfo: t.field({ type: PageInfoType, resolve: (page) => page.pageInfo }),
    totalCount: t.exposeInt('totalCount', { description: 'Activations of the license, active and deactivated, counted up to 10,000.' }),
    totalCountCapped: t.exposeBoolean('totalCountCapped', { description: 'True when there are more than totalCount (show "10,000+").' }),
  }),
});

const LicenseType = builder.objectRef<LicenseShape>('License').implement({
  description: 'A license. Its key is shown once, by createLicense; afterwards only keyHint.',
  fields: (t) => ({
    id: t.exposeID('id'),
    keyHint: t.exposeString('keyHint', { description: 'PREFIX-…-LAST4' }),
    product: t.field({ type: ProductRefType, resolve: (license) => license.product }),
    status: t.field({ type: LicenseStatusEnum, resolve: (license, _args, ctx) => licenseStatus(license, ctx.now) }),
    maxActivations: t.exposeInt('maxActivations'),
    currentActivations: t.exposeInt('currentActivations'),
    remainingActivations: t.int({ resolve: (license) => remainingActivations(license) }),
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
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    activations: t.field({
      type: ActivationConnectionType,
      description: 'Activations, active and deactivated, newest first. first: 1–100 (default 20); after: a pageInfo.endCursor.',
      args: { first: t.arg.int(), after: t.arg.string() },
      resolve: (license, args, ctx) => listLicenseActivations(serviceCtx(ctx), license, { first: args.first, after: args.after }),
    }),
  }),
});

const LicenseConnectionType = builder.objectRef<Page<LicenseShape>>('LicenseConnection').implement({
  fields: (t) => ({
    nodes: t.field({ type: [LicenseType], resolve: (page) => page.nodes }),
    pageInfo: t.field({ type: PageInfoType, resolve: (page) => page.pageInfo }),
    totalCount: t.exposeInt('totalCount', { description: 'Licenses matching the filter, on all pages, counted up to 10,000 (1,000 with a search).' }),
    totalCountCapped: t.exposeBoolean('totalCountCapped', { description: 'True when more rows match than totalCount says (show "10,000+").' }),
  }),
});

const CreatedLicenseType = builder.objectRef<{ key: string; license: LicenseShape }>('CreatedLicense').implement({
  fields: (t) => ({
    key: t.exposeString('key', { description: 'The plaintext license key: give it to the customer now, it is never shown again.' }),
    license: t.field({ type: LicenseType, resolve: (created) => created.license }),
  }),
});

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
  fields: (t) => ({ productId: t.id({ required: true }), maxActivations: t.int({ required: true }), ...attributeFields(t) }),
});
const UpdateLicenseInput = builder.inputType('UpdateLicenseInput', {
  description: 'Omitted fields stay unchanged; null clears a nullable attribute.',
  fields: (t) => ({ maxActivations: t.int(), ...attributeFields(t) }),
});
const LicenseFilterInput = builder.inputType('LicenseFilter', {
  fields: (t) => ({
    productId: t.id(),
    status: t.field({ type: LicenseStatusEnum }),
    expiringWithinDays: t.int({ description: 'Active licenses with now < expiresAt ≤ now + N days (1–3650).' }),
    search: t.string({ description: 'Part of the customer email or key hint (case-insensitive), or a whole license key.' }),
  }),
});

builder.queryFields((t) => ({
  licenses: t.field({
    type: LicenseConnectionType,
    description: 'Newest first. first: 1–100 (default 20); after: a pageInfo.endCursor.',
    args: { filter: t.arg({ type: LicenseFilterInput }), first: t.arg.int(), after: t.arg.string() },
    resolve: (_root, args, ctx) =>
      listLicenses(serviceCtx(ctx), { ...args.filter, productId: args.filter?.productId?.toString() }, { first: args.first, after: args.after }),
  }),
  license: t.field({
    type: LicenseType,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => getLicense(serviceCtx(ctx), String(args.id)),
  }),
}));

builder.mutationFields((t) => ({
  createLicense: t.field({
    type: CreatedLicenseType,
    args: { input: t.arg({ type: CreateLicenseInput, required: true }) },
    resolve: (_root, { input }, ctx) => createLicense(serviceCtx(ctx), { ...input, productId: String(input.productId) }),
  }),
  updateLicense: t.field({
    type: LicenseType,
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateLicenseInput, required: true }) },
    resolve: (_root, args, ctx) => updateLicense(serviceCtx(ctx), String(args.id), args.input),
  }),
  revokeLicense: t.field({
    type: LicenseType,
    description: 'A revoked license never validates again. Revoking twice changes nothing.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => revokeLicense(serviceCtx(ctx), String(args.id)),
  }),
  deactivateActivation: t.field({
    type: LicenseType,
    description: "Frees one activation's seat; returns its license.",
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => deactivateActivation(serviceCtx(ctx), String(args.id)),
  }),
}));
