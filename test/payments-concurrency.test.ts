import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAuditChain } from '../server/src/services/audit/audit-log.js';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import type { ServiceContext } from '../server/src/services/context.js';
import { createPaymentConnection, deletePaymentConnection, mapPaymentPrice, paymentWebhookPath } from '../server/src/services/payments/connections.js';
import { createPlan } from '../server/src/services/plans.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { stripeEventEnvelope } from './support/stripe.js';

// A payment provider's event and a staff member's change of the same license at the same moment, over real HTTP
// (signed Stripe deliveries, GraphQL mutations). Both write the license row and the company's activity log in one
// transaction; they take the two locks in the same order (the log's first), so no interleaving deadlocks (40P01),
// answers an internal error, or leaves a delivery unapplied. A purchase's new license also references its product and
// plan, whose edits lock their row before the log's lock: the purchase takes those rows first.

const T0 = Date.parse('2026-06-01T12:00:00.000Z');
const ROUNDS = 20;
const SUB = 'sub_concurrent';
const clock = new TestClock(T0);
let t: TestApp;
let token: string;
let tenantId: string;
let connection: { id: string; secret: string };
let planSeats: number;
let productId: string;
let planId: string;

const sec = (ms: number) => Math.floor(ms / 1000);
const sys = (): ServiceContext => ({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(tenantId), meta: NO_META });

let seq = 0;
const stripeEvent = (type: string, object: Record<string, unknown>, created: number) => stripeEventEnvelope(`evt_conc_${(++seq).toString().padStart(4, '0')}`, type, object, created);
const invoice = (id: string, reason: string, quantity: number, periodEnd: number) => ({
  id,
  object: 'invoice',
  billing_reason: reason,
  customer: 'cus_conc',
  customer_email: 'buyer@example.com',
  status: 'paid',
  payment_intent: `pi_${id}`,
  parent: { type: 'subscription_details', subscription_details: { subscription: SUB, metadata: {} } },
  lines: { object: 'list', has_more: false, data: [{ id: `il_${id}`, object: 'line_item', quantity, period: { start: periodEnd - 30 * 86400, end: periodEnd }, pricing: { type: 'price_details', price_details: { price: 'price_pro', product: 'prod_1' } } }] },
});
const subscription = (quantity: number, periodEnd: number) => ({
  id: SUB,
  object: 'subscription',
  status: 'active',
  cancel_at_period_end: false,
  cancel_at: null,
  canceled_at: null,
  ended_at: null,
  items: { object: 'list', data: [{ id: 'si_conc', object: 'subscription_item', price: { id: 'price_pro', object: 'price' }, quantity, current_period_end: periodEnd }] },
});

function deliver(event: object, to = connection) {
  const payload = JSON.stringify(event);
  const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: to.secret, timestamp: sec(clock.now().getTime()) });
  return t.post(paymentWebhookPath(to.id), payload, { 'stripe-signature': header });
}

const LICENSE = 'id status customFields';
const SUSPEND = `mutation($id: ID!) { suspendLicense(input: { id: $id }) { license { ${LICENSE} } } }`;
const REINSTATE = `mutation($id: ID!) { reinstateLicense(input: { id: $id }) { license { ${LICENSE} } } }`;
const UPDATE = `mutation($id: ID!, $fields: JSON) { updateLicense(input: { id: $id, customFields: $fields }) { license { ${LICENSE} } } }`;

beforeAll(async () => {
  t = await startTestApp({ clock });
  const admin = await t.setupAdmin();
  token = admin.token;
  tenantId = admin.user.tenantId;
  const product = await t.seedProduct(tenantId, 'Acme Studio');
  const plan = await createPlan(sys(), { productId: product.id, name: 'Pro monthly', duration: 'P1M', maxActivations: 2, features: ['pro'] });
  planSeats = plan.maxActivations;
  productId = product.id;
  planId = plan.id;
  const created = await createPaymentConnection(sys(), { provider: 'stripe', signingSecret: 'whsec_concurrency_0123456789', refundAction: 'suspend' });
  connection = { id: created.id, secret: 'whsec_concurrency_0123456789' };
  await mapPaymentPrice(sys(), connection.id, { priceId: 'price_pro', planId: plan.id });
}, 60_000);
afterAll(() => t?.close());

