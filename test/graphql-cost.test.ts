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
