import { builder, RoleEnum } from '../builder.js';
import { serviceCtx } from '../context.js';
import { API_KEY_FIELDS, createApiKey, listApiKeys, revokeApiKey } from '../../services/auth/api-keys.js';
import { getCompany, updateCompanySettings } from '../../services/company.js';
import { createUser, deactivateUser, listUsers, reactivateUser, updateUser } from '../../services/users.js';
import { UserType } from './account.js';

type ApiKeyShape = { [K in keyof typeof API_KEY_FIELDS]: K extends 'role' ? 'CompanyAdmin' | 'ReadOnly' : K extends `${string}At` ? Date | null : string | null } & { id: string; name: string; hint: string; createdAt: Date };

const ApiKeyType = builder.objectRef<ApiKeyShape>('ApiKey').implement({
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

const CreatedApiKeyType = builder.objectRef<{ key: string; apiKey: ApiKeyShape }>('CreatedApiKey').implement({
  fields: (t) => ({
    key: t.exposeString('key', { description: 'The plaintext key: store it now, it is never shown again.' }),
    apiKey: t.field({ type: ApiKeyType, resolve: (created) => created.apiKey }),
  }),
});

export const CompanyType = builder.prismaObject('Tenant', {
  name: 'Company',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    keyPrefix: t.exposeString('keyPrefix'),
    subscriptionEndsAt: t.expose('subscriptionEndsAt', { type: 'DateTime', nullable: true }),
    renewalUrl: t.exposeString('renewalUrl', { nullable: true, description: 'Where customers renew: a button in their expiry emails.' }),
    supportEmail: t.exposeString('supportEmail', { nullable: true, description: 'Named in customers’ expiry emails for questions.' }),
  }),
});

builder.queryFields((t) => ({
  users: t.field({ type: [UserType], resolve: (_root, _args, ctx) => listUsers(serviceCtx(ctx)) }),
  apiKeys: t.field({ type: [ApiKeyType], resolve: (_root, _args, ctx) => listApiKeys(serviceCtx(ctx)) }),
  company: t.field({ type: CompanyType, resolve: (_root, _args, ctx) => getCompany(serviceCtx(ctx)) }),
}));

builder.mutationFields((t) => ({
  createUser: t.field({
    type: UserType,
    args: { email: t.arg.string({ required: true }), password: t.arg.string({ required: true }), role: t.arg({ type: RoleEnum, required: true }), name: t.arg.string() },
    resolve: (_root, args, ctx) => createUser(serviceCtx(ctx), args),
  }),
  updateUser: t.field({
    type: UserType,
    args: { id: t.arg.id({ required: true }), name: t.arg.string(), role: t.arg({ type: RoleEnum }) },
    resolve: (_root, args, ctx) => updateUser(serviceCtx(ctx), String(args.id), { name: args.name, role: args.role ?? undefined }),
  }),
  deactivateUser: t.field({
    type: UserType,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => deactivateUser(serviceCtx(ctx), String(args.id)),
  }),
  reactivateUser: t.field({
    type: UserType,
    description: 'Lets a deactivated member sign in again (CompanyAdmin). Their old sessions and API keys stay revoked.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => reactivateUser(serviceCtx(ctx), String(args.id)),
  }),
  createApiKey: t.field({
    type: CreatedApiKeyType,
    args: { name: t.arg.string({ required: true }), role: t.arg({ type: RoleEnum, required: true }) },
    resolve: (_root, args, ctx) => createApiKey(serviceCtx(ctx), args),
  }),
  revokeApiKey: t.field({
    type: ApiKeyType,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => revokeApiKey(serviceCtx(ctx), String(args.id)),
  }),
  updateCompanySettings: t.field({
    type: CompanyType,
    description: 'renewalUrl / supportEmail: shown to customers in their expiry emails; an empty string clears them.',
    args: { name: t.arg.string(), keyPrefix: t.arg.string(), renewalUrl: t.arg.string(), supportEmail: t.arg.string() },
    resolve: (_root, args, ctx) =>
      updateCompanySettings(serviceCtx(ctx), { name: args.name ?? undefined, keyPrefix: args.keyPrefix ?? undefined, renewalUrl: args.renewalUrl, supportEmail: args.supportEmail }),
  }),
}));