describe('a payment event and a staff change of the same license at once', () => {
  it(`never deadlocks, fails or half-writes over ${ROUNDS} rounds of renewals and seat changes against suspend/reinstate and updateLicense`, async () => {
    const purchase = await deliver(stripeEvent('invoice.paid', invoice('in_c0', 'subscription_create', 1, sec(T0 + 30 * DAY)), sec(T0)));
    expect(purchase.status).toBe(200);
    const state = await t.prisma.paymentSubscription.findUniqueOrThrow({ where: { connectionId_subject: { connectionId: connection.id, subject: SUB } } });
    const licenseId = state.licenseId!;
    const logFrom = t.logs.length;
    const auth = { token };

    const deliveries: { status: number; json: unknown }[] = [];
    const staff: { errors?: unknown[]; status: number }[] = [];
    let lastQuantity = 1;
    let lastPeriodEnd = sec(T0 + 30 * DAY);
    for (let round = 1; round <= ROUNDS; round++) {
      const created = sec(T0) + round * 60;
      lastQuantity = 1 + (round % 3);
      lastPeriodEnd = sec(T0 + (30 + round) * DAY);
      // All at once: a renewal and a seat change of the subscription, a suspension or reinstatement and an attribute change of its license.
      const answers = await Promise.all([
        deliver(stripeEvent('invoice.paid', invoice(`in_c${round}`, 'subscription_cycle', lastQuantity, lastPeriodEnd), created)),
        deliver(stripeEvent('customer.subscription.updated', subscription(lastQuantity, lastPeriodEnd), created + 1)),
        t.gql(round % 2 ? SUSPEND : REINSTATE, { id: licenseId }, auth),
        t.gql(UPDATE, { id: licenseId, fields: { round: String(round) } }, auth),
      ]);
      deliveries.push(answers[0], answers[1]);
      staff.push(answers[2], answers[3]);
    }

    // Every delivery applied (200), every staff change answered without an error; nothing in the log of a deadlock or an unhandled error.
    expect(t.logs.slice(logFrom).filter((line) => /deadlock|40P01|unhandled error|InternalError/i.test(line)).map((line) => line.slice(0, 600))).toEqual([]);
    expect(deliveries.filter((answer) => answer.status !== 200).map((answer) => [answer.status, answer.json])).toEqual([]);
    expect(staff.filter((answer) => answer.status !== 200 || answer.errors).map((answer) => answer.errors)).toEqual([]);

    // Each event recorded once, as applied to the license; the license is what the last events and the last staff changes say.
    const events = await t.prisma.paymentEvent.findMany({ where: { connectionId: connection.id } });
    expect(events).toHaveLength(1 + 2 * ROUNDS);
    expect(events.filter((event) => event.outcome !== 'applied').map((event) => [event.providerEventId, event.outcome, event.detail])).toEqual([]);
    const license = await t.prisma.license.findUniqueOrThrow({ where: { id: licenseId } });
    expect(license).toMatchObject({ maxActivations: planSeats * lastQuantity, customFields: { round: String(ROUNDS) }, status: ROUNDS % 2 ? 'suspended' : 'active' });
    expect(license.expiresAt!.getTime()).toBe(lastPeriodEnd * 1000);

    // Every change is in the activity log once, and the log's chain is whole.
    const audit = await t.prisma.auditLogEntry.findMany({ where: { entityId: licenseId }, select: { action: true } });
    const count = (action: string) => audit.filter((entry) => entry.action === action).length;
    expect(count('UpdateLicense')).toBeGreaterThanOrEqual(ROUNDS);
    expect(count('SuspendLicense') + count('ReinstateLicense')).toBe(ROUNDS);
    expect(await verifyAuditChain(t.prisma, tenantId, t.deps.secrets.auditChainKey)).toMatchObject({ valid: true, brokenAtSeq: null });
  }, 180_000);

  it(`never deadlocks over ${ROUNDS} rounds of refunds against a key reissue and an extension`, async () => {
    const logFrom = t.logs.length;
    const auth = { token };
    const failures: unknown[] = [];
    const licenseIds: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const sub = `sub_refund_${round}`;
      const bought = await deliver(stripeEvent('invoice.paid', { ...invoice(`in_r${round}`, 'subscription_create', 1, sec(T0 + 30 * DAY)), parent: { type: 'subscription_details', subscription_details: { subscription: sub, metadata: {} } } }, sec(T0) + round));
      expect(bought.status).toBe(200);
      const { licenseId } = await t.prisma.paymentSubscription.findUniqueOrThrow({ where: { connectionId_subject: { connectionId: connection.id, subject: sub } } });
      licenseIds.push(licenseId!);
      // All at once: the payment's refund (this connection suspends), a new key and a later expiry from staff.
      const [refund, reissue, extend] = await Promise.all([
        deliver(stripeEvent('charge.refunded', { id: `ch_r${round}`, object: 'charge', refunded: true, payment_intent: `pi_in_r${round}` }, sec(T0) + round + 1)),
        t.gql('mutation($id: ID!) { reissueLicenseKey(input: { id: $id }) { license { id } } }', { id: licenseId }, auth),
        t.gql('mutation($id: ID!, $at: DateTime!) { renewLicense(input: { id: $id, expiresAt: $at }) { license { id } } }', { id: licenseId, at: new Date(T0 + 400 * DAY).toISOString() }, auth),
      ]);
      if (refund.status !== 200) failures.push(['refund', refund.status, refund.json]);
      for (const answer of [reissue, extend]) if (answer.status !== 200 || answer.errors) failures.push(['staff', answer.status, answer.errors]);
    }
    expect(t.logs.slice(logFrom).filter((line) => /deadlock|40P01|unhandled error|InternalError/i.test(line)).map((line) => line.slice(0, 600))).toEqual([]);
    expect(failures).toEqual([]);

    // Each license refunded (suspended), reissued and extended, each change audited once.
    const licenses = await t.prisma.license.findMany({ where: { id: { in: licenseIds } } });
    expect(licenses.map((license) => [license.status, license.expiresAt?.toISOString()])).toEqual(licenseIds.map(() => ['suspended', new Date(T0 + 400 * DAY).toISOString()]));
    const audit = await t.prisma.auditLogEntry.groupBy({ by: ['action'], where: { entityId: { in: licenseIds }, action: { in: ['SuspendLicense', 'RenewLicense', 'ReissueLicenseKey'] } }, _count: true });
    expect(Object.fromEntries(audit.map((row) => [row.action, row._count]))).toEqual({ SuspendLicense: ROUNDS, RenewLicense: ROUNDS, ReissueLicenseKey: ROUNDS });
    expect(await verifyAuditChain(t.prisma, tenantId, t.deps.secrets.auditChainKey)).toMatchObject({ valid: true, brokenAtSeq: null });
  }, 180_000);
  it(`never deadlocks over ${ROUNDS} rounds of purchases against renames of their product and plan`, async () => {
    const logFrom = t.logs.length;
    const auth = { token };
    const failures: unknown[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const sub = `sub_rename_${round}`;
      // All at once: a new subscription (a license of the plan) and staff renaming its product and its plan, which
      // locks each row and then takes the activity log's lock the purchase holds.
      const [bought, product, plan] = await Promise.all([
        deliver(stripeEvent('invoice.paid', { ...invoice(`in_n${round}`, 'subscription_create', 1, sec(T0 + 30 * DAY)), parent: { type: 'subscription_details', subscription_details: { subscription: sub, metadata: {} } } }, sec(T0) + 5_000 + round)),
        t.gql('mutation($input: UpdateProductInput!) { updateProduct(input: $input) { product { id } } }', { input: { id: productId, name: `Acme Studio ${round}` } }, auth),
        t.gql('mutation($input: UpdatePlanInput!) { updatePlan(input: $input) { plan { id } } }', { input: { id: planId, name: `Pro monthly ${round}` } }, auth),
      ]);
      if (bought.status !== 200) failures.push(['purchase', bought.status, bought.json]);
      if (product.errors) failures.push(['updateProduct', product.errors]);
      if (plan.errors) failures.push(['updatePlan', plan.errors]);
    }
    expect(t.logs.slice(logFrom).filter((line) => /deadlock|40P01|unhandled error|InternalError/i.test(line)).map((line) => line.slice(0, 600))).toEqual([]);
    expect(failures).toEqual([]);
    expect(await t.prisma.paymentSubscription.count({ where: { connectionId: connection.id, subject: { startsWith: 'sub_rename_' }, licenseId: { not: null } } })).toBe(ROUNDS);
  }, 180_000);

  it(`never deadlocks over ${ROUNDS} rounds of plan changes at the provider against renames of the plan changed to`, async () => {
    const logFrom = t.logs.length;
    const auth = { token };
    const team = await createPlan(sys(), { productId, name: 'Team monthly', duration: 'P1M', maxActivations: 5, features: ['pro', 'team'] });
    await mapPaymentPrice(sys(), connection.id, { priceId: 'price_team', planId: team.id });
    const sub = 'sub_plan_change';
    const bought = await deliver(stripeEvent('invoice.paid', { ...invoice('in_pc0', 'subscription_create', 1, sec(T0 + 30 * DAY)), parent: { type: 'subscription_details', subscription_details: { subscription: sub, metadata: {} } } }, sec(T0) + 9_000));
    expect(bought.status).toBe(200);
    const failures: unknown[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // Odd rounds move the subscription to Team, even rounds back to Pro; staff renames that plan at the same time
      // (its row locked, then the activity log's lock, which the event holds while it changes the license's plan).
      const [price, target] = round % 2 ? ['price_team', team.id] : ['price_pro', planId];
      const moved = { ...subscription(1, sec(T0 + 30 * DAY)), id: sub, items: { object: 'list', data: [{ id: 'si_pc', object: 'subscription_item', price: { id: price, object: 'price' }, quantity: 1, current_period_end: sec(T0 + 30 * DAY) }] } };
      const [changed, renamed] = await Promise.all([
        deliver(stripeEvent('customer.subscription.updated', moved, sec(T0) + 9_000 + round)),
        t.gql('mutation($input: UpdatePlanInput!) { updatePlan(input: $input) { plan { id } } }', { input: { id: target, name: `Renamed ${round}` } }, auth),
      ]);
      if (changed.status !== 200) failures.push(['plan change', round, changed.status, changed.json]);
      if (renamed.errors) failures.push(['updatePlan', round, renamed.errors]);
      const state = await t.prisma.paymentSubscription.findUniqueOrThrow({ where: { connectionId_subject: { connectionId: connection.id, subject: sub } }, select: { licenseId: true } });
      const now = (await t.prisma.license.findUniqueOrThrow({ where: { id: state.licenseId! } })).planId;
      if (now !== target) failures.push(['the license is not on the plan changed to', round]);
    }
    expect(t.logs.slice(logFrom).filter((line) => /deadlock|40P01|unhandled error|InternalError/i.test(line)).map((line) => line.slice(0, 600))).toEqual([]);
    expect(failures).toEqual([]);
  }, 180_000);

  it(`never deadlocks over ${ROUNDS} rounds of a disconnect while the provider delivers purchases to the connection`, async () => {
    const logFrom = t.logs.length;
    const failures: unknown[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // The disconnect deletes the connection's row (its events, states and mappings cascade), then takes the
      // activity log's lock; each delivery takes that lock, then writes rows that reference the connection.
      const secret = `whsec_disconnect_${round}_0123456789`;
      const created = await createPaymentConnection(sys(), { provider: 'stripe', signingSecret: secret, refundAction: 'suspend' });
      await mapPaymentPrice(sys(), created.id, { priceId: 'price_pro', planId });
      const to = { id: created.id, secret };
      const purchase = (n: number) => stripeEvent('invoice.paid', { ...invoice(`in_d${round}_${n}`, 'subscription_create', 1, sec(T0 + 30 * DAY)), parent: { type: 'subscription_details', subscription_details: { subscription: `sub_d${round}_${n}`, metadata: {} } } }, sec(T0) + 20_000 + round);
      const [deleted, ...delivered] = await Promise.allSettled([deletePaymentConnection(sys(), created.id), ...[1, 2, 3].map((n) => deliver(purchase(n), to))]);
      if (deleted.status === 'rejected') failures.push(['disconnect', round, String(deleted.reason)]);
      for (const answer of delivered) {
        // Applied before the disconnect, or refused after it (the connection is gone): never a server error.
        if (answer.status === 'rejected' || ![200, 404].includes(answer.value.status)) failures.push(['delivery', round, answer.status === 'fulfilled' ? answer.value.json : String(answer.reason)]);
      }
      expect(await t.prisma.paymentConnection.count({ where: { id: created.id } })).toBe(0);
    }
    expect(t.logs.slice(logFrom).filter((line) => /deadlock|40P01|unhandled error|InternalError/i.test(line)).map((line) => line.slice(0, 600))).toEqual([]);
    expect(failures).toEqual([]);
    expect(await verifyAuditChain(t.prisma, tenantId, t.deps.secrets.auditChainKey)).toMatchObject({ valid: true, brokenAtSeq: null });
  }, 180_000);
});
