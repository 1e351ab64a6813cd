import { createHmac, createHash, timingSafeEqual } from 'node:crypto';
import { field, int, isoTime, positive, quantity, refsOf, SignatureError, text, type PaymentEventIn } from './model.js';

// Lemon Squeezy: `X-Signature` is the hex HMAC-SHA256 of the raw body under the webhook's signing secret (its
// documented scheme; there is no official Node SDK for it), compared in constant time. Its payloads carry no event
// id: an event is named by its type, object and the object's updated_at, which a retry repeats exactly.

export function verifyLemonSqueezy(rawBody: string, header: (name: string) => string | undefined, secret: string): unknown {
  const signature = header('x-signature');
  if (!signature) throw new SignatureError('The X-Signature header is missing.');
  const expected = createHmac('sha256', secret).update(rawBody, 'utf8').digest();
  const given = /^[0-9a-f]{64}$/i.test(signature) ? Buffer.from(signature, 'hex') : null;
  if (!given || !timingSafeEqual(given, expected)) throw new SignatureError('The X-Signature does not match the body.');
  return JSON.parse(rawBody);
}

export function normalizeLemonSqueezy(payload: unknown): PaymentEventIn {
  const type = text(field(payload, 'meta', 'event_name'));
  const data = field(payload, 'data');
  const objectId = text(String(field(data, 'id') ?? ''));
  if (!type || !objectId) throw new TypeError('a Lemon Squeezy event has meta.event_name and data.id');
  const attributes = field(data, 'attributes');
  const updatedAt = isoTime(field(attributes, 'updated_at')) ?? isoTime(field(attributes, 'created_at'));
  const id = `${type}:${objectId}:${updatedAt?.toISOString() ?? createHash('sha256').update(JSON.stringify(attributes ?? null)).digest('hex').slice(0, 16)}`;
  const done = (effect: PaymentEventIn['effect']): PaymentEventIn => ({ id, type, occurredAt: updatedAt, effect });
  const ignore = (reason: string) => done({ kind: 'ignored', reason });
  const variant = (value: unknown) => (int(value) !== null ? String(value) : text(value));
  switch (type) {
    case 'order_created': {
      if (field(attributes, 'status') !== 'paid') return ignore('an order that is not paid');
      const item = field(attributes, 'first_order_item');
      // A subscription's order is followed by subscription_created, which names the subscription: the order is the subject until then.
      return done({ kind: 'purchase', subject: `order:${objectId}`, refs: refsOf(`order:${objectId}`), priceId: variant(field(item, 'variant_id')), quantity: positive(field(item, 'quantity')), customerEmail: text(field(attributes, 'user_email')), periodEnd: null });
    }
    case 'subscription_created':
    case 'subscription_updated':
    case 'subscription_cancelled':
    case 'subscription_expired':
    case 'subscription_resumed': {
      if (!updatedAt) return ignore('a subscription without updated_at');
      const status = field(attributes, 'status');
      const ended = type === 'subscription_expired' || status === 'expired';
      const canceled = ended || status === 'cancelled' || type === 'subscription_cancelled';
      const endsAt = ended ? (isoTime(field(attributes, 'ends_at')) ?? updatedAt) : canceled ? (isoTime(field(attributes, 'ends_at')) ?? updatedAt) : null;
      const orderId = int(field(attributes, 'order_id')) !== null ? `order:${field(attributes, 'order_id')}` : null;
      return done({
        kind: 'subscription',
        subject: orderId ?? `subscription:${objectId}`,
        refs: [`subscription:${objectId}`],
        at: updatedAt,
        priceId: variant(field(attributes, 'variant_id')),
        quantity: quantity(field(attributes, 'first_subscription_item', 'quantity')),
        canceled,
        endsAt,
        // Its invoices name no period: the subscription's renews_at is the end of the period paid so far.
        periodEnd: ended ? null : isoTime(field(attributes, 'renews_at')),
      });
    }
    case 'subscription_payment_success': {
      if (field(attributes, 'billing_reason') !== 'renewal') return ignore(`a subscription payment with billing_reason ${String(field(attributes, 'billing_reason'))}`);
      const subscriptionId = field(attributes, 'subscription_id');
      if (int(subscriptionId) === null) return ignore('a subscription payment without subscription_id');
      // An invoice names its subscription, not the order the subscription's events are filed under: matched by reference.
      return done({ kind: 'renewal', subject: null, refs: [`subscription:${subscriptionId}`], periodEnd: null });
    }
    case 'order_refunded':
      return done({ kind: 'refund', subject: `order:${objectId}`, refs: refsOf(`order:${objectId}`) });
    default:
      return ignore(`Keyforge does not act on ${type}`);
  }
}
