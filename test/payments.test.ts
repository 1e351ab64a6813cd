import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import pg from 'pg';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import type { ServiceContext } from '../server/src/services/context.js';
import { createPaymentConnection, mapPaymentPrice, paymentWebhookPath } from '../server/src/services/payments/connections.js';
import { renewLicense } from '../server/src/services/licenses/lifecycle.js';
import { updateLicense } from '../server/src/services/licenses/management.js';
import { createPlan, updatePlan } from '../server/src/services/plans.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { capturedSelects } from './support/statements.js';
import { stripeEventEnvelope } from './support/stripe.js';

// Payment providers end to end over real HTTP: deliveries signed the way each provider signs them (Stripe's own
// test helper; Paddle's and Lemon Squeezy's documented HMACs), the full lifecycle of a subscription per provider,
// refusals that write nothing, exactly-once under concurrent duplicates, and the same final state whatever the
// delivery order of a subscription's events.

const T0 = Date.parse('2026-06-01T12:00:00.000Z');
const clock = new TestClock(T0);
let t: TestApp;
let tenantId: string;
const plans: Record<string, { id: string; maxActivations: number }> = {};
const connections: Record<'stripe' | 'paddle' | 'lemonsqueezy', { id: string; secret: string }> = {} as never;

const sys = (): ServiceContext => ({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(tenantId), meta: NO_META });
const sec = (ms: number) => Math.floor(ms / 1000);

beforeAll(async () => {
  t = await startTestApp({ clock });
  tenantId = (await t.setupAdmin()).user.tenantId;
  const product = await t.seedProduct(tenantId, 'Acme Studio');
  plans.pro = await createPlan(sys(), { productId: product.id, name: 'Pro monthly', duration: 'P1M', maxActivations: 2, features: ['pro'] });
  plans.team = await createPlan(sys(), { productId: product.id, name: 'Team monthly', duration: 'P1M', maxActivations: 5, features: ['pro', 'team'] });
  for (const [provider, secret] of [['stripe', 'whsec_test_0123456789abcdef'], ['paddle', 'pdl_ntfset_test_0123456789'], ['lemonsqueezy', 'ls-signing-secret-0123']] as const) {
    const connection = await createPaymentConnection(sys(), { provider, signingSecret: secret, refundAction: provider === 'lemonsqueezy' ? 'revoke' : 'suspend' });
    connections[provider] = { id: connection.id, secret };
    const ids = provider === 'stripe' ? ['price_pro', 'price_team'] : provider === 'paddle' ? ['pri_pro', 'pri_team'] : ['101', '102'];
    await mapPaymentPrice(sys(), connection.id, { priceId: ids[0], planId: plans.pro.id });
    await mapPaymentPrice(sys(), connection.id, { priceId: ids[1], planId: plans.team.id });
  }
}, 60_000);
afterAll(() => t?.close());

// ---- Stripe fixtures (shapes of Stripe's documented events, API version 2025-03-31 and later) ----
let stripeSeq = 0;
const stripeEvent = (type: string, object: Record<string, unknown>, created = sec(clock.now().getTime())) =>
  stripeEventEnvelope(`evt_${(++stripeSeq).toString().padStart(6, '0')}${Math.random().toString(36).slice(2, 10)}`, type, object, created);
const stripeInvoice = (sub: string, invoice: string, reason: string, price: string, quantity: number, periodEnd: number, email = 'buyer@example.com') => ({
  id: invoice,
  object: 'invoice',
  billing_reason: reason,
  customer: 'cus_1',
  customer_email: email,
  status: 'paid',
  payment_intent: `pi_${invoice}`,
  parent: { type: 'subscription_details', subscription_details: { subscription: sub, metadata: {} } },
  lines: { object: 'list', has_more: false, data: [{ id: `il_${invoice}`, object: 'line_item', quantity, period: { start: periodEnd - 30 * 86400, end: periodEnd }, pricing: { type: 'price_details', price_details: { price, product: 'prod_1' } } }] },
});
const stripeSubscription = (sub: string, price: string, quantity: number, extra: Record<string, unknown> = {}) => ({
  id: sub,
  object: 'subscription',
  status: 'active',
  cancel_at_period_end: false,
  cancel_at: null,
  canceled_at: null,
  ended_at: null,
  items: { object: 'list', data: [{ id: 'si_1', object: 'subscription_item', price: { id: price, object: 'price' }, quantity, current_period_end: sec(T0 + 60 * DAY) }] },
  ...extra,
});

async function sendStripe(event: object, options: { secret?: string; timestamp?: number; connectionId?: string } = {}) {
  const payload = JSON.stringify(event);
  const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: options.secret ?? connections.stripe.secret, timestamp: options.timestamp ?? sec(clock.now().getTime()) });
  return t.post(paymentWebhookPath(options.connectionId ?? connections.stripe.id), payload, { 'stripe-signature': header });
}

async function sendPaddle(event: object, secret = connections.paddle.secret) {
  const payload = JSON.stringify(event);
  const ts = sec(Date.now()); // the SDK checks the timestamp against the wall clock
  const h1 = createHmac('sha256', secret).update(`${ts}:${payload}`).digest('hex');
  return t.post(paymentWebhookPath(connections.paddle.id), payload, { 'paddle-signature': `ts=${ts};h1=${h1}` });
}

async function sendLemon(event: object, secret = connections.lemonsqueezy.secret) {
  const payload = JSON.stringify(event);
  return t.post(paymentWebhookPath(connections.lemonsqueezy.id), payload, { 'x-signature': createHmac('sha256', secret).update(payload).digest('hex'), 'x-event-name': (event as { meta: { event_name: string } }).meta.event_name });
}

const licenseOf = async (connectionId: string, subject: string) => {
  const state = await t.prisma.paymentSubscription.findUnique({ where: { connectionId_subject: { connectionId, subject } } });
  return state?.licenseId ? t.prisma.license.findUniqueOrThrow({ where: { id: state.licenseId } }) : null;
};
/** The recorded events of one subscription: each one's outcome and license, by provider event id. */
const eventsOf = async (connectionId: string, subject: string) =>
  Object.fromEntries((await t.prisma.paymentEvent.findMany({ where: { connectionId, subject } })).map((event) => [event.providerEventId, { outcome: event.outcome, licenseId: event.licenseId }]));
const rowCounts = async () => {
  const [events, states, licenses, emails, audit] = await Promise.all([t.prisma.paymentEvent.count(), t.prisma.paymentSubscription.count(), t.prisma.license.count(), t.prisma.emailOutbox.count(), t.prisma.auditLogEntry.count()]);
  return { events, states, licenses, emails, audit };
};

