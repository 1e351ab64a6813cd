import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';

// GraphQL errors quote the real request id; anonymous callers get no field suggestions.
let t: TestApp;
let token: string;
beforeAll(async () => {
  // The test renames a table to force an unexpected failure: only the owner role may.
  t = await startTestApp({ dbRole: 'owner' });
  token = (await t.setupAdmin()).token;
});
afterAll(async () => {
  await t?.close();
});

describe('GraphQL errors', () => {
  it('an unexpected failure quotes the X-Request-Id of the response', async () => {
    await t.prisma.$executeRawUnsafe('ALTER TABLE api_keys RENAME TO api_keys_gone');
    try {
      const response = await t.gql('{ apiKeys { nodes { id } } }', {}, { token });
      const requestId = response.headers.get('x-request-id');
      expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(response.errors?.[0]).toMatchObject({ extensions: { code: 'InternalError' } });
      expect(response.errors?.[0].message).toContain(`Quote request id ${requestId}`);
      expect(t.logs.join('')).toContain(requestId);
    } finally {
      await t.prisma.$executeRawUnsafe('ALTER TABLE api_keys_gone RENAME TO api_keys');
    }
  });

  it('anonymous callers get no "Did you mean" suggestions; signed-in callers do', async () => {
    const anonymous = await t.gql('{ licences { totalCount } }');
    expect(anonymous.errors?.[0].message).toMatch(/Cannot query field "licences"/);
    expect(anonymous.text).not.toMatch(/Did you mean/);
    const signedIn = await t.gql('{ licences { totalCount } }', {}, { token });
    expect(signedIn.text).toMatch(/Did you mean/);
  });
});
