import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildClientSchema, buildSchema, getIntrospectionQuery, lexicographicSortSchema, printSchema, type GraphQLSchema, type IntrospectionQuery } from 'graphql';
import { portalSchema } from './portal/schema.js';
import { schema } from './schema/index.js';

/** The SDL committed as server/schema.graphql (`pnpm schema:print`); a test fails when it drifts. */
export const SCHEMA_FILE = fileURLToPath(new URL('../../schema.graphql', import.meta.url));
export const printSdl = () => `${printSchema(schema)}\n`;

/** The customer portal's SDL, committed as server/portal-schema.graphql (what a customer's session can reach). */
export const PORTAL_SCHEMA_FILE = fileURLToPath(new URL('../../portal-schema.graphql', import.meta.url));
export const printPortalSdl = () => `${printSchema(portalSchema)}\n`;

/** For the drift test: a served schema (introspection) and an SDL text in one comparable form, types sorted. */
export const INTROSPECTION_QUERY = getIntrospectionQuery({ descriptions: true });
const sorted = (built: GraphQLSchema) => printSchema(lexicographicSortSchema(built));
export const sortedSdlOfIntrospection = (result: IntrospectionQuery) => sorted(buildClientSchema(result));
export const sortedSdl = (sdl: string) => sorted(buildSchema(sdl));

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(SCHEMA_FILE, printSdl());
  writeFileSync(PORTAL_SCHEMA_FILE, printPortalSdl());
  process.stdout.write(`wrote ${SCHEMA_FILE} and ${PORTAL_SCHEMA_FILE}\n`);
}
