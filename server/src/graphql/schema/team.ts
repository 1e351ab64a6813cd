import { builder, RoleEnum } from '../builder.js';
import { serviceCtx } from '../context.js';
import { arrayConnection } from '../connections.js';
import { API_KEY_FIELDS, createApiKey, listApiKeys, revokeApiKey } from '../../services/auth/api-keys.js';
import { getCompany, updateCompanySettings } from '../../services/company.js';
import { deactivateUser, listUsers, reactivateUser, updateUser } from '../../services/users.js';
import { UserType } from './account.js';

type ApiKeyShape = { [K in keyof typeof API_KEY_FIELDS]: K extends 'role' ? 'CompanyAdmin' | 'ReadOnly' : K extends `${string}At` ? Date | null : string | null } & { id: string; name: string; hint: string; createdAt: Date };

// Select mode: never the key's digest.
const ApiKeyType = builder.prismaObject('ApiKey', {
  select: API_KEY_FIELDS,
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    role: t.field({ type: RoleEnum, resolve: (key) => key.role }),
    hint: t.exposeString('hint', { description: 'kf_…last4: the key itself is shown only once, at creation.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
  }),
});

const CreateApiKeyPayload = builder.objectRef<{ key: string; apiKey: ApiKeyShape }>('CreateApiKeyPayload').implement({
  fields: (t) => ({
    key: t.exposeString('key', { description: 'The plaintext key: store it now, it is never shown again.' }),
    apiKey: t.field({ type: ApiKeyType, resolve: (created) => created.apiKey }),
  }),
});

type CompanyShape = Awaited<ReturnType<typeof getCompany>>;

export const CompanyType = builder.prismaObject('Tenant', {
  name: 'Company',
  description: 'Your company: the vendor whose products and licenses this API manages.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    keyPrefix: t.exposeString('keyPrefix'),
    subscriptionEndsAt: t.expose('subscriptionEndsAt', { type: 'DateTime', nullable: true }),
    renewalUrl: t.exposeString('renewalUrl', { nullable: true, description: 'Where customers renew: a button in their expiry emails.' }),
    supportEmail: t.exposeString('supportEmail', { nullable: true, description: 'Named in customers’ expiry emails for questions.' }),
    portalHandle: t.exposeString('portalHandle', { nullable: true, description: 'The customer portal is served at /portal/<portalHandle>; null: no portal.' }),
    portalLogoUrl: t.exposeString('portalLogoUrl', { nullable: true, description: 'The logo the customer portal shows (https).' }),
    portalAccentColor: t.exposeString('portalAccentColor', { nullable: true, description: 'The customer portal’s accent colour (#rrggbb); null: the default.' }),
  }),
});

builder.queryFields((t) => ({
  users: t.connection(
    {
      type: UserType,
      description: 'The members of your company. first/last: 0–100 (default 100).',
      resolve: async (_root, args, ctx) => arrayConnection(args, await listUsers(serviceCtx(ctx))),
    },
    { name: 'UserConnection' },
    { name: 'UserEdge' },
  ),
  apiKeys: t.connection(
    {
      type: ApiKeyType,
      description: "Your company's API keys, revoked ones included. first/last: 0–100 (default 100).",
      resolve: async (_root, args, ctx) => arrayConnection(args, await listApiKeys(serviceCtx(ctx))),
    },
    { name: 'ApiKeyConnection' },
    { name: 'ApiKeyEdge' },
  ),
  company: t.field({ type: CompanyType, resolve: (_root, _args, ctx) => getCompany(serviceCtx(ctx)) }),
}));

