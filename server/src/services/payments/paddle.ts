import { NodeRuntime, Webhooks } from '@paddle/paddle-node-sdk';
import { field, isoTime, positive, quantity, refsOf, SignatureError, text, type PaymentEventIn } from './model.js';

// Paddle Billing: the `Paddle-Signature` header (`ts=…;h1=…`, HMAC-SHA256 of `ts:rawBody`) checked by the official
// SDK (`Webhooks.isSignatureValid`, which refuses a timestamp more than 5 s old), then the event turned into the
// internal model. Paddle's payloads name no customer email (only a customer id): the email is read from the
// transaction's `customer.email` when present, else from its custom_data (`email`), else the key is not mailed.

NodeRuntime.initialize();
const webhooks = new Webhooks();

export async function verifyPaddle(rawBody: string, header: (name: string) => string | undefined, secret: string): Promise<unknown> {
  const signature = header('paddle-signature');
  if (!signature) throw new SignatureError('The Paddle-Signature header is missing.');
  let valid = false;
  try {
    valid = await webhooks.isSignatureValid(rawBody, secret, signature);
  } catch {
    throw new SignatureError('The Paddle-Signature header is malformed.');
  }
  if (!valid) throw new SignatureError('The Paddle-Signature does not match the body, or it is older than 5 seconds.');
  return JSON.parse(rawBody);
}

function firstItem(object: unknown) {
  const items = field(object, 'items');
  const item = Array.isArray(items) ? items[0] : undefined;
  return { priceId: text(field(item, 'price', 'id')) ?? text(field(item, 'price_id')), quantity: quantity(field(item, 'quantity')) };
}

export function normalizePaddle(event: unknown): PaymentEventIn {
  const id = text(field(event, 'event_id'));
  const type = text(field(event, 'event_type'));
  if (!id || !type) throw new TypeError('a Paddle event has an event_id and an event_type');
  const occurredAt = isoTime(field(event, 'occurred_at'));
  const object = field(event, 'data');
  const done = (effect: PaymentEventIn['effect']): PaymentEventIn => ({ id, type, occurredAt, effect });
  const ignore = (reason: string) => done({ kind: 'ignored', reason });
  switch (type) {
    case 'transaction.completed': {
      const transactionId = text(field(object, 'id'));
      if (!transactionId) return ignore('a transaction without an id');
      const subscription = text(field(object, 'subscription_id'));
      const item = firstItem(object);
      const periodEnd = isoTime(field(object, 'billing_period', 'ends_at'));
      const refs = refsOf(transactionId);
      const origin = field(object, 'origin');
      if (subscription && (origin === 'subscription_recurring' || origin === 'subscription_update' || origin === 'subscription_charge')) {
        return done({ kind: 'renewal', subject: subscription, refs, periodEnd });
      }
      const email = text(field(object, 'customer', 'email')) ?? text(field(object, 'custom_data', 'email'));
      return done({ kind: 'purchase', subject: subscription ?? transactionId, refs, priceId: item.priceId, quantity: positive(item.quantity), customerEmail: email, periodEnd });
    }
    case 'subscription.created':
    case 'subscription.activated':
    case 'subscription.updated':
    case 'subscription.canceled':
    case 'subscription.resumed': {
      const subject = text(field(object, 'id'));
      const at = isoTime(field(object, 'updated_at')) ?? occurredAt;
      if (!subject || !at) return ignore('a subscription without an id');
      const item = firstItem(object);
      const status = field(object, 'status');
      if (type === 'subscription.canceled' || status === 'canceled') {
        return done({ kind: 'subscription', subject, refs: [], at, priceId: item.priceId, quantity: item.quantity, canceled: true, endsAt: isoTime(field(object, 'canceled_at')) ?? at });
      }
      const scheduled = field(object, 'scheduled_change');
      const canceling = field(scheduled, 'action') === 'cancel';
      const endsAt = canceling ? (isoTime(field(scheduled, 'effective_at')) ?? isoTime(field(object, 'current_billing_period', 'ends_at'))) : null;
      return done({ kind: 'subscription', subject, refs: [], at, priceId: item.priceId, quantity: item.quantity, canceled: canceling, endsAt });
    }
    case 'adjustment.created':
    case 'adjustment.updated': {
      const action = field(object, 'action');
      const approved = field(object, 'status') === 'approved';
      const full = field(object, 'type') !== 'partial';
      if (!((action === 'refund' && approved && full) || action === 'chargeback')) return ignore(`an adjustment (${String(action)}, ${String(field(object, 'status'))}) that does not end the purchase`);
      return done({ kind: 'refund', subject: text(field(object, 'subscription_id')), refs: refsOf(field(object, 'transaction_id')) });
    }
    default:
      return ignore(`Keyforge does not act on ${type}`);
  }
}
