import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';

let t: TestApp;
let token: string;
beforeAll(async () => {
  t = await startTestApp();
  token = (await t.setupAdmin()).token;
});
afterAll(() => t.close());

describe('GraphQL query cost: activityLogIntegrity', () => {
  it('answers one activityLogIntegrity per query', async () => {
    const response = await t.gql('{ activityLogIntegrity { valid entries } }', {}, { token });
    expect(response.errors).toBeUndefined();
    expect(response.data.activityLogIntegrity.valid).toBe(true);
  });

  it("answers it with the console's shape: nested objects and a __typename in every selection set (urql adds them) cost nothing", async () => {
    const response = await t.gql(
      '{ __typename activityLogIntegrity { __typename valid entries pendingEntries lastFullVerification { __typename verifiedAt valid } latestCheckpoint { __typename seq createdAt } } }',
      {},
      { token },
    );
    expect(response.errors).toBeUndefined();
    expect(response.data.activityLogIntegrity.valid).toBe(true);
  });

  it('refuses a query that asks for it many times through aliases, before any resolver runs', async () => {
    const aliases = Array.from({ length: 10 }, (_, i) => `i${i}: activityLogIntegrity { valid }`).join(' ');
    const response = await t.gql(`{ ${aliases} }`, {}, { token });
    expect(response.data ?? undefined).toBeUndefined();
    expect(response.errors![0].message).toMatch(/cost limit/i);
  });

  it('counts it through fragments too', async () => {
    const spreads = Array.from({ length: 2 }, (_, i) => `q${i}: activityLogIntegrity { ...F }`).join(' ');
    const response = await t.gql(`{ ${spreads} } fragment F on ActivityLogIntegrity { valid }`, {}, { token });
    expect(response.errors![0].message).toMatch(/cost limit/i);
    const nested = await t.gql('query { ...Q } fragment Q on Query { a: activityLogIntegrity { valid } b: activityLogIntegrity { valid } }', {}, { token });
    expect(nested.errors![0].message).toMatch(/cost limit/i);
  });
});

describe('GraphQL query cost: the other activity-log checks', () => {
  it('the checkpoint file and the verification against kept checkpoints cost the whole budget too', async () => {
    const file = await t.gql('{ activityLogCheckpointFile }', {}, { token });
    expect(file.errors).toBeUndefined();
    for (const query of [
      '{ activityLogIntegrity { valid } activityLogCheckpointFile }',
      'query($c: String!) { activityLogIntegrity { valid } activityLogVerification(checkpoints: $c) { valid } }',
      'query($c: String!) { a: activityLogVerification(checkpoints: $c) { valid } b: activityLogVerification(checkpoints: $c) { valid } }',
    ]) {
      const response = await t.gql(query, { c: JSON.stringify(file.data.activityLogCheckpointFile) }, { token });
      expect(response.data ?? undefined, query).toBeUndefined();
      expect(response.errors![0].message).toMatch(/cost limit/i);
    }
    expect(await t.prisma.auditVerdict.count()).toBe(0); // refused before any resolver ran
    const one = await t.gql('query($c: String!) { activityLogVerification(checkpoints: $c) { valid checkpoints { status } } }', { c: JSON.stringify(file.data.activityLogCheckpointFile) }, { token });
    expect(one.data.activityLogVerification).toEqual({ valid: true, checkpoints: [{ status: 'EXTENDS' }] });
  });
});
