import { initGraphQLTada } from 'gql.tada';
import type { introspection } from './graphql-env.d.ts';

/**
 * Typed GraphQL documents. The introspection types are generated from server/schema.graphql:
 * `pnpm --filter ./console graphql:types` after the schema changes.
 */
export const graphql = initGraphQLTada<{
  introspection: introspection;
  // Fragments describe shared selections; results are not masked (components read fields directly).
  disableMasking: true;
  scalars: { DateTime: string; JSON: unknown; ID: string };
}>();

export type { FragmentOf, ResultOf, VariablesOf } from 'gql.tada';

/** The values of a schema enum, e.g. EnumOf<'LicenseStatus'> = 'active' | 'expired' | 'revoked'. */
export type EnumOf<Name extends keyof introspection['types']> = introspection['types'][Name] extends { enumValues: infer Values } ? Values : never;
