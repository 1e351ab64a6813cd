/** A Stripe webhook event around `object`, in the envelope Stripe sends (API version 2025-08-27.basil). */
export const stripeEventEnvelope = (id: string, type: string, object: Record<string, unknown>, created: number) => ({
  id,
  object: 'event',
  api_version: '2025-08-27.basil',
  created,
  data: { object },
  livemode: false,
  pending_webhooks: 1,
  request: { id: null, idempotency_key: null },
  type,
});
