import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../../deps.js';
import { publicRoute } from '../../http/public-api.js';
import { MAX_PAYMENT_BODY_BYTES, receivePaymentWebhook } from '../../services/payments/apply.js';
import { commonErrors, ErrorResponse, json, noCredential } from './schemas.js';

const route = createRoute({
  method: 'post',
  path: '/payments/{connectionId}/webhook',
  operationId: 'receivePaymentWebhook',
  security: noCredential,
  tags: ['Payments'],
  summary: 'Receive a payment provider webhook',
  description: [
    "Called by Stripe, Paddle Billing or Lemon Squeezy, never by applications: paste this URL (the console's Payments page shows it) into the provider.",
    "The credential is the provider's signature of the raw body: `Stripe-Signature` (at most 300 s old), `Paddle-Signature` (at most 5 s old) or `X-Signature`, checked with the connection's signing secret.",
    'Each provider event is applied once, however often it is delivered; event types Keyforge does not act on are answered 200 and recorded as ignored.',
    'Verified deliveries are not counted against the per-IP rate limit (a provider sends every company\'s events from a few addresses); refused ones (400, 401, 404) are, and an address past its budget is answered 429.',
    'See docs/integrate/payments.md.',
  ].join(' '),
  request: {
    params: z.object({ connectionId: z.string().openapi({ description: "The payment connection's id (random; it is part of the URL the provider calls).", example: '6f1c2a8e-3b4d-4c5e-9f60-7a8b9c0d1e2f' }) }),
    body: { content: { 'application/json': { schema: z.record(z.string(), z.unknown()).openapi({ description: "The provider's event, exactly as it sent it (the signature covers the raw bytes)." }) } }, required: true },
  },
  responses: {
    200: json(
      z
        .object({
          received: z.literal(true),
          outcome: z.enum(['applied', 'ignored', 'pending', 'duplicate']).openapi({ description: 'applied; ignored (not an event Keyforge acts on); pending (waits for the purchase it refers to); duplicate (received before).' }),
        })
        .openapi('PaymentWebhookReceived'),
      'Received.',
    ),
    400: json(ErrorResponse, 'The signed body is not JSON or not an event of the provider, or it is over 512 KiB (`InvalidRequest`).'),
    401: json(ErrorResponse, 'Unsigned, badly signed or stale (`Unauthorized`): nothing is written.'),
    404: json(ErrorResponse, 'No enabled payment connection has this id (`NotFound`).'),
    409: json(ErrorResponse, "The purchase's price is not mapped to a plan (or its plan is archived) (`Conflict`): recorded as failed and applied by the provider's retry once it is fixed."),
    429: commonErrors[429],
    503: commonErrors[503],
  },
});

export const paymentWebhook = (deps: AppDeps) =>
  publicRoute(
    route,
    async (call) => {
      const result = await receivePaymentWebhook({ db: deps.db, secrets: deps.secrets, now: deps.clock(), publicUrl: deps.config.publicUrl }, call.params?.connectionId ?? '', call.rawBody ?? '', call.header);
      return { body: { received: true, outcome: result.outcome }, headers: { 'Cache-Control': 'no-store' } };
    },
    { rawBodyBytes: MAX_PAYMENT_BODY_BYTES, ipLimit: 'refusals' },
  );
