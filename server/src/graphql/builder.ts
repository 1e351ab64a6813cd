import SchemaBuilder from '@pothos/core';
import PrismaPlugin from '@pothos/plugin-prisma';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import { GraphQLError, Kind } from 'graphql';
import { AppError } from '../domain/errors.js';
import type PrismaTypes from '../generated/pothos-types.js';
import { getDatamodel } from '../generated/pothos-types.js';
import type { GraphQLContext } from './context.js';

/**
 * The one Pothos builder: plugins and scalars only. Types live in graphql/schema/<domain>.ts.
 * Auth scopes: `authenticated` (any user or API key), `admin` (CompanyAdmin role), `user` (a signed-in
 * user, for self-service). Query fields need `authenticated` and Mutation fields `admin` unless a field
 * says otherwise (skipTypeScopes) — the services check the same rules again.
 */
export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  PrismaTypes: PrismaTypes;
  AuthScopes: { authenticated: boolean; admin: boolean; user: boolean };
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    JSON: { Input: unknown; Output: unknown };
  };
  DefaultFieldNullability: false;
}>({
  plugins: [ScopeAuthPlugin, PrismaPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    authScopes: (ctx) => ({ authenticated: ctx.actor !== null, admin: ctx.actor?.role === 'CompanyAdmin', user: ctx.actor?.kind === 'user' }),
    unauthorizedError: (_parent, ctx) =>
      ctx.actor
        ? new AppError('Forbidden', 'Your role does not allow this: it needs a CompanyAdmin (or a signed-in user for your own settings).')
        : new AppError('Unauthorized', 'Sign in, or send an API key in X-Api-Key.'),
  },
  prisma: {
    client: (ctx) => ctx.deps.db.prisma,
    dmmf: getDatamodel(),
    exposeDescriptions: false,
    filterConnectionTotalCount: true,
  },
});

builder.scalarType('DateTime', {
  description: 'ISO 8601 date-time (UTC).',
  serialize: (value) => (value instanceof Date ? value.toISOString() : String(value)),
  parseValue: (value) => {
    const date = typeof value === 'string' ? new Date(value) : null;
    if (!date || Number.isNaN(date.getTime())) throw new GraphQLError('DateTime must be an ISO 8601 string.', { extensions: { code: 'InvalidRequest' } });
    return date;
  },
  parseLiteral: (ast) => {
    const date = ast.kind === Kind.STRING ? new Date(ast.value) : null;
    if (!date || Number.isNaN(date.getTime())) throw new GraphQLError('DateTime must be an ISO 8601 string.', { extensions: { code: 'InvalidRequest' } });
    return date;
  },
});

builder.scalarType('JSON', {
  description: 'Any JSON value.',
  serialize: (value) => value,
  parseValue: (value) => value,
});

builder.queryType({ authScopes: { authenticated: true } });
builder.mutationType({ authScopes: { admin: true } });

export const RoleEnum = builder.enumType('Role', { values: ['CompanyAdmin', 'ReadOnly'] as const });
