import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import Stripe from 'stripe';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { createPaymentConnection, paymentWebhookPath } from '../server/src/services/payments/connections.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { itWith, needRedis } from './support/optional.js';

const redisNeed = await needRedis();

const apps: TestApp[] = [];
afterAll(async () => {
  for (const app of apps) await app.close();
});
const start = async (env: Record<string, string>) => {
  const app = await startTestApp({ env });
  apps.push(app);
  return app;
};
const from = (ip: string) => ({ 'x-forwarded-for': ip });

describe('rate limits (docs/integrate/rest-api.md "HTTP errors": 429 with Retry-After)', () => {
  it('limits each IP on /api/v1/* and answers 429 with Retry-After and the error body', async () => {
    const t = await start({ RATE_LIMIT_PUBLIC_PER_MINUTE: '3' });
    for (let i = 0; i < 3; i++) expect((await t.get('/api/v1/nonce', from('198.51.100.1'))).status).toBe(200);
    const limited = await t.get('/api/v1/nonce', from('198.51.100.1'));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(limited.json).toEqual({ error: { code: 'RateLimited', message: expect.stringContaining('retry'), requestId: expect.any(String) } });
    // Another address has its own budget; non-public routes are not counted.
    expect((await t.get('/api/v1/nonce', from('198.51.100.2'))).status).toBe(200);
    expect((await t.get('/healthz', from('198.51.100.1'))).status).toBe(200);
  });

  it('limits each tenant once the key identifies it, across IPs, without consuming a nonce', async () => {
    const t = await start({ RATE_LIMIT_TENANT_PER_MINUTE: '2' });
    const { key } = await t.seedBasic();
    expect((await t.post('/api/v1/validate', { licenseKey: key }, from('10.0.0.1'))).json.isValid).toBe(true);
    expect((await t.post('/api/v1/validate', { licenseKey: key }, from('10.0.0.2'))).json.isValid).toBe(true);
    const nonce = await t.nonce();
    const limited = await t.post('/api/v1/activate', { licenseKey: key, nonce }, from('10.0.0.3'));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.json.error.code).toBe('RateLimited');
    // The refused activation rolled back: its nonce is still unused.
    expect(await t.prisma.nonce.count({ where: { consumedAt: { not: null } } })).toBe(0);
    // Another tenant is unaffected.
    const other = await t.seedTenant({ name: 'Other', keyPrefix: 'OTHR' });
    const product = await t.seedProduct(other.id);
    const { key: otherKey } = await t.seedLicense(other.id, product.id);
    expect((await t.post('/api/v1/validate', { licenseKey: otherKey }, from('10.0.0.4'))).json.isValid).toBe(true);
  });

  it('limits each license below its tenant: one customer key cannot spend the tenant budget', async () => {
    const t = await start({ RATE_LIMIT_LICENSE_PER_MINUTE: '2', RATE_LIMIT_TENANT_PER_MINUTE: '5' });
    const { tenant, product, key } = await t.seedBasic();
    const { key: otherKey } = await t.seedLicense(tenant.id, product.id);
    const { key: thirdKey } = await t.seedLicense(tenant.id, product.id);
    for (let i = 0; i < 2; i++) expect((await t.post('/api/v1/validate', { licenseKey: key }, from(`10.1.0.${i}`))).json.isValid).toBe(true);
    // The third call of the same key is refused like the tenant limit: 429, Retry-After, the error body.
    for (let i = 0; i < 3; i++) {
      const limited = await t.post('/api/v1/validate', { licenseKey: key }, from('10.1.1.1'));
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(limited.json.error.code).toBe('RateLimited');
      expect([limited.headers.get('ratelimit-limit'), limited.headers.get('ratelimit-remaining')]).toEqual(['2', '0']);
      expect(limited.headers.get('ratelimit-reset')).toBe(limited.headers.get('retry-after'));
    }
    // Refusals did not spend the tenant's budget (5): other licenses of the same tenant still get the 3 calls left.
    for (let i = 0; i < 2; i++) expect((await t.post('/api/v1/validate', { licenseKey: otherKey }, from('10.1.2.1'))).json.isValid).toBe(true);
    expect((await t.post('/api/v1/validate', { licenseKey: thirdKey }, from('10.1.2.1'))).json.isValid).toBe(true);
    expect((await t.post('/api/v1/validate', { licenseKey: thirdKey }, from('10.1.2.1'))).status).toBe(429);
  });

  it('counts only refused payment deliveries against the IP: a provider delivering every company\'s events is not limited', async () => {
    const t = await start({ RATE_LIMIT_PUBLIC_PER_MINUTE: '3' });
    const tenantId = (await t.setupAdmin()).user.tenantId;
    const secret = 'whsec_rate_limit_0123456789';
    const ctx = { db: t.deps.db, secrets: t.deps.secrets, now: new Date(), actor: systemActor(tenantId), meta: NO_META };
    const connection = await createPaymentConnection(ctx, { provider: 'stripe', signingSecret: secret, refundAction: 'suspend' });
    const deliver = (id: string, signed = true) => {
      // An event type Keyforge does not act on: verified, answered 200 and recorded as ignored.
      const at = Math.floor(t.clock.now().getTime() / 1000); // the app's clock, which the signature's age is checked against
      const payload = JSON.stringify({ id, object: 'event', api_version: '2025-08-27.basil', created: at, data: { object: { id: 'cus_1', object: 'customer' } }, livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, type: 'customer.created' });
      const signature: Record<string, string> = signed ? { 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: at }) } : {};
      return t.post(paymentWebhookPath(connection.id), payload, { ...signature, ...from('203.0.113.50') });
    };
    for (let i = 0; i < 8; i++) {
      const verified = await deliver(`evt_rl_${i}`);
      expect(verified.status).toBe(200);
      expect(verified.headers.get('ratelimit-remaining')).toBeNull(); // not counted, so no budget to report
    }
    // The same address still has its whole public budget.
    expect((await t.get('/api/v1/nonce', from('203.0.113.50'))).headers.get('ratelimit-remaining')).toBe('2');
    // Refusals are counted with it (1 spent above): two unsigned deliveries spend the rest, then the address is refused.
    expect((await deliver('evt_rl_unsigned_1', false)).status).toBe(401);
    expect((await deliver('evt_rl_unsigned_2', false)).status).toBe(401);
    const limited = await deliver('evt_rl_after');
    expect(limited.status).toBe(429);
    expect(limited.json.error.code).toBe('RateLimited');
    expect((await t.get('/api/v1/nonce', from('203.0.113.50'))).status).toBe(429);
    expect(await t.prisma.paymentEvent.count()).toBe(8);
  });

  itWith(redisNeed)('with REDIS_URL, two server instances share one budget', async () => {
    const { url } = redisNeed;
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    await redis.quit();
    const env = { REDIS_URL: url, RATE_LIMIT_PUBLIC_PER_MINUTE: '4' };
    const a = await start(env);
    const b = await start(env);
    const ip = `192.0.2.${Math.floor(Math.random() * 250) + 1}-${Date.now()}`;
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await (i % 2 ? a : b).get('/api/v1/nonce', from(ip))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
  });
});
