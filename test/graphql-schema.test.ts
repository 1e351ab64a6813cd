import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SCHEMA_FILE, printSdl } from '../server/src/graphql/print-schema.js';

describe('server/schema.graphql', () => {
  it('matches the schema the code builds', () => {
    const committed = readFileSync(SCHEMA_FILE, 'utf8');
    expect(committed, 'server/schema.graphql is out of date with server/src/graphql: run `pnpm schema:print` and commit the file').toBe(printSdl());
  });
});