const UpdateUserInput = builder.inputType('UpdateUserInput', {
  description: 'Omitted fields stay unchanged.',
  fields: (t) => ({ id: t.id({ required: true }), name: t.string(), role: t.field({ type: RoleEnum }) }),
});
const DeactivateUserInput = builder.inputType('DeactivateUserInput', { fields: (t) => ({ id: t.id({ required: true }) }) });
const ReactivateUserInput = builder.inputType('ReactivateUserInput', { fields: (t) => ({ id: t.id({ required: true }) }) });
const CreateApiKeyInput = builder.inputType('CreateApiKeyInput', { fields: (t) => ({ name: t.string({ required: true }), role: t.field({ type: RoleEnum, required: true }) }) });
const RevokeApiKeyInput = builder.inputType('RevokeApiKeyInput', { fields: (t) => ({ id: t.id({ required: true }) }) });
const UpdateCompanySettingsInput = builder.inputType('UpdateCompanySettingsInput', {
  description: 'Omitted fields stay unchanged; an empty renewalUrl / supportEmail clears it.',
  fields: (t) => ({
    name: t.string(),
    keyPrefix: t.string(),
    renewalUrl: t.string({ description: 'Shown to customers in their expiry emails.' }),
    supportEmail: t.string({ description: 'Shown to customers in their expiry emails and the customer portal.' }),
    portalHandle: t.string({ description: 'Turns the customer portal on at /portal/<handle> (1–40 lower-case letters, digits, hyphens); empty turns it off.' }),
    portalLogoUrl: t.string({ description: 'An https:// address of the logo the portal shows; empty: none.' }),
    portalAccentColor: t.string({ description: 'The portal’s accent colour as #rrggbb; empty: the default.' }),
  }),
});

type UserShape = Awaited<ReturnType<typeof updateUser>>;
const userPayload = (name: string) =>
  builder.objectRef<UserShape>(name).implement({ fields: (t) => ({ user: t.field({ type: UserType, resolve: (user) => user }) }) });
const RevokeApiKeyPayload = builder.objectRef<ApiKeyShape>('RevokeApiKeyPayload').implement({
  fields: (t) => ({ apiKey: t.field({ type: ApiKeyType, resolve: (key) => key }) }),
});
const UpdateCompanySettingsPayload = builder.objectRef<CompanyShape>('UpdateCompanySettingsPayload').implement({
  fields: (t) => ({ company: t.field({ type: CompanyType, resolve: (company) => company }) }),
});

builder.mutationFields((t) => ({
  updateUser: t.field({
    type: userPayload('UpdateUserPayload'),
    args: { input: t.arg({ type: UpdateUserInput, required: true }) },
    resolve: (_root, { input }, ctx) => updateUser(serviceCtx(ctx), String(input.id), { name: input.name, role: input.role ?? undefined }),
  }),
  deactivateUser: t.field({
    type: userPayload('DeactivateUserPayload'),
    args: { input: t.arg({ type: DeactivateUserInput, required: true }) },
    resolve: (_root, { input }, ctx) => deactivateUser(serviceCtx(ctx), String(input.id)),
  }),
  reactivateUser: t.field({
    type: userPayload('ReactivateUserPayload'),
    description: 'Lets a deactivated member sign in again (COMPANY_ADMIN). Their old sessions and API keys stay revoked.',
    args: { input: t.arg({ type: ReactivateUserInput, required: true }) },
    resolve: (_root, { input }, ctx) => reactivateUser(serviceCtx(ctx), String(input.id)),
  }),
  createApiKey: t.field({
    type: CreateApiKeyPayload,
    args: { input: t.arg({ type: CreateApiKeyInput, required: true }) },
    resolve: (_root, { input }, ctx) => createApiKey(serviceCtx(ctx), input),
  }),
  revokeApiKey: t.field({
    type: RevokeApiKeyPayload,
    args: { input: t.arg({ type: RevokeApiKeyInput, required: true }) },
    resolve: (_root, { input }, ctx) => revokeApiKey(serviceCtx(ctx), String(input.id)),
  }),
  updateCompanySettings: t.field({
    type: UpdateCompanySettingsPayload,
    args: { input: t.arg({ type: UpdateCompanySettingsInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      updateCompanySettings(
        serviceCtx(ctx),
        { name: input.name ?? undefined, keyPrefix: input.keyPrefix ?? undefined, renewalUrl: input.renewalUrl, supportEmail: input.supportEmail, portalHandle: input.portalHandle, portalLogoUrl: input.portalLogoUrl, portalAccentColor: input.portalAccentColor },
      ),
  }),
}));
