import SchemaBuilder from '@pothos/core';
import ComplexityPlugin from '@pothos/plugin-complexity';
import DataloaderPlugin from '@pothos/plugin-dataloader';
import PrismaPlugin from '@pothos/plugin-prisma';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import { GraphQLScalarType, Kind } from 'graphql';
import { DateTimeISOResolver } from 'graphql-scalars';
import { AppError } from '../domain/errors.js';
import type PrismaTypes from '../generated/pothos-prisma-types.js';
import { getDatamodel } from '../generated/pothos-prisma-types.js';
import type { GraphQLContext } from './context.js';

/**
 * The one Pothos builder: plugins and scalars only. Types live in graphql/schema/<domain>.ts.
 * Types backed by a table are `prismaObject`s (@pothos/plugin-prisma): their relations are `t.relation` /
 * `t.relationCount`, which the plugin folds into the query of the parent rows (one query per level of the answer,
 * never one per row). Root fields still call the services, which authorize the actor and scope by tenant; they pass
 * the plugin's planned selection (`queryFromInfo`) into their own query, so a keyset page returns rows whose
 * relations are already loaded. A relation Prisma cannot page per parent row (a license's activations: its nested
 * `take` reads every row and slices) is a `t.loadable` of the dataloader plugin over a service that pages all the
 * parents in one statement.
 * Auth scopes: `authenticated` (any user or API key), `admin` (CompanyAdmin role), `user` (a signed-in
 * user, for self-service). Query fields need `authenticated` and Mutation fields `admin` unless a field
 * says otherwise (skipTypeScopes) — the services check the same rules again.
 *
 * Conventions (test/graphql-conventions.test.ts checks them on the printed schema): enum values are
 * SCREAMING_CASE; every mutation takes one `input` argument (those with nothing to send take none) and returns an
 * object payload; every list of records is a Relay connection (edges/node/cursor, nodes, pageInfo, totalCount);
 * single lookups answer null when the record does not exist or belongs to another company.
 */
export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  PrismaTypes: PrismaTypes;
  Connection: { totalCount: number; totalCountCapped?: boolean };
  DefaultEdgesNullability: false;
  DefaultNodeNullability: false;
  AuthScopes: { authenticated: boolean; admin: boolean; user: boolean };
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    JSON: { Input: unknown; Output: unknown };
  };
  DefaultFieldNullability: false;
}>({
  plugins: [ScopeAuthPlugin, PrismaPlugin, RelayPlugin, DataloaderPlugin, ComplexityPlugin],
  // Only fields that recompute something large have a cost (`complexity: EXPENSIVE_FIELD_COST`); graphql-armor's flat
  // per-object cost limits the rest. The budget is checked when a query is validated (graphql/handler.ts).
  complexity: { defaultComplexity: 0, defaultListMultiplier: 1 },
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
    // Descriptions are written on the GraphQL fields, for API callers, not taken from the schema's /// comments.
    exposeDescriptions: false,
  },
  relay: {
    nodeQueryOptions: false,
    nodesQueryOptions: false,
    nodesOnConnection: {},
    edgesFieldOptions: { nullable: false },
    nodeFieldOptions: { nullable: false },
    pageInfoTypeOptions: { description: 'Pass endCursor as `after` (with `first`) for the next page, startCursor as `before` (with `last`) for the previous one.' },
  },
});

/**
 * The cost of a field that recomputes something large (activityLogIntegrity and the checkpoint file hash the newest
 * activity-log entries, activityLogVerification all of them): the whole budget, so a query holds one such field.
 */
export const EXPENSIVE_FIELD_COST = 1000;
export const QUERY_COST_BUDGET = 1000;

// graphql-scalars' RFC 3339 date-time, answered as an ISO 8601 string in UTC (Date#toISOString, what the console and
// the SDK read); an input that is not a full date-time with an offset is a client error (InvalidRequest). One
// addition: ECMAScript's expanded years (`+010000-01-01T00:00:00Z`, what Date#toISOString writes past 9999) name
// real instants outside RFC 3339; they are passed on as dates so the services refuse them with a field error
// ("must be a date between the years 1 and 9999") instead of an error without a field.
const rfc3339 = DateTimeISOResolver.toConfig();
const expandedYear = (value: unknown): Date | undefined => {
  if (typeof value !== 'string' || !/^[+-]\d{6}-/.test(value)) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
};
const DateTime = new GraphQLScalarType<Date, string>({
  ...rfc3339,
  parseValue: (value) => expandedYear(value) ?? rfc3339.parseValue!(value),
  parseLiteral: (ast, variables) => (ast.kind === Kind.STRING && expandedYear(ast.value)) || rfc3339.parseLiteral!(ast, variables),
} as ConstructorParameters<typeof GraphQLScalarType<Date, string>>[0]);
builder.addScalarType('DateTime', DateTime, { description: 'ISO 8601 date-time (UTC).' });

builder.scalarType('JSON', {
  description: 'Any JSON value.',
  serialize: (value) => value,
  parseValue: (value) => value,
});

builder.queryType({ authScopes: { authenticated: true } });
builder.mutationType({ authScopes: { admin: true } });

builder.globalConnectionFields((t) => ({
  totalCount: t.int({ description: 'Records matching, on all pages (lists over large tables stop counting at a cap: see totalCountCapped).', resolve: (connection) => connection.totalCount }),
  totalCountCapped: t.boolean({ description: 'True when more records match than totalCount says (show "10,000+").', resolve: (connection) => connection.totalCountCapped ?? false }),
}));

/** SCREAMING_CASE GraphQL values for internal values (CompanyAdmin → COMPANY_ADMIN, weekly-digest → WEEKLY_DIGEST). */
export const screamingCase = (value: string) =>
  value
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .toUpperCase();

/** Enum values object mapping SCREAMING_CASE names to the internal values the services use. */
export function screamingEnumValues<const V extends string>(values: readonly V[]) {
  return Object.fromEntries(values.map((value) => [screamingCase(value), { value }])) as Record<string, { value: V }>;
}

export const RoleEnum = builder.enumType('Role', {
  description: 'COMPANY_ADMIN manages everything; READ_ONLY sees the same data and changes nothing.',
  values: screamingEnumValues(['CompanyAdmin', 'ReadOnly'] as const),
});
