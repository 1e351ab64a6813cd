import { initGraphQLTada } from 'gql.tada';
import type { introspection } from './graphql-env.d.ts';

/**
 * Typed GraphQL documents. The introspection types are generated from server/schema.graphql:
 * `pnpm --filter ./console graphql:types` after the schema changes.
 */
export const graphql = initGraphQLTada<{
  introspection: introspection;
  // Fragment masking is on: a component reads the fields of its own fragment with readFragment, and the
  // query that spreads the fragment sees only an opaque reference to them.
  scalars: { DateTime: string; JSON: unknown; ID: string };
}>();

export { readFragment } from 'gql.tada';
export type { FragmentOf, ResultOf, VariablesOf } from 'gql.tada';

/** The values of a schema enum, e.g. EnumOf<'LicenseStatus'> = 'active' | 'expired' | 'revoked'. */
export type EnumOf<Name extends keyof introspection['types']> = introspection['types'][Name] extends { enumValues: infer Values } ? Values : never;
