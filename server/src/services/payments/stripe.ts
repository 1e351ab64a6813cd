import Stripe from 'stripe';
import { field, positive, quantity, refsOf, seconds, SignatureError, text, type PaymentEventIn } from './model.js';

// Stripe: the `Stripe-Signature` header checked by the official SDK (`webhooks.constructEvent`: HMAC-SHA256 of
// `t.payload`, any v1 signature, the timestamp within 300 s of now), then the event turned into the internal model.
// Both shapes Stripe's API versions send are read: the subscription of an invoice at `subscription` (before
// 2025-03-31) or at `parent.subscription_details.subscription`, the period end on the subscription or its items.

export const STRIPE_TOLERANCE_SECONDS = 300;

/** The verified event, parsed; SignatureError when it is unsigned, badly signed or older than the tolerance. */
export function verifyStripe(rawBody: string, header: (name: string) => string | undefined, secret: string, now: Date): unknown {
  const signature = header('stripe-signature');
  if (!signature) throw new SignatureError('The Stripe-Signature header is missing.');
  try {
    return Stripe.webhooks.constructEvent(rawBody, signature, secret, STRIPE_TOLERANCE_SECONDS, undefined, now.getTime());
  } catch (error) {
    // constructEvent parses the body once the signature holds: a SyntaxError is a signed body that is not JSON.
    if (error instanceof SyntaxError) throw error;
    throw new SignatureError(`Stripe signature refused: ${(error as Error).message.split('\n')[0]}`);
  }
}

const subscriptionOfInvoice = (invoice: unknown) => text(field(invoice, 'subscription')) ?? text(field(invoice, 'subscription', 'id')) ?? text(field(invoice, 'parent', 'subscription_details', 'subscription'));

/** The first line of an invoice that names a price: its price, quantity and period end. */
function invoiceLine(invoice: unknown) {
  const lines = field(invoice, 'lines', 'data');
  for (const line of Array.isArray(lines) ? lines.slice(0, 50) : []) {
    const priceId = text(field(line, 'price', 'id')) ?? text(field(line, 'pricing', 'price_details', 'price')) ?? text(field(line, 'plan', 'id'));
    if (priceId) return { priceId, quantity: positive(field(line, 'quantity')), periodEnd: seconds(field(line, 'period', 'end')) };
  }
  return { priceId: null, quantity: 1, periodEnd: null };
}

function subscriptionItem(subscription: unknown) {
  const items = field(subscription, 'items', 'data');
  const item = Array.isArray(items) ? items[0] : undefined;
  return {
    priceId: text(field(item, 'price', 'id')) ?? text(field(item, 'plan', 'id')),
    quantity: quantity(field(item, 'quantity')) ?? quantity(field(subscription, 'quantity')),
    periodEnd: seconds(field(item, 'current_period_end')) ?? seconds(field(subscription, 'current_period_end')),
  };
}

export function normalizeStripe(event: unknown): PaymentEventIn {
  const id = text(field(event, 'id'));
  const type = text(field(event, 'type'));
  if (!id || !type) throw new TypeError('a Stripe event has an id and a type');
  const occurredAt = seconds(field(event, 'created'));
  const object = field(event, 'data', 'object');
  const done = (effect: PaymentEventIn['effect']): PaymentEventIn => ({ id, type, occurredAt, effect });
  const ignore = (reason: string) => done({ kind: 'ignored', reason });
  switch (type) {
    case 'checkout.session.completed': {
      if (field(object, 'payment_status') === 'unpaid') return ignore('the Checkout Session is not paid yet');
      const email = text(field(object, 'customer_details', 'email')) ?? text(field(object, 'customer_email'));
      const refs = refsOf(field(object, 'payment_intent'), field(object, 'invoice'), field(object, 'id'));
      const subscription = text(field(object, 'subscription'));
      // A subscription's price and quantity come with its first invoice (invoice.paid, billing_reason subscription_create).
      if (subscription) return done({ kind: 'purchase', subject: subscription, refs, priceId: null, quantity: 1, customerEmail: email, periodEnd: null });
      // A one-time payment: the webhook carries no line items, the Checkout Session's metadata names the price.
      const priceId = text(field(object, 'metadata', 'keyforge_price_id'));
      if (!priceId) return ignore('a one-time Checkout Session without metadata.keyforge_price_id');
      const subject = text(field(object, 'payment_intent')) ?? text(field(object, 'id'))!;
      return done({ kind: 'purchase', subject, refs, priceId, quantity: positive(Number(field(object, 'metadata', 'keyforge_quantity') ?? 1)), customerEmail: email, periodEnd: null });
    }
    case 'invoice.paid':
    case 'invoice.payment_succeeded': {
      const subject = subscriptionOfInvoice(object);
      if (!subject) return ignore('an invoice of no subscription');
      const line = invoiceLine(object);
      const refs = refsOf(field(object, 'id'), field(object, 'payment_intent'), field(object, 'charge'));
      const reason = field(object, 'billing_reason');
      if (reason === 'subscription_create') return done({ kind: 'purchase', subject, refs, priceId: line.priceId, quantity: line.quantity, customerEmail: text(field(object, 'customer_email')), periodEnd: line.periodEnd });
      if (reason === 'subscription_cycle' || reason === 'subscription_update') return done({ kind: 'renewal', subject, refs, periodEnd: line.periodEnd });
      return ignore(`an invoice with billing_reason ${String(reason)}`);
    }
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted': {
      const subject = text(field(object, 'id'));
      if (!subject || !occurredAt) return ignore('a subscription without an id');
      const item = subscriptionItem(object);
      const status = field(object, 'status');
      if (type === 'customer.subscription.deleted' || status === 'canceled' || status === 'incomplete_expired') {
        const endsAt = seconds(field(object, 'ended_at')) ?? seconds(field(object, 'canceled_at')) ?? occurredAt;
        return done({ kind: 'subscription', subject, refs: [], at: occurredAt, priceId: item.priceId, quantity: item.quantity, canceled: true, endsAt });
      }
      const cancelAt = seconds(field(object, 'cancel_at'));
      const canceled = field(object, 'cancel_at_period_end') === true || cancelAt !== null;
      return done({ kind: 'subscription', subject, refs: [], at: occurredAt, priceId: item.priceId, quantity: item.quantity, canceled, endsAt: canceled ? (cancelAt ?? item.periodEnd) : null });
    }
    case 'charge.refunded': {
      if (field(object, 'refunded') !== true) return ignore('a partial refund (the license stays)');
      return done({ kind: 'refund', subject: null, refs: refsOf(field(object, 'id'), field(object, 'payment_intent'), field(object, 'invoice')) });
    }
    case 'charge.dispute.closed': {
      if (field(object, 'status') !== 'lost') return ignore(`a dispute closed as ${String(field(object, 'status'))}`);
      return done({ kind: 'refund', subject: null, refs: refsOf(field(object, 'charge'), field(object, 'payment_intent')) });
    }
    default:
      return ignore(`Keyforge does not act on ${type}`);
  }
}
