/**
 * The `extensions.code` values graphql-yoga itself gives a request refused before any resolver runs (answered with
 * HTTP 200, as GraphQL errors are): a document that does not parse, or that does not validate against the schema (an
 * unknown field, a wrong argument). Every other code is one of ERROR_STATUS (domain/errors.ts). Listed here for the
 * error-code reference (docs/reference/errors.md); test/docs-errors.test.ts checks that yoga answers these.
 */
export const GRAPHQL_REQUEST_ERROR_CODES = ['GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED'] as const;
