/**
 * The shape limits graphql-armor enforces on each GraphQL endpoint (handler.ts): a query past one is refused with
 * `InvalidRequest` before it runs. docs/reference/limits.md is generated from these.
 */
export interface QueryLimits {
  maxDepth: number;
  maxCost: number;
  maxAliases: number;
  maxDirectives: number;
  maxTokens: number;
}

/** The management API (`/api/graphql`): the console's largest queries fit with room to spare. */
export const MANAGEMENT_QUERY_LIMITS: QueryLimits = { maxDepth: 10, maxCost: 5000, maxAliases: 20, maxDirectives: 20, maxTokens: 2000 };

/** The customer portal (`/portal/<handle>/graphql`): anonymous callers reach it, its queries are small. */
export const PORTAL_QUERY_LIMITS: QueryLimits = { maxDepth: 6, maxCost: 2000, maxAliases: 10, maxDirectives: 10, maxTokens: 1000 };

/** The options of EnvelopArmorPlugin for one set of limits; field suggestions are never offered. */
export function armorOptions(limits: QueryLimits) {
  return {
    maxDepth: { n: limits.maxDepth },
    costLimit: { maxCost: limits.maxCost },
    maxAliases: { n: limits.maxAliases },
    maxDirectives: { n: limits.maxDirectives },
    maxTokens: { n: limits.maxTokens },
    blockFieldSuggestion: { enabled: false },
  };
}
