import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../server/src/config.js';
import { startTestApp, type TestApp } from './support/harness.js';

// X-Forwarded-For is written by the client; only hops appended by trusted proxies count.
const apps: TestApp[] = [];
afterAll(async () => {
  for (const app of apps) await app.close();
});

describe('client address behind proxies (TRUST_PROXY)', () => {
  it('parses false, true, a hop count and a CIDR list, and refuses nonsense', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toEqual({ addresses: ['loopback', 'linklocal', 'uniquelocal'] });
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toEqual({ hops: 2 });
    expect(loadConfig({ TRUST_PROXY: '127.0.0.1/8, 203.0.113.7' }).trustProxy).toEqual({ addresses: ['127.0.0.1/8', '203.0.113.7'] });
    expect(() => loadConfig({ TRUST_PROXY: 'not-an-address' })).toThrow(/TRUST_PROXY:/);
  });

  it('rotating forged X-Forwarded-For entries do not escape the per-IP limit, and the audit log stores the real address', async () => {
    const t = await startTestApp({ env: { RATE_LIMIT_PUBLIC_PER_MINUTE: '5' } });
    apps.push(t);
    // The client sends a fake leftmost address; the trusted proxy (loopback, the in-process peer) appends the real one.
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await t.get('/api/v1/nonce', { 'x-forwarded-for': `198.51.100.${i + 1}, 203.0.113.9` })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);

    await t.setupAdmin();
    const response = await t.gql('mutation { login(input: { email: "admin@acme.test", password: "wrong password!" }) { __typename } }', {}, { ip: '6.6.6.6, 203.0.113.10' });
    expect(response.errors?.[0].extensions?.code).toBe('Unauthorized');
    const failed = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { action: 'FailedLogin' } });
    expect(failed.ip).toBe('203.0.113.10');
  });

  it('with TRUST_PROXY=false the header is ignored; with a hop count only that many hops are skipped', async () => {
    const off = await startTestApp({ env: { TRUST_PROXY: 'false', RATE_LIMIT_PUBLIC_PER_MINUTE: '2' } });
    apps.push(off);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await off.get('/api/v1/nonce', { 'x-forwarded-for': `198.51.100.${i + 1}` })).status);
    expect(statuses).toEqual([200, 200, 429]);

    const hops = await startTestApp({ env: { TRUST_PROXY: '2', RATE_LIMIT_PUBLIC_PER_MINUTE: '2' } });
    apps.push(hops);
    // Peer (hop 0) and the rightmost entry (hop 1) are trusted: the client is the second entry from the right.
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) seen.push((await hops.get('/api/v1/nonce', { 'x-forwarded-for': `198.51.100.${i + 1}, 203.0.113.20, 10.0.0.1` })).status);
    expect(seen).toEqual([200, 200, 429]);
  });
});
