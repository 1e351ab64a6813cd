import { createHmac } from 'node:crypto';
import net from 'node:net';
import fc from 'fast-check';
import pg from 'pg';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { createPaymentConnection, mapPaymentPrice, paymentWebhookPath } from '../server/src/services/payments/connections.js';
import { createPlan } from '../server/src/services/plans.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { hostileString, hostileValue } from './support/hostile.js';
import { adminUrl } from './support/pg.js';
import { waitUntil } from './support/wait.js';

// The payment webhook route under hostile deliveries (no server error, nothing written unless signed), and a
// database outage in the middle of applying a purchase: 503, nothing half-written, and the provider's retry applies
// it once. The app reaches PostgreSQL through a TCP relay the test can cut, so the outage is real and fast.

const RUNS = Number(process.env.FUZZ_PAYMENT_BODIES ?? 2000);
const clock = TestClock.startingNow();
let t: TestApp;
let relay: net.Server;
const sockets = new Set<net.Socket>();
let relayOpen = true;
const secrets = { stripe: 'whsec_fault_0123456789', paddle: 'pdl_fault_0123456789', lemonsqueezy: 'ls_fault_0123456789' } as const;
const ids = {} as Record<keyof typeof secrets, string>;
let tenantId: string;

beforeAll(async () => {
  // The run's own server (the machine's, or the cluster this run provisioned on a free port): never a fixed port.
  const database = new URL(adminUrl());
  relay = net.createServer((client) => {
    if (!relayOpen) return client.destroy();
    const upstream = net.connect(Number(database.port || 5432), database.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {}).on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const port = (relay.address() as net.AddressInfo).port;
  const viaRelay = (url: string) => {
    const parsed = new URL(url);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(port);
    return parsed.toString();
  };
  t = await startTestApp({ clock, connectVia: viaRelay });
  tenantId = (await t.setupAdmin()).user.tenantId;
  const ctx = () => ({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(tenantId), meta: NO_META });
  const product = await t.seedProduct(tenantId, 'Acme Studio');
  const plan = await createPlan(ctx(), { productId: product.id, name: 'Pro', duration: 'P1Y', maxActivations: 1 });
  for (const provider of ['stripe', 'paddle', 'lemonsqueezy'] as const) {
    ids[provider] = (await createPaymentConnection(ctx(), { provider, signingSecret: secrets[provider] })).id;
    await mapPaymentPrice(ctx(), ids[provider], { priceId: 'price_pro', planId: plan.id });
  }
}, 60_000);
afterAll(async () => {
  await t?.close();
  for (const socket of sockets) socket.destroy();
  relay?.close();
});

const counts = async () => {
  const [events, states, licenses, emails] = await Promise.all([t.prisma.paymentEvent.count(), t.prisma.paymentSubscription.count(), t.prisma.license.count(), t.prisma.emailOutbox.count()]);
  return { events, states, licenses, emails };
};

const body = fc.oneof(
  hostileValue.map((value) => JSON.stringify(value) ?? 'null'),
  hostileString,
  fc.record({ id: hostileString, type: fc.constantFrom('invoice.paid', 'checkout.session.completed', 'charge.refunded'), data: fc.record({ object: hostileValue }) }).map((value) => JSON.stringify(value)),
  fc.record({ event_id: hostileString, event_type: fc.constantFrom('transaction.completed', 'subscription.updated'), data: hostileValue }).map((value) => JSON.stringify(value)),
  fc.record({ meta: fc.record({ event_name: fc.constantFrom('order_created', 'order_refunded') }), data: hostileValue }).map((value) => JSON.stringify(value)),
);
const now = () => Math.floor(Date.now() / 1000);
const hex = fc.stringMatching(/^[0-9a-f]{0,80}$/);

/** Header sets that do not sign the body with the connection's secret: none, garbage, another secret, another body, stale. */
const headerSets = {
  stripe: fc.oneof(
    fc.constant({}),
    hostileString.map((value) => ({ 'stripe-signature': value.replace(/[\r\n\0]/g, '').slice(0, 4000) })),
    fc.tuple(fc.integer(), hex).map(([ts, v1]) => ({ 'stripe-signature': `t=${ts},v1=${v1}` })),
    fc.constantFrom('whsec_other_secret', secrets.paddle).map((secret) => ({ 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload: '{}', secret, timestamp: now() }) })),
    fc.constant({ 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload: 'another body', secret: secrets.stripe, timestamp: now() }) }),
  ),
  paddle: fc.oneof(
    fc.constant({}),
    hostileString.map((value) => ({ 'paddle-signature': value.replace(/[\r\n\0]/g, '').slice(0, 4000) })),
    fc.tuple(fc.integer(), hex).map(([ts, h1]) => ({ 'paddle-signature': `ts=${ts};h1=${h1}` })),
    fc.constant(null).map(() => {
      const ts = now();
      return { 'paddle-signature': `ts=${ts};h1=${createHmac('sha256', secrets.paddle).update(`${ts}:another body`).digest('hex')}` };
    }),
  ),
  lemonsqueezy: fc.oneof(
    fc.constant({}),
    hostileString.map((value) => ({ 'x-signature': value.replace(/[\r\n\0]/g, '').slice(0, 4000) })),
    hex.map((value) => ({ 'x-signature': value })),
    fc.constant({ 'x-signature': createHmac('sha256', secrets.lemonsqueezy).update('another body').digest('hex') }),
  ),
};

