import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../server/src/domain/errors.js';
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

describe('the error codes the management API page documents (docs/integrate/management-api.md, "Errors")', () => {
  /** Every `.ts` file under a directory. */
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? (entry.name === 'generated' ? [] : sources(path.join(dir, entry.name))) : entry.name.endsWith('.ts') ? [path.join(dir, entry.name)] : []));

  it('names every AppError code GraphQL can answer (all but the public API nonce codes), and its HTTP status', () => {
    const page = readFileSync('docs/integrate/management-api.md', 'utf8');
    const paragraph = /^\*\*Errors\.\*\*([\s\S]*?)\n\n/m.exec(page)![1];
    const documented = new Set([...paragraph.matchAll(/`(\w+)`/g)].map((match) => match[1]));
    // Only the public licensing API spends nonces: its two codes are thrown where a nonce is spent and nowhere else,
    // and no GraphQL operation takes one. Every other code can reach a GraphQL answer.
    const nonceCodes = ['NonceRequired', 'NonceInvalid'];
    const throwers = sources('server/src').filter((file) => nonceCodes.some((code) => readFileSync(file, 'utf8').includes(`new AppError('${code}'`)));
    expect(throwers.map((file) => path.relative('server/src', file)).sort()).toEqual(['services/licenses/activations.ts', 'services/licenses/nonces.ts']);
    expect(readFileSync('server/schema.graphql', 'utf8')).not.toMatch(/nonce/i);
    expect(Object.keys(ERROR_STATUS).filter((code) => !nonceCodes.includes(code) && !documented.has(code))).toEqual([]);
    // How they travel: HTTP 200 with extensions.code, but for the two that set the status.
    expect(paragraph).toMatch(/HTTP 200/);
    expect(paragraph).toMatch(/`RateLimited` is an HTTP\s+429/);
    expect(paragraph).toMatch(/`ServiceUnavailable` \(the database is away\) an HTTP 503/);
  });
});