describe('Stripe', () => {
  it('runs a subscription through purchase, renewal, plan change, cancellation and refund', async () => {
    const sub = 'sub_lifecycle';
    // The Checkout Session comes before the invoice that carries the price: it waits for it.
    expect((await sendStripe(stripeEvent('checkout.session.completed', { id: 'cs_1', object: 'checkout.session', mode: 'subscription', payment_status: 'paid', subscription: sub, invoice: 'in_l1', customer_details: { email: 'buyer@example.com' } }))).json).toEqual({ received: true, outcome: 'pending' });
    const purchase = await sendStripe(stripeEvent('invoice.paid', stripeInvoice(sub, 'in_l1', 'subscription_create', 'price_pro', 2, sec(T0 + 30 * DAY))));
    expect(purchase.status).toBe(200);
    let license = (await licenseOf(connections.stripe.id, sub))!;
    expect(license).toMatchObject({ planId: plans.pro.id, maxActivations: 4, customerEmail: 'buyer@example.com', status: 'active', features: ['pro'] });
    expect(license.expiresAt!.getTime()).toBe(sec(T0 + 30 * DAY) * 1000);
    const emails = await t.prisma.emailOutbox.findMany({ where: { kind: 'license-key', toAddress: 'buyer@example.com' } });
    expect(emails).toHaveLength(1);
    expect(emails[0].text).not.toMatch(/ACME-[A-Z0-9]{4}-/); // the stored body has a placeholder; the key is sealed
    expect(t.outboxText(emails[0])).toMatch(/Your license key: [A-Z0-9]+-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}/);
    expect(emails[0].text).not.toContain('customer portal'); // this company's portal is off
    const audit = await t.prisma.auditLogEntry.findMany({ where: { entityId: license.id }, orderBy: { seq: 'asc' } });
    expect(audit[0]).toMatchObject({ action: 'CreateLicense' });
    expect(audit[0].actor).toMatch(/^Stripe evt_/);

    clock.advance(30 * DAY);
    await sendStripe(stripeEvent('invoice.paid', stripeInvoice(sub, 'in_l2', 'subscription_cycle', 'price_pro', 2, sec(T0 + 60 * DAY))));
    license = (await licenseOf(connections.stripe.id, sub))!;
    expect(license.expiresAt!.getTime()).toBe(sec(T0 + 60 * DAY) * 1000);

    await sendStripe(stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_team', 3)));
    license = (await licenseOf(connections.stripe.id, sub))!;
    expect(license).toMatchObject({ planId: plans.team.id, maxActivations: 15, features: ['pro', 'team'] });

    clock.advance(DAY);
    await sendStripe(stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_team', 3, { cancel_at_period_end: true, cancel_at: sec(T0 + 60 * DAY) })));
    license = (await licenseOf(connections.stripe.id, sub))!;
    expect(license.expiresAt!.getTime()).toBe(sec(T0 + 60 * DAY) * 1000);

    clock.advance(DAY);
    await sendStripe(stripeEvent('customer.subscription.deleted', stripeSubscription(sub, 'price_team', 3, { status: 'canceled', ended_at: sec(clock.now().getTime()) })));
    license = (await licenseOf(connections.stripe.id, sub))!;
    expect(license.expiresAt!.getTime()).toBe(sec(clock.now().getTime()) * 1000);

    await sendStripe(stripeEvent('charge.refunded', { id: 'ch_l2', object: 'charge', refunded: true, payment_intent: 'pi_in_l2' }));
    license = (await licenseOf(connections.stripe.id, sub))!;
    expect(license.status).toBe('suspended');
    const actions = (await t.prisma.auditLogEntry.findMany({ where: { entityId: license.id }, orderBy: { seq: 'asc' } })).map((entry) => entry.action);
    expect(actions).toEqual(['CreateLicense', 'RenewLicense', 'UpdateLicense', 'UpdateLicense', 'SuspendLicense']);
    const events = await t.prisma.paymentEvent.findMany({ where: { connectionId: connections.stripe.id, subject: sub } });
    expect(events).toHaveLength(7);
    expect(events.every((event) => event.outcome === 'applied' && event.licenseId === license.id)).toBe(true);
  });

  it('records an update that comes before its purchase as pending, then applies it to the purchase’s license', async () => {
    const sub = 'sub_early_update';
    const at = sec(clock.now().getTime());
    const purchase = stripeEvent('invoice.paid', stripeInvoice(sub, 'in_e1', 'subscription_create', 'price_pro', 1, at + 30 * 86400, 'early@example.com'), at);
    const update = stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_team', 2), at + 60);
    expect((await sendStripe(update)).json).toEqual({ received: true, outcome: 'pending' });
    expect(await eventsOf(connections.stripe.id, sub)).toEqual({ [update.id]: { outcome: 'pending', licenseId: null } });
    // Redelivered while it waits: a duplicate, still waiting.
    expect((await sendStripe(update)).json.outcome).toBe('duplicate');
    expect(await licenseOf(connections.stripe.id, sub)).toBeNull();

    expect((await sendStripe(purchase)).json.outcome).toBe('applied');
    const license = (await licenseOf(connections.stripe.id, sub))!;
    expect(license).toMatchObject({ planId: plans.team.id, maxActivations: 10, customerEmail: 'early@example.com' });
    expect(await eventsOf(connections.stripe.id, sub)).toEqual({ [update.id]: { outcome: 'applied', licenseId: license.id }, [purchase.id]: { outcome: 'applied', licenseId: license.id } });
    expect((await sendStripe(update)).json.outcome).toBe('duplicate');
    expect((await sendStripe(purchase)).json.outcome).toBe('duplicate');
    expect(await t.prisma.license.count({ where: { customerEmail: 'early@example.com' } })).toBe(1);

    // What the vendor sees on the connection's events.
    const { token } = await t.login('admin@acme.test');
    const listed = await t.gqlData('query($id: ID!) { paymentEvents(integrationId: $id, first: 100) { nodes { providerEventId outcome licenseId detail } } }', { id: connections.stripe.id }, { token });
    const nodes = listed.paymentEvents.nodes as { providerEventId: string }[];
    expect(nodes.find((node) => node.providerEventId === update.id)).toEqual({ providerEventId: update.id, outcome: 'APPLIED', licenseId: license.id, detail: `applied with ${purchase.id}` });

    // The other order: the update finds the license and is applied to it at once.
    const after = 'sub_late_update';
    const purchase2 = stripeEvent('invoice.paid', stripeInvoice(after, 'in_e2', 'subscription_create', 'price_pro', 1, at + 30 * 86400, 'late@example.com'), at);
    const update2 = stripeEvent('customer.subscription.updated', stripeSubscription(after, 'price_team', 2), at + 60);
    expect((await sendStripe(purchase2)).json.outcome).toBe('applied');
    expect((await sendStripe(update2)).json.outcome).toBe('applied');
    const license2 = (await licenseOf(connections.stripe.id, after))!;
    expect(license2).toMatchObject({ planId: plans.team.id, maxActivations: 10 });
    expect(await eventsOf(connections.stripe.id, after)).toEqual({ [update2.id]: { outcome: 'applied', licenseId: license2.id }, [purchase2.id]: { outcome: 'applied', licenseId: license2.id } });
  });

  it('links the early update to the license when it and the purchase are delivered at the same time, each twice (20 subscriptions)', async () => {
    const at = sec(clock.now().getTime());
    const subs = Array.from({ length: 20 }, (_, index) => `sub_together_${index}`);
    await Promise.all(
      subs.map(async (sub) => {
        const purchase = stripeEvent('invoice.paid', stripeInvoice(sub, `in_${sub}`, 'subscription_create', 'price_pro', 1, at + 30 * 86400, `${sub}@example.com`), at);
        const update = stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_team', 2), at + 60);
        const answers = await Promise.all([sendStripe(update), sendStripe(purchase), sendStripe(update), sendStripe(purchase)]);
        expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);
        const outcomes = answers.map((answer) => answer.json.outcome);
        expect(outcomes.filter((outcome) => outcome === 'duplicate')).toHaveLength(2);
        const license = (await licenseOf(connections.stripe.id, sub))!;
        expect(license).toMatchObject({ planId: plans.team.id, maxActivations: 10 });
        expect(await eventsOf(connections.stripe.id, sub)).toEqual({ [update.id]: { outcome: 'applied', licenseId: license.id }, [purchase.id]: { outcome: 'applied', licenseId: license.id } });
        expect(await t.prisma.emailOutbox.count({ where: { toAddress: `${sub}@example.com` } })).toBe(1);
      }),
    );
  }, 120_000);

  it('keeps the seats in use when the subscription drops below them: the customer keeps working, the vendor gets license.seats_kept', async () => {
    const sub = 'sub_fewer_seats';
    await t.prisma.webhookEndpoint.create({ data: { tenantId, url: 'https://hooks.acme.test/keyforge', eventTypes: ['license.seats_kept'], secretEncrypted: t.deps.secrets.encrypt('whsec_test') } });
    // With the customer portal on, the key email links to it.
    await t.prisma.tenant.update({ where: { id: tenantId }, data: { portalHandle: 'acme-pay' } });
    await sendStripe(stripeEvent('invoice.paid', stripeInvoice(sub, 'in_f1', 'subscription_create', 'price_pro', 2, sec(clock.now().getTime() + 30 * DAY), 'seats@example.com')));
    await t.prisma.tenant.update({ where: { id: tenantId }, data: { portalHandle: null } });
    const email = await t.prisma.emailOutbox.findFirstOrThrow({ where: { kind: 'license-key', toAddress: 'seats@example.com' } });
    expect(email.text).toContain(`customer portal (sign in with this email address): ${t.deps.config.publicUrl}/portal/acme-pay`);
    expect(email.html).toContain(`href="${t.deps.config.publicUrl}/portal/acme-pay"`);
    const key = /Your license key: (\S+)/.exec(t.outboxText(email))![1];
    for (const deviceId of ['pc-1', 'pc-2', 'pc-3']) expect((await t.activate({ licenseKey: key, deviceId })).json.isValid).toBe(true);

    await sendStripe(stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_pro', 1)));
    const license = (await licenseOf(connections.stripe.id, sub))!;
    expect(license).toMatchObject({ maxActivations: 3, currentActivations: 3, status: 'active' });
    const [event] = await t.prisma.paymentEvent.findMany({ where: { connectionId: connections.stripe.id, subject: sub, type: 'customer.subscription.updated' } });
    expect(event.detail).toContain('seats kept at 3: 3 in use, the subscription pays for 2');
    const webhooks = await t.prisma.webhookEvent.findMany({ where: { tenantId, type: 'license.seats_kept' } });
    expect(webhooks).toHaveLength(1);
    expect(JSON.parse(webhooks[0].body).data).toEqual({ licenseId: license.id, productId: license.productId, seatsPaid: 2, seatsInUse: 3, maxActivations: 3, paymentProvider: 'Stripe', subscription: sub });
    expect((await t.post('/api/v1/validate', { licenseKey: key })).json.isValid).toBe(true);
  });

  it('on a plan change, replaces the old plan’s features and custom fields by the new plan’s and keeps what the vendor set on the license', async () => {
    const product = await t.prisma.product.findFirstOrThrow({ where: { tenantId, name: 'Acme Studio' } });
    const basic = await createPlan(sys(), { productId: product.id, name: 'Basic yearly', duration: 'P1Y', maxActivations: 1, features: ['basic', 'export'], customFields: { tier: 'basic', support: 'email', region: 'eu' } });
    const premium = await createPlan(sys(), { productId: product.id, name: 'Premium yearly', duration: 'P1Y', maxActivations: 3, features: ['premium', 'export'], customFields: { tier: 'premium', support: 'phone', sla: '99.9' } });
    await mapPaymentPrice(sys(), connections.stripe.id, { priceId: 'price_basic', planId: basic.id });
    await mapPaymentPrice(sys(), connections.stripe.id, { priceId: 'price_premium', planId: premium.id });
    const sub = 'sub_plan_fields';
    await sendStripe(stripeEvent('invoice.paid', stripeInvoice(sub, 'in_pf1', 'subscription_create', 'price_basic', 1, sec(clock.now().getTime() + 365 * DAY), 'fields@example.com')));
    const sold = (await licenseOf(connections.stripe.id, sub))!;
    expect(sold).toMatchObject({ planId: basic.id, features: ['basic', 'export'], customFields: { tier: 'basic', support: 'email', region: 'eu' } });
    // The vendor's own values: a support level of this customer, a CRM id, a beta feature.
    await updateLicense(sys(), sold.id, { customFields: { tier: 'basic', support: 'dedicated', region: 'eu', crm: 'C-1042' }, features: ['basic', 'export', 'beta'] });

    clock.advance(1000);
    await sendStripe(stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_premium', 1)));
    const moved = (await licenseOf(connections.stripe.id, sub))!;
    expect(moved).toMatchObject({ planId: premium.id, maxActivations: 3 });
    // tier: the new plan's; region: the old plan's, gone; sla: added; support and crm: the vendor's, kept.
    expect(moved.customFields).toEqual({ tier: 'premium', sla: '99.9', support: 'dedicated', crm: 'C-1042' });
    expect([...moved.features].sort()).toEqual(['beta', 'export', 'premium']);
    const entry = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { entityId: sold.id, action: 'UpdateLicense', actor: { startsWith: 'Stripe' } }, orderBy: { seq: 'desc' } });
    expect(entry.details).toMatchObject({ before: { planId: basic.id, customFields: { tier: 'basic', support: 'dedicated', region: 'eu', crm: 'C-1042' } }, after: { planId: premium.id, customFields: { tier: 'premium', sla: '99.9', support: 'dedicated', crm: 'C-1042' } } });
    const key = t.outboxText(await t.prisma.emailOutbox.findFirstOrThrow({ where: { toAddress: 'fields@example.com' } })).match(/Your license key: (\S+)/)![1];
    expect((await t.post('/api/v1/validate', { licenseKey: key })).json).toMatchObject({ isValid: true, customFields: { tier: 'premium', sla: '99.9', support: 'dedicated', crm: 'C-1042' } });

    // And back: the premium values go, basic's come back, the vendor's stay.
    clock.advance(1000);
    await sendStripe(stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_basic', 1)));
    const back = (await licenseOf(connections.stripe.id, sub))!;
    expect(back.customFields).toEqual({ tier: 'basic', support: 'dedicated', region: 'eu', crm: 'C-1042' });
    expect([...back.features].sort()).toEqual(['basic', 'beta', 'export']);
  });

  it('on a plan change, judges the license’s values by what it got from its plan, not by that plan as edited since', async () => {
    const product = await t.prisma.product.findFirstOrThrow({ where: { tenantId, name: 'Acme Studio' } });
    const basic = await createPlan(sys(), { productId: product.id, name: 'Basic (edited later)', duration: 'P1Y', maxActivations: 1, features: ['basic', 'export'], customFields: { tier: 'basic', support: 'email', region: 'eu' } });
    const premium = await createPlan(sys(), { productId: product.id, name: 'Premium (edited later)', duration: 'P1Y', maxActivations: 3, features: ['premium'], customFields: { tier: 'premium', support: 'phone', sla: '99.9' } });
    await mapPaymentPrice(sys(), connections.stripe.id, { priceId: 'price_basic_edited', planId: basic.id });
    await mapPaymentPrice(sys(), connections.stripe.id, { priceId: 'price_premium_edited', planId: premium.id });
    const sub = 'sub_plan_edited';
    await sendStripe(stripeEvent('invoice.paid', stripeInvoice(sub, 'in_pe1', 'subscription_create', 'price_basic_edited', 1, sec(clock.now().getTime() + 365 * DAY), 'edited@example.com')));
    const sold = (await licenseOf(connections.stripe.id, sub))!;
    await updateLicense(sys(), sold.id, { customFields: { tier: 'basic', support: 'dedicated', region: 'eu', crm: 'C-7' }, features: ['basic', 'export', 'beta'] });
    // The vendor edits the plan after the sale (new sales get other values): the license's tier, region and features
    // still came from the plan, its support level and CRM id are still the vendor's.
    await updatePlan(sys(), basic.id, { features: ['basic-2', 'export'], customFields: { tier: 'basic-2', support: 'chat', region: 'us' } });

    clock.advance(1000);
    await sendStripe(stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_premium_edited', 1)));
    const moved = (await licenseOf(connections.stripe.id, sub))!;
    expect(moved.planId).toBe(premium.id);
    expect(moved.customFields).toEqual({ tier: 'premium', sla: '99.9', support: 'dedicated', crm: 'C-7' });
    expect([...moved.features].sort()).toEqual(['beta', 'premium']);

    // Back to the plan as it is now: premium's values go, the edited plan's come, the vendor's stay.
    clock.advance(1000);
    await sendStripe(stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_basic_edited', 1)));
    const back = (await licenseOf(connections.stripe.id, sub))!;
    expect(back.customFields).toEqual({ tier: 'basic-2', region: 'us', support: 'dedicated', crm: 'C-7' });
    expect([...back.features].sort()).toEqual(['basic-2', 'beta', 'export']);
  });

  it('never moves an expiry the vendor extended by hand earlier: a renewal with an earlier period end leaves it', async () => {
    const sub = 'sub_hand_extended';
    const start = clock.now().getTime();
    await sendStripe(stripeEvent('invoice.paid', stripeInvoice(sub, 'in_he1', 'subscription_create', 'price_pro', 1, sec(start + 30 * DAY), 'hand@example.com')));
    const sold = (await licenseOf(connections.stripe.id, sub))!;
    const byHand = new Date(start + 200 * DAY);
    await renewLicense(sys(), { id: sold.id, expiresAt: byHand });
    clock.advance(30 * DAY);
    expect((await sendStripe(stripeEvent('invoice.paid', stripeInvoice(sub, 'in_he2', 'subscription_cycle', 'price_pro', 1, sec(start + 60 * DAY))))).json.outcome).toBe('applied');
    expect((await licenseOf(connections.stripe.id, sub))!.expiresAt).toEqual(byHand);
    // A period past the vendor's date extends it as usual.
    clock.advance(DAY);
    await sendStripe(stripeEvent('invoice.paid', stripeInvoice(sub, 'in_he3', 'subscription_cycle', 'price_pro', 1, sec(start + 230 * DAY))));
    expect((await licenseOf(connections.stripe.id, sub))!.expiresAt!.getTime()).toBe(sec(start + 230 * DAY) * 1000);
  });

  it('caps the seats of an absurd quantity at the most a license takes (1,000,000), instead of failing every retry', async () => {
    const sub = 'sub_huge_quantity';
    await sendStripe(stripeEvent('invoice.paid', stripeInvoice(sub, 'in_h1', 'subscription_create', 'price_pro', 1, sec(clock.now().getTime() + 30 * DAY), 'huge@example.com')));
    const updated = await sendStripe(stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_pro', 2_000_000_000)));
    expect(updated.json).toEqual({ received: true, outcome: 'applied' });
    expect((await licenseOf(connections.stripe.id, sub))!.maxActivations).toBe(1_000_000);
    // Past what the database's integer holds: the same cap, not a failed delivery the provider would retry for days.
    const beyond = await sendStripe(stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_pro', 3_000_000_000)));
    expect(beyond.json).toEqual({ received: true, outcome: 'applied' });
    expect((await t.prisma.paymentSubscription.findUniqueOrThrow({ where: { connectionId_subject: { connectionId: connections.stripe.id, subject: sub } } })).quantity).toBe(1_000_000);
  });

  it('refuses unsigned, badly signed, stale and foreign-secret deliveries and writes nothing; ignores unknown types', async () => {
    const before = await rowCounts();
    const event = stripeEvent('invoice.paid', stripeInvoice('sub_refused', 'in_r1', 'subscription_create', 'price_pro', 1, sec(T0 + 90 * DAY)));
    expect((await t.post(paymentWebhookPath(connections.stripe.id), JSON.stringify(event))).status).toBe(401);
    expect((await sendStripe(event, { secret: 'whsec_wrong_secret_000' })).status).toBe(401);
    expect((await sendStripe(event, { timestamp: sec(clock.now().getTime()) - 301 })).status).toBe(401);
    expect((await sendStripe(event, { connectionId: '00000000-0000-4000-8000-000000000000' })).status).toBe(404);
    expect((await sendStripe(event, { connectionId: connections.paddle.id })).status).toBe(401);
    expect((await sendStripe({ hello: 'world' })).status).toBe(400);
    expect(await rowCounts()).toEqual(before);
    const unknown = await sendStripe(stripeEvent('customer.created', { id: 'cus_9', object: 'customer' }));
    expect(unknown.json).toEqual({ received: true, outcome: 'ignored' });
  });

  it('answers 400 InvalidRequest to a body over 512 KiB, signed or not, and names only statuses the route answers', async () => {
    const before = await rowCounts();
    const big = stripeEvent('customer.updated', { id: 'cus_big', object: 'customer', description: 'x'.repeat(513 * 1024) });
    for (const answer of [await sendStripe(big), await t.post(paymentWebhookPath(connections.stripe.id), JSON.stringify(big))]) {
      expect(answer.status).toBe(400);
      expect(answer.json.error).toMatchObject({ code: 'InvalidRequest', message: 'The request body is larger than 512 KiB.' });
    }
    expect(await rowCounts()).toEqual(before);
    // The guide and the route's description name only statuses the OpenAPI document gives the route.
    const operation = (await t.get('/api/v1/openapi.json')).json.paths['/payments/{connectionId}/webhook'].post;
    const answered = Object.keys(operation.responses);
    const guide = readFileSync(new URL('../docs/integrate/payments.md', import.meta.url), 'utf8');
    const inGuide = [...guide.matchAll(/`([1-5]\d\d)`/g)].map((match) => match[1]);
    expect(inGuide).toContain('400');
    expect(inGuide.filter((status) => !answered.includes(status))).toEqual([]);
    const inDescription = [...(operation.description as string).matchAll(/\b([1-5]\d\d)\b(?! ?(?:s|KiB)\b)/g)].map((match) => match[1]);
    expect(inDescription).toContain('401');
    expect(inDescription.filter((status) => !answered.includes(status))).toEqual([]);
  });

  it('answers 409 for a price mapped to no plan, without consuming the event; the retry applies it once mapped', async () => {
    const event = stripeEvent('invoice.paid', stripeInvoice('sub_unmapped', 'in_u1', 'subscription_create', 'price_unmapped', 1, sec(clock.now().getTime() + 30 * DAY)));
    const refused = await sendStripe(event);
    expect(refused.status).toBe(409);
    expect(await t.prisma.paymentEvent.findFirst({ where: { providerEventId: event.id } })).toMatchObject({ outcome: 'failed' });
    await mapPaymentPrice(sys(), connections.stripe.id, { priceId: 'price_unmapped', planId: plans.pro.id });
    expect((await sendStripe(event)).json.outcome).toBe('applied');
    expect(await licenseOf(connections.stripe.id, 'sub_unmapped')).toMatchObject({ planId: plans.pro.id });
    expect((await sendStripe(event)).json.outcome).toBe('duplicate');
  });

  it('creates exactly one license and one email from 50 concurrent deliveries of one purchase', async () => {
    const event = stripeEvent('invoice.paid', stripeInvoice('sub_concurrent', 'in_c1', 'subscription_create', 'price_pro', 1, sec(clock.now().getTime() + 30 * DAY), 'many@example.com'));
    const answers = await Promise.all(Array.from({ length: 50 }, () => sendStripe(event)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(50).fill(200));
    expect(answers.filter((answer) => answer.json.outcome === 'applied')).toHaveLength(1);
    const state = await t.prisma.paymentSubscription.findUniqueOrThrow({ where: { connectionId_subject: { connectionId: connections.stripe.id, subject: 'sub_concurrent' } } });
    expect(await t.prisma.license.count({ where: { customerEmail: 'many@example.com' } })).toBe(1);
    expect(state.licenseId).not.toBeNull();
    expect(await t.prisma.emailOutbox.count({ where: { toAddress: 'many@example.com' } })).toBe(1);
    expect(await t.prisma.paymentEvent.count({ where: { providerEventId: event.id } })).toBe(1);
  }, 60_000);

  it('ends in the same state whatever the order of a subscription’s six events (200 seeded orders)', async () => {
    let run = 0;
    const base = clock.now().getTime();
    const eventsFor = (sub: string) => {
      const n = (offset: number) => sec(base + offset);
      return [
        stripeEvent('checkout.session.completed', { id: `cs_${sub}`, object: 'checkout.session', mode: 'subscription', payment_status: 'paid', subscription: sub, invoice: `in_${sub}_1`, customer_details: { email: `${sub}@example.com` } }, n(0)),
        stripeEvent('invoice.paid', stripeInvoice(sub, `in_${sub}_1`, 'subscription_create', 'price_pro', 1, n(30 * DAY), `${sub}@example.com`), n(1000)),
        stripeEvent('invoice.paid', stripeInvoice(sub, `in_${sub}_2`, 'subscription_cycle', 'price_pro', 1, n(60 * DAY)), n(30 * DAY)),
        stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_team', 2), n(31 * DAY)),
        stripeEvent('customer.subscription.updated', stripeSubscription(sub, 'price_team', 2, { cancel_at_period_end: true, cancel_at: n(60 * DAY) }), n(32 * DAY)),
        stripeEvent('charge.refunded', { id: `ch_${sub}`, object: 'charge', refunded: true, payment_intent: `pi_in_${sub}_2` }, n(33 * DAY)),
      ];
    };
    const finals = new Set<string>();
    // Subscriptions are independent, but one company's changes queue on its activity log: the sample is spread over
    // five companies (each its own Stripe connection and plans), two subscriptions of each delivered at a time.
    const shops = [{ connection: connections.stripe, tenant: tenantId }];
    for (let index = 1; index < 5; index++) {
      const tenant = await t.seedTenant({ name: `Shop ${index}`, keyPrefix: `SHOP${index}` });
      const ctx = { ...sys(), actor: systemActor(tenant.id) };
      const product = await t.seedProduct(tenant.id, 'Acme Studio');
      const pro = await createPlan(ctx, { productId: product.id, name: 'Pro monthly', duration: 'P1M', maxActivations: 2, features: ['pro'] });
      const team = await createPlan(ctx, { productId: product.id, name: 'Team monthly', duration: 'P1M', maxActivations: 5, features: ['pro', 'team'] });
      const connection = await createPaymentConnection(ctx, { provider: 'stripe', signingSecret: connections.stripe.secret });
      await mapPaymentPrice(ctx, connection.id, { priceId: 'price_pro', planId: pro.id });
      await mapPaymentPrice(ctx, connection.id, { priceId: 'price_team', planId: team.id });
      shops.push({ connection: { id: connection.id, secret: connections.stripe.secret }, tenant: tenant.id });
    }
    // A seeded sample of 200 of the 720 orders.
    const orders = fc.sample(fc.shuffledSubarray([0, 1, 2, 3, 4, 5], { minLength: 6, maxLength: 6 }), { numRuns: 200, seed: 37 });
    expect(new Set(orders.map((order) => order.join())).size).toBeGreaterThan(150);
    const runOrder = async (order: number[], at: number) => {
      const shop = shops[at % shops.length];
      const sub = `sub_shuffle_${++run}`;
      const events = eventsFor(sub);
      for (const index of order) {
        const answer = await sendStripe(events[index], { connectionId: shop.connection.id });
        expect(answer.status, answer.text).toBe(200);
      }
      const license = (await licenseOf(shop.connection.id, sub))!;
      expect(license).not.toBeNull();
      expect(await t.prisma.emailOutbox.count({ where: { toAddress: `${sub}@example.com` } })).toBe(1);
      const plan = await t.prisma.plan.findUniqueOrThrow({ where: { id: license.planId! } });
      expect(plan.tenantId).toBe(shop.tenant);
      // Every event is recorded as applied to the license, whichever came before the purchase.
      const recorded = await eventsOf(shop.connection.id, sub);
      expect(Object.keys(recorded).sort(), `order ${order.join(',')}`).toEqual(events.map((event) => event.id).sort());
      expect(Object.values(recorded), `order ${order.join(',')}`).toEqual(Array(6).fill({ outcome: 'applied', licenseId: license.id }));
      const final = JSON.stringify({ plan: plan.name, seats: license.maxActivations, expiresAt: license.expiresAt!.getTime() - base, status: license.status, features: license.features });
      finals.add(final);
      expect(finals.size, `order ${order.join(',')}: ${final}`).toBe(1);
    };
    for (let at = 0; at < orders.length; at += 10) await Promise.all(orders.slice(at, at + 10).map((order, offset) => runOrder(order, at + offset)));
    expect(JSON.parse([...finals][0])).toEqual({ plan: 'Team monthly', seats: 10, expiresAt: sec(base + 60 * DAY) * 1000 - base, status: 'suspended', features: ['pro', 'team'] });
  }, 300_000);
});

describe('Paddle Billing', () => {
  const paddleEvent = (type: string, data: Record<string, unknown>, occurred = clock.now()) => ({
    event_id: `evt_${Math.random().toString(36).slice(2, 14)}`,
    event_type: type,
    occurred_at: occurred.toISOString(),
    notification_id: `ntf_${Math.random().toString(36).slice(2, 14)}`,
    data,
  });
  const transaction = (id: string, sub: string, origin: string, price: string, quantity: number, endsAt: Date) => ({
    id,
    status: 'completed',
    customer_id: 'ctm_1',
    subscription_id: sub,
    origin,
    custom_data: { email: 'paddle-buyer@example.com' },
    items: [{ price: { id: price, product_id: 'pro_1' }, quantity }],
    billing_period: { starts_at: new Date(endsAt.getTime() - 30 * DAY).toISOString(), ends_at: endsAt.toISOString() },
  });
  const subscription = (sub: string, price: string, quantity: number, extra: Record<string, unknown> = {}) => ({
    id: sub,
    status: 'active',
    updated_at: clock.now().toISOString(),
    items: [{ price: { id: price }, quantity, status: 'active' }],
    scheduled_change: null,
    current_billing_period: { starts_at: clock.now().toISOString(), ends_at: new Date(clock.now().getTime() + 30 * DAY).toISOString() },
    ...extra,
  });

  it('runs a subscription through purchase, renewal, plan change, cancellation and refund', async () => {
    const sub = 'sub_01paddle';
    const start = clock.now().getTime();
    expect((await sendPaddle(paddleEvent('transaction.completed', transaction('txn_1', sub, 'web', 'pri_pro', 1, new Date(start + 30 * DAY))))).json.outcome).toBe('applied');
    let license = (await licenseOf(connections.paddle.id, sub))!;
    expect(license).toMatchObject({ planId: plans.pro.id, maxActivations: 2, customerEmail: 'paddle-buyer@example.com' });
    clock.advance(30 * DAY);
    await sendPaddle(paddleEvent('transaction.completed', transaction('txn_2', sub, 'subscription_recurring', 'pri_pro', 1, new Date(start + 60 * DAY))));
    expect((await licenseOf(connections.paddle.id, sub))!.expiresAt!.getTime()).toBe(start + 60 * DAY);
    clock.advance(1000);
    await sendPaddle(paddleEvent('subscription.updated', subscription(sub, 'pri_team', 2)));
    expect(await licenseOf(connections.paddle.id, sub)).toMatchObject({ planId: plans.team.id, maxActivations: 10 });
    clock.advance(1000);
    await sendPaddle(paddleEvent('subscription.updated', subscription(sub, 'pri_team', 2, { scheduled_change: { action: 'cancel', effective_at: new Date(start + 60 * DAY).toISOString(), resume_at: null } })));
    clock.advance(1000);
    await sendPaddle(paddleEvent('subscription.canceled', subscription(sub, 'pri_team', 2, { status: 'canceled', canceled_at: clock.now().toISOString() })));
    license = (await licenseOf(connections.paddle.id, sub))!;
    expect(license.expiresAt!.getTime()).toBe(clock.now().getTime());
    await sendPaddle(paddleEvent('adjustment.created', { id: 'adj_1', action: 'refund', type: 'full', status: 'approved', transaction_id: 'txn_2', subscription_id: sub }));
    expect((await licenseOf(connections.paddle.id, sub))!.status).toBe('suspended');
  });

  it('never moves an expiry the vendor extended by hand earlier: a renewal with an earlier period end leaves it', async () => {
    const sub = 'sub_01paddle_hand';
    const start = clock.now().getTime();
    await sendPaddle(paddleEvent('transaction.completed', transaction('txn_hand_1', sub, 'web', 'pri_pro', 1, new Date(start + 30 * DAY))));
    const sold = (await licenseOf(connections.paddle.id, sub))!;
    const byHand = new Date(start + 200 * DAY);
    await renewLicense(sys(), { id: sold.id, expiresAt: byHand });
    clock.advance(30 * DAY);
    expect((await sendPaddle(paddleEvent('transaction.completed', transaction('txn_hand_2', sub, 'subscription_recurring', 'pri_pro', 1, new Date(start + 60 * DAY))))).json.outcome).toBe('applied');
    expect((await licenseOf(connections.paddle.id, sub))!.expiresAt).toEqual(byHand);
  });

  it('records subscription.updated before transaction.completed as pending, then applies it to the purchase’s license', async () => {
    const sub = 'sub_01paddle_early';
    const purchase = paddleEvent('transaction.completed', transaction('txn_early', sub, 'web', 'pri_pro', 1, new Date(clock.now().getTime() + 30 * DAY)));
    clock.advance(1000);
    const update = paddleEvent('subscription.updated', subscription(sub, 'pri_team', 2));
    expect((await sendPaddle(update)).json.outcome).toBe('pending');
    expect(await eventsOf(connections.paddle.id, sub)).toEqual({ [update.event_id]: { outcome: 'pending', licenseId: null } });
    expect((await sendPaddle(update)).json.outcome).toBe('duplicate');
    expect((await sendPaddle(purchase)).json.outcome).toBe('applied');
    const license = (await licenseOf(connections.paddle.id, sub))!;
    expect(license).toMatchObject({ planId: plans.team.id, maxActivations: 10 });
    expect(await eventsOf(connections.paddle.id, sub)).toEqual({ [update.event_id]: { outcome: 'applied', licenseId: license.id }, [purchase.event_id]: { outcome: 'applied', licenseId: license.id } });
  });

  it('refuses a wrong or stale Paddle-Signature and writes nothing', async () => {
    const before = await rowCounts();
    const event = paddleEvent('transaction.completed', transaction('txn_x', 'sub_x', 'web', 'pri_pro', 1, new Date(clock.now().getTime() + 30 * DAY)));
    expect((await sendPaddle(event, 'wrong-secret-000000')).status).toBe(401);
    const payload = JSON.stringify(event);
    const ts = sec(Date.now()) - 60;
    const stale = `ts=${ts};h1=${createHmac('sha256', connections.paddle.secret).update(`${ts}:${payload}`).digest('hex')}`;
    expect((await t.post(paymentWebhookPath(connections.paddle.id), payload, { 'paddle-signature': stale })).status).toBe(401);
    expect((await t.post(paymentWebhookPath(connections.paddle.id), payload, { 'paddle-signature': 'garbage' })).status).toBe(401);
    expect(await rowCounts()).toEqual(before);
  });
});

describe('Lemon Squeezy', () => {
  const lemon = (event: string, type: string, id: string | number, attributes: Record<string, unknown>) => ({
    meta: { event_name: event, custom_data: null, webhook_id: 'wh_1', test_mode: true },
    data: { type, id: String(id), attributes: { updated_at: clock.now().toISOString(), created_at: clock.now().toISOString(), ...attributes } },
  });

  it('runs a subscription through purchase, renewal, plan change, cancellation and refund (refund revokes on this connection)', async () => {
    const order = 5001;
    const start = clock.now().getTime();
    await sendLemon(lemon('order_created', 'orders', order, { status: 'paid', user_email: 'ls-buyer@example.com', first_order_item: { order_id: order, variant_id: 101, quantity: 1 } }));
    let license = (await licenseOf(connections.lemonsqueezy.id, `order:${order}`))!;
    expect(license).toMatchObject({ planId: plans.pro.id, maxActivations: 2, customerEmail: 'ls-buyer@example.com' });
    clock.advance(1000);
    await sendLemon(lemon('subscription_created', 'subscriptions', 77, { order_id: order, variant_id: 101, status: 'active', first_subscription_item: { quantity: 1 } }));
    clock.advance(30 * DAY);
    const expiry = license.expiresAt!.getTime();
    await sendLemon(lemon('subscription_payment_success', 'subscription-invoices', 9001, { subscription_id: 77, billing_reason: 'renewal', status: 'paid' }));
    license = (await licenseOf(connections.lemonsqueezy.id, `order:${order}`))!;
    expect(license.expiresAt!.getTime()).toBeGreaterThan(expiry);
    clock.advance(1000);
    await sendLemon(lemon('subscription_updated', 'subscriptions', 77, { order_id: order, variant_id: 102, status: 'active', first_subscription_item: { quantity: 1 } }));
    expect(await licenseOf(connections.lemonsqueezy.id, `order:${order}`)).toMatchObject({ planId: plans.team.id, maxActivations: 5 });
    clock.advance(1000);
    const endsAt = new Date(clock.now().getTime() + 10 * DAY).toISOString();
    await sendLemon(lemon('subscription_cancelled', 'subscriptions', 77, { order_id: order, variant_id: 102, status: 'cancelled', ends_at: endsAt, first_subscription_item: { quantity: 1 } }));
    expect((await licenseOf(connections.lemonsqueezy.id, `order:${order}`))!.expiresAt!.toISOString()).toBe(endsAt);
    await sendLemon(lemon('order_refunded', 'orders', order, { status: 'refunded', refunded: true }));
    expect((await licenseOf(connections.lemonsqueezy.id, `order:${order}`))!.status).toBe('revoked');
  });

  it('records subscription events and a renewal that come before order_created as pending, then applies them to its license', async () => {
    const order = 5201;
    const subscriptionId = 7201;
    const start = clock.now().getTime();
    const renewsAt = new Date(start + 28 * DAY).toISOString();
    // The renewal names only the subscription, which nothing has named yet: it waits for a reference.
    const renewal = lemon('subscription_payment_success', 'subscription-invoices', 9201, { subscription_id: subscriptionId, billing_reason: 'renewal', status: 'paid' });
    const created = lemon('subscription_created', 'subscriptions', subscriptionId, { order_id: order, variant_id: 102, status: 'active', renews_at: renewsAt, first_subscription_item: { quantity: 1 } });
    const purchase = lemon('order_created', 'orders', order, { status: 'paid', user_email: 'ls-early@example.com', first_order_item: { order_id: order, variant_id: 101, quantity: 1 } });
    expect((await sendLemon(renewal)).json.outcome).toBe('pending');
    expect((await sendLemon(created)).json.outcome).toBe('pending');
    const ids = await t.prisma.paymentEvent.findMany({ where: { connectionId: connections.lemonsqueezy.id, subject: `order:${order}` }, select: { providerEventId: true, outcome: true, licenseId: true } });
    expect(ids).toHaveLength(2);
    expect(ids.every((event) => event.outcome === 'pending' && event.licenseId === null)).toBe(true);
    expect((await sendLemon(created)).json.outcome).toBe('duplicate');
    expect((await sendLemon(purchase)).json.outcome).toBe('applied');
    const license = (await licenseOf(connections.lemonsqueezy.id, `order:${order}`))!;
    expect(license).toMatchObject({ planId: plans.team.id, maxActivations: 5, customerEmail: 'ls-early@example.com' });
    const recorded = await eventsOf(connections.lemonsqueezy.id, `order:${order}`);
    expect(Object.values(recorded)).toEqual(Array(3).fill({ outcome: 'applied', licenseId: license.id }));
  });

  it('follows the subscription’s renews_at, earlier than the plan’s period or not, whatever the order of a renewal and its update', async () => {
    const iso = (ms: number) => new Date(ms).toISOString();
    const expiryOf = async (order: number) => (await licenseOf(connections.lemonsqueezy.id, `order:${order}`))!.expiresAt!.getTime();
    for (const [order, updateFirst] of [[5301, false], [5302, true]] as const) {
      const subscriptionId = order + 2000;
      const start = clock.now().getTime();
      const update = (at: number, renewsAt: number, event = 'subscription_updated') =>
        lemon(event, 'subscriptions', subscriptionId, { order_id: order, variant_id: 101, status: 'active', renews_at: iso(renewsAt), first_subscription_item: { quantity: 1 }, updated_at: iso(at) });
      await sendLemon(lemon('order_created', 'orders', order, { status: 'paid', user_email: `ls-${order}@example.com`, first_order_item: { order_id: order, variant_id: 101, quantity: 1 } }));
      // Until the subscription says otherwise: the plan's month.
      expect(await expiryOf(order)).toBeGreaterThan(start + 28 * DAY);
      clock.advance(1000);
      // A 28-day cycle: its renews_at comes before the plan's month ends, and corrects the expiry.
      await sendLemon(update(start + 1000, start + 28 * DAY, 'subscription_created'));
      expect(await expiryOf(order)).toBe(start + 28 * DAY);

      const paidAt = start + 28 * DAY;
      clock.set(iso(paidAt + 5000));
      const payment = lemon('subscription_payment_success', 'subscription-invoices', 9300 + order, { subscription_id: subscriptionId, billing_reason: 'renewal', status: 'paid', updated_at: iso(paidAt) });
      const renewed = update(paidAt + 2000, paidAt + 28 * DAY);
      for (const event of updateFirst ? [renewed, payment] : [payment, renewed]) expect((await sendLemon(event)).json.outcome).toBe('applied');
      // The period Lemon Squeezy reports, not one month from the payment, nor a month on top of it.
      expect(await expiryOf(order)).toBe(paidAt + 28 * DAY);
      // A later report of a later renews_at moves it on.
      await sendLemon(update(paidAt + 3000, paidAt + 31 * DAY));
      expect(await expiryOf(order)).toBe(paidAt + 31 * DAY);
      // An older report delivered late changes nothing.
      await sendLemon(update(paidAt + 2500, paidAt + 20 * DAY));
      expect(await expiryOf(order)).toBe(paidAt + 31 * DAY);
    }
  });

  it('never moves an expiry the vendor extended by hand earlier: neither a renewal’s estimate nor a later renews_at; a cancellation ends it', async () => {
    const iso = (ms: number) => new Date(ms).toISOString();
    const order = 5401;
    const subscriptionId = 7401;
    const start = clock.now().getTime();
    const expiry = async () => (await licenseOf(connections.lemonsqueezy.id, `order:${order}`))!.expiresAt!.getTime();
    const subscription = (event: string, at: number, extra: Record<string, unknown>) =>
      lemon(event, 'subscriptions', subscriptionId, { order_id: order, variant_id: 101, status: 'active', first_subscription_item: { quantity: 1 }, updated_at: iso(at), ...extra });
    await sendLemon(lemon('order_created', 'orders', order, { status: 'paid', user_email: `ls-${order}@example.com`, first_order_item: { order_id: order, variant_id: 101, quantity: 1 } }));
    clock.advance(1000);
    await sendLemon(subscription('subscription_created', start + 1000, { renews_at: iso(start + 28 * DAY) }));
    expect(await expiry()).toBe(start + 28 * DAY);
    // The vendor gives the customer a free quarter by hand.
    const byHand = start + 120 * DAY;
    await renewLicense(sys(), { id: (await licenseOf(connections.lemonsqueezy.id, `order:${order}`))!.id, expiresAt: new Date(byHand) });

    const paidAt = start + 28 * DAY;
    clock.set(iso(paidAt + 5000));
    const payment = lemon('subscription_payment_success', 'subscription-invoices', 9401, { subscription_id: subscriptionId, billing_reason: 'renewal', status: 'paid', updated_at: iso(paidAt) });
    expect((await sendLemon(payment)).json.outcome).toBe('applied');
    expect(await expiry()).toBe(byHand);
    expect((await sendLemon(subscription('subscription_updated', paidAt + 2000, { renews_at: iso(paidAt + 28 * DAY) }))).json.outcome).toBe('applied');
    expect(await expiry()).toBe(byHand);
    // A cancellation still ends the license when the paid period ends.
    await sendLemon(subscription('subscription_cancelled', paidAt + 3000, { status: 'cancelled', ends_at: iso(paidAt + 28 * DAY) }));
    expect(await expiry()).toBe(paidAt + 28 * DAY);
    // Once applied, the cancellation does not end a later extension by hand again: a later event on the cancelled
    // subscription leaves the vendor's date.
    const again = paidAt + 200 * DAY;
    await renewLicense(sys(), { id: (await licenseOf(connections.lemonsqueezy.id, `order:${order}`))!.id, expiresAt: new Date(again) });
    expect((await sendLemon(subscription('subscription_updated', paidAt + 4000, { status: 'cancelled', ends_at: iso(paidAt + 28 * DAY) }))).json.outcome).toBe('applied');
    expect(await expiry()).toBe(again);
  });

  it('finds a renewal’s subscription by its reference through an index, not by reading every subscription of the connection', async () => {
    const order = 5901;
    await sendLemon(lemon('order_created', 'orders', order, { status: 'paid', user_email: 'ls-index@example.com', first_order_item: { order_id: order, variant_id: 101, quantity: 1 } }));
    await sendLemon(lemon('subscription_created', 'subscriptions', 7901, { order_id: order, variant_id: 101, status: 'active', first_subscription_item: { quantity: 1 } }));
    // 200,000 other subscriptions of the same connection.
    await t.prisma.$executeRawUnsafe(
      `INSERT INTO payment_subscriptions (id, tenant_id, connection_id, subject, refs, created_at, updated_at)
       SELECT gen_random_uuid(), $1::uuid, $2::uuid, 'order:many-' || n, ARRAY['order:many-' || n, 'subscription:many-' || n], now(), now()
         FROM generate_series(1, 200000) AS n`,
      tenantId, connections.lemonsqueezy.id,
    );
    // As the schema's owner: the app role may not ANALYZE (PostgreSQL skips it with a warning).
    const owner = new pg.Client({ connectionString: t.ownerUrl });
    await owner.connect();
    await owner.query('ANALYZE payment_subscriptions').finally(() => owner.end());
    try {
      const renewal = lemon('subscription_payment_success', 'subscription-invoices', 9901, { subscription_id: 7901, billing_reason: 'renewal', status: 'paid' });
      let outcome: unknown;
      const byReference = (await capturedSelects(async () => void (outcome = (await sendLemon(renewal)).json.outcome))).filter((statement) => statement.text.includes('refs &&'));
      expect(outcome).toBe('applied');
      // Two reads by reference (the plan to lock before the activity log's lock, then the state under its lock), each through the index.
      expect(byReference).toHaveLength(2);
      for (const statement of byReference) {
        const [{ 'QUERY PLAN': plan }] = await t.prisma.$queryRawUnsafe<{ 'QUERY PLAN': unknown }[]>(`EXPLAIN (FORMAT JSON) ${statement.text}`, ...statement.values);
        expect(JSON.stringify(plan), statement.text).toContain('"Index Name":"payment_subscriptions_refs_idx"');
      }
    } finally {
      await t.prisma.$executeRawUnsafe(`DELETE FROM payment_subscriptions WHERE subject LIKE 'order:many-%'`);
    }
  });

  it('reads a time PostgreSQL cannot store (year 0, a negative year) as no time, never a failed delivery', async () => {
    for (const [index, at] of ['0000-06-01T00:00:00Z', '-000001-06-01T00:00:00Z'].entries()) {
      const refunded = await sendLemon(lemon('order_refunded', 'orders', 7100 + index, { status: 'refunded', refunded: true, updated_at: at, created_at: at }));
      expect(refunded.status).toBe(200);
      const subscription = lemon('subscription_updated', 'subscriptions', 7200 + index, { order_id: 7300 + index, variant_id: 101, status: 'cancelled', ends_at: at, renews_at: at, first_subscription_item: { quantity: 1 } });
      expect((await sendLemon(subscription)).status).toBe(200);
    }
  });

  it('refuses a wrong X-Signature and writes nothing', async () => {
    const before = await rowCounts();
    const event = lemon('order_created', 'orders', 6001, { status: 'paid', user_email: 'x@example.com', first_order_item: { variant_id: 101, quantity: 1 } });
    expect((await sendLemon(event, 'wrong-secret-000')).status).toBe(401);
    expect((await t.post(paymentWebhookPath(connections.lemonsqueezy.id), JSON.stringify(event), { 'x-signature': 'zz' })).status).toBe(401);
    expect(await rowCounts()).toEqual(before);
  });
});
