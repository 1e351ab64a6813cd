import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../../deps.js';
import { publicRoute } from '../../http/public-api.js';
import { checkinFloatingSession } from '../../services/floating/sessions.js';
import { licensingContext } from './context.js';
import { sessionSecurity, sessionTokenBody, sessionTokenOf } from './float-heartbeat.js';
import { RejectionCode, commonErrors, json } from './schemas.js';

const CheckinResponse = z
  .union([
    z.object({
      checkedIn: z.literal(true),
      sessionId: z.string(),
      endedAt: z.string().openapi({ format: 'date-time' }),
      endReason: z.string().openapi({ description: 'checkin, or how the session had already ended: expired, replaced, revoked, suspended, license_expired, floating_disabled, admin.' }),
    }),
    z.object({ checkedIn: z.literal(false), message: z.string(), errorCode: RejectionCode }),
  ])
  .openapi('FloatCheckinResponse');

const route = createRoute({
  method: 'post',
  path: '/float/checkin',
  operationId: 'floatCheckin',
  tags: ['Floating'],
  summary: 'Release a floating seat',
  description: 'Ends the session and frees its seat at once. Idempotent: checking in a session that has already ended answers `checkedIn: true` with its original endedAt and endReason. An unknown token answers HTTP 200 `checkedIn: false`, errorCode SessionInvalid.',
  security: sessionSecurity,
  request: sessionTokenBody,
  responses: { 200: json(CheckinResponse, 'Checked in, or an unknown token.'), ...commonErrors },
});

export const floatCheckin = (deps: AppDeps) => publicRoute(route, async (call) => ({ body: await checkinFloatingSession(licensingContext(deps), sessionTokenOf(call)) }));