const safeHeaders = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, value.replace(/[^\t\x20-\x7e]/g, '?')]));

describe('a database outage in the middle of a purchase', () => {
  it('answers 503 with nothing half-written; the retry applies it once', async () => {
    const event = {
      id: 'evt_outage_1',
      object: 'event',
      created: now(),
      type: 'invoice.paid',
      data: { object: { id: 'in_outage', object: 'invoice', billing_reason: 'subscription_create', customer_email: 'outage@example.com', subscription: 'sub_outage', lines: { data: [{ price: { id: 'price_pro' }, quantity: 1, period: { end: now() + 365 * 86400 } }] } } },
    };
    const payload = JSON.stringify(event);
    const send = () => t.post(paymentWebhookPath(ids.stripe), payload, { 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: secrets.stripe, timestamp: now() }) });
    const before = await counts();
    // Hold the outbox so the delivery's transaction stops after the license is written, then cut the database off.
    const blocker = new pg.Client({ connectionString: t.ownerUrl });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE email_outbox IN EXCLUSIVE MODE');
    // pg_stat_activity is read from another session: within the blocker's transaction it would be a snapshot.
    const watcher = new pg.Client({ connectionString: t.ownerUrl });
    await watcher.connect();
    let answer: Awaited<ReturnType<typeof send>>;
    try {
      let settled: unknown;
      const delivery = send().then((response) => (settled = response));
      await waitUntil(
        async () => (await watcher.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%email_outbox%'`)).rows[0].n > 0,
        { timeout: 40_000, what: `the delivery to wait on the outbox (answered: ${JSON.stringify(settled)})` },
      );
      relayOpen = false;
      for (const socket of sockets) socket.destroy();
      answer = await delivery;
    } finally {
      relayOpen = true;
      await blocker.query('ROLLBACK');
      await blocker.end();
      await watcher.end();
    }
    expect(answer.status, answer.text).toBe(503);
    expect(answer.headers.get('retry-after')).toBeTruthy();
    expect(await counts()).toEqual(before);
    // The provider retries: applied once, then a duplicate.
    let retry = await send();
    for (let attempt = 0; retry.status === 503 && attempt < 20; attempt++) retry = await send();
    expect(retry.json).toEqual({ received: true, outcome: 'applied' });
    expect((await send()).json).toEqual({ received: true, outcome: 'duplicate' });
    expect(await counts()).toEqual({ ...before, events: before.events + 1, states: before.states + 1, licenses: before.licenses + 1, emails: before.emails + 1 });
  }, 60_000);
});

describe(`the payment webhook route under ${RUNS} hostile deliveries per provider`, { timeout: 300_000 }, () => {
  for (const provider of ['stripe', 'paddle', 'lemonsqueezy'] as const) {
    it(`${provider}: unsigned or badly signed → 4xx, never a server error, nothing written`, async () => {
      const before = await counts();
      const statuses = new Map<number, number>();
      const samples = fc.sample(fc.tuple(body, headerSets[provider], fc.constantFrom('application/json', 'text/plain', '')), { numRuns: RUNS, seed: 37 });
      for (let at = 0; at < samples.length; at += 20) {
        await Promise.all(
          samples.slice(at, at + 20).map(async ([text, headers, type]) => {
            const answer = await t.post(paymentWebhookPath(ids[provider]), text, { ...safeHeaders(headers as Record<string, string>), ...(type && { 'content-type': type }) });
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
            expect(answer.status, answer.text).toBeLessThan(500);
            expect(answer.status).not.toBe(200);
          }),
        );
      }
      expect(await counts()).toEqual(before);
      expect(statuses.get(401)).toBeGreaterThan(RUNS / 2);
    });
  }

  it('stripe: signed hostile payloads → never a server error', async () => {
    const samples = fc.sample(body, { numRuns: Math.ceil(RUNS / 4), seed: 38 });
    for (let at = 0; at < samples.length; at += 20) {
      await Promise.all(
        samples.slice(at, at + 20).map(async (text) => {
          const header = Stripe.webhooks.generateTestHeaderString({ payload: text, secret: secrets.stripe, timestamp: now() });
          const answer = await t.post(paymentWebhookPath(ids.stripe), text, { 'stripe-signature': header });
          expect(answer.status, answer.text).toBeLessThan(500);
        }),
      );
    }
  });
});
