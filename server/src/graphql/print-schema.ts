import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { printSchema } from 'graphql';
import { schema } from './schema/index.js';

/** The SDL committed as server/schema.graphql (`pnpm schema:print`); a test fails when it drifts. */
export const SCHEMA_FILE = fileURLToPath(new URL('../../schema.graphql', import.meta.url));
export const printSdl = () => `${printSchema(schema)}\n`;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(SCHEMA_FILE, printSdl());
  process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
}
