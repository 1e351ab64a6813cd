// The one internal model of a payment provider's webhook event. Each provider's adapter (stripe.ts, paddle.ts,
// lemonsqueezy.ts) verifies a delivery's signature and turns its payload into a PaymentEventIn; apply.ts applies it.

import { MAX_SEATS } from '../licenses/attributes.js';
import { StorableDate } from '../validation.js';

export const PAYMENT_PROVIDERS = ['stripe', 'paddle', 'lemonsqueezy'] as const;
export type PaymentProvider = (typeof PAYMENT_PROVIDERS)[number];

export const PROVIDER_NAMES: Record<PaymentProvider, string> = { stripe: 'Stripe', paddle: 'Paddle', lemonsqueezy: 'Lemon Squeezy' };

/** What an event means for the license of one subscription (or one-time order). */
export type PaymentEffect =
  /** Not an event Keyforge acts on (answered 200, recorded as ignored). */
  | { kind: 'ignored'; reason: string }
  /**
   * A paid purchase. With a price it creates the license (once per subject); without one (Stripe's Checkout Session
   * of a subscription, whose invoice carries the price) it only adds what it knows (the email, payment references).
   */
  | { kind: 'purchase'; subject: string; refs: string[]; priceId: string | null; quantity: number; customerEmail: string | null; periodEnd: Date | null }
  /** A paid renewal: paid until periodEnd (when the provider says it; else one more of the plan's periods). */
  | { kind: 'renewal'; subject: string | null; refs: string[]; periodEnd: Date | null }
  /**
   * The subscription as of `at` (provider time): its price, quantity and cancellation, and, from a provider whose
   * invoices name no period (Lemon Squeezy's renews_at), the end of the period paid so far (null: not said).
   */
  | { kind: 'subscription'; subject: string; refs: string[]; at: Date; priceId: string | null; quantity: number | null; canceled: boolean; endsAt: Date | null; periodEnd?: Date | null }
  /** A refund or a lost dispute of a payment, found by subject or by one of the payment references. */
  | { kind: 'refund'; subject: string | null; refs: string[] };

export interface PaymentEventIn {
  /** The provider's id of the event: each is applied once per connection. */
  id: string;
  type: string;
  /** The provider's time of the event. */
  occurredAt: Date | null;
  effect: PaymentEffect;
}

/** A delivery refused before anything is read from it: no signature, a wrong one, a stale one (HTTP 401). */
export class SignatureError extends Error {}

/** Reading payloads: a property of an object, else undefined (payloads are untrusted JSON even once signed). */
export const field = (value: unknown, ...path: (string | number)[]): unknown => {
  let at = value;
  for (const key of path) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string | number, unknown>)[key];
  }
  return at;
};
export const text = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 && value.length <= 500 ? value : null);
export const int = (value: unknown): number | null => (typeof value === 'number' && Number.isSafeInteger(value) ? value : null);
/** A Unix time in seconds (Stripe) as a Date. */
export const seconds = (value: unknown): Date | null => {
  const n = int(value);
  return n !== null && n > 0 && n < 32503680000 ? new Date(n * 1000) : null;
};
/** An RFC 3339 time (Paddle, Lemon Squeezy) as a Date. */
export const isoTime = (value: unknown): Date | null => {
  const s = text(value);
  if (!s || s.length > 40) return null;
  const date = StorableDate.safeParse(s); // also refuses year 0 and negative years, which PostgreSQL cannot store
  return date.success ? date.data : null;
};
export const refsOf = (...values: unknown[]): string[] => [...new Set(values.map(text).filter((value): value is string => value !== null))];
/** A subscription's quantity, at most MAX_SEATS (what a license can take, and what its column can store); null: not given. */
export const quantity = (value: unknown): number | null => {
  const n = int(value);
  return n !== null && n >= 0 ? Math.min(n, MAX_SEATS) : null;
};
export const positive = (value: unknown, fallback = 1): number => {
  const n = int(value);
  return n !== null && n >= 1 && n <= 100_000 ? n : fallback;
};
