import { readFileSync } from 'node:fs';
import { buildSchema } from 'graphql';
import { expect, it } from 'vitest';
import { fuzzMutationsHalf, NOT_FUZZED, operations } from './support/fuzz-graphql-mutations.js';

// Every mutation under hostile variables: the first half here, the second in fuzz-graphql-mutations-second-half.
it('fuzzes every mutation of the schema except the ones listed with a reason', () => {
  const schema = buildSchema(readFileSync(new URL('../server/schema.graphql', import.meta.url), 'utf8'));
  const all = Object.keys(schema.getMutationType()!.getFields()).sort();
  expect([...operations.map((op) => op.name), ...NOT_FUZZED].sort()).toEqual(all);
});

fuzzMutationsHalf(0);
