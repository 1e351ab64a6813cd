import { createRoute, z } from '@hono/zod-openapi';
import { AppError } from '../../domain/errors.js';
import type { AppDeps } from '../../deps.js';
import { publicRoute, type PublicCall } from '../../http/public-api.js';
import { HEARTBEAT_INTERVAL_SECONDS, LEASE_SECONDS, heartbeatFloatingSession } from '../../services/floating/sessions.js';
import { licensingContext } from './context.js';
import { Rejection, commonErrors, json } from './schemas.js';

// Shared by heartbeat and checkin: the session token travels in the JSON body or an Authorization
// header, never in the URL (http/public-api.ts refuses URLs that carry one).

export const SessionTokenRequest = z
  .object({
    sessionToken: z.string().min(1).max(256).optional().openapi({ description: 'The token from checkout. Alternatively send `Authorization: Bearer <token>` (then the body may be empty).' }),
  })
  .openapi('FloatSessionRequest');

/** The body is optional: `Authorization: Bearer` alone is enough. */
export const sessionTokenBody = { body: { content: { 'application/json': { schema: SessionTokenRequest } }, required: false } };
export const sessionSecurity: Record<string, string[]>[] = [{ SessionToken: [] }, {}];

/** The `SessionToken` security scheme of the OpenAPI document (rest/v1/index.ts registers it). */
export const sessionTokenScheme = {
  type: 'http' as const,
  scheme: 'bearer',
  description: 'The floating session token from POST /float/checkout (or send it as `sessionToken` in the JSON body).',
};

/** The token from the body or the Bearer header; missing, malformed or contradicting → 400 InvalidRequest. */
export function sessionTokenOf({ body, header: headerOf }: PublicCall<{ sessionToken?: string }>): string {
  const header = headerOf('authorization');
  const bearer = header === undefined ? undefined : /^Bearer +(\S+) *$/i.exec(header)?.[1];
  if (header !== undefined && !bearer) {
    throw new AppError('InvalidRequest', 'The Authorization header must be "Bearer <session token>".', { fields: { authorization: 'expected Bearer <session token>' } });
  }
  if (body.sessionToken && bearer && body.sessionToken !== bearer) {
    throw new AppError('InvalidRequest', 'Two different session tokens: send it once, in the body or the Authorization header.', { fields: { sessionToken: 'differs from the Authorization header' } });
  }
  const token = body.sessionToken ?? bearer;
  if (!token) {
    throw new AppError('InvalidRequest', 'The session token is required: send "sessionToken" in the JSON body or an Authorization: Bearer header.', { fields: { sessionToken: 'Required' } });
  }
  return token;
}

const HeartbeatSuccess = z
  .object({
    isValid: z.literal(true),
    sessionId: z.string(),
    leaseExpiresAt: z.string().openapi({ format: 'date-time' }),
    leaseSeconds: z.number().int().openapi({ example: LEASE_SECONDS }),
    heartbeatIntervalSeconds: z.number().int().openapi({ example: HEARTBEAT_INTERVAL_SECONDS }),
  })
  .openapi('FloatHeartbeatSuccess');

const route = createRoute({
  method: 'post',
  path: '/float/heartbeat',
  operationId: 'floatHeartbeat',
  tags: ['Floating'],
  summary: 'Renew a floating session’s lease',
  description: `Extends the lease to ${LEASE_SECONDS} s from now. Call every heartbeatIntervalSeconds (${HEARTBEAT_INTERVAL_SECONDS} s). Rejections (HTTP 200, \`isValid: false\`): SessionInvalid (unknown token), SessionExpired (the session was checked in, replaced, ended by the vendor, or its lease lapsed: check out again), LicenseRevoked / Suspended / LicenseExpired / FloatingNotEnabled (the license no longer allows it; the session is ended). A missing token is 400 InvalidRequest.`,
  security: sessionSecurity,
  request: sessionTokenBody,
  responses: { 200: json(z.union([HeartbeatSuccess, Rejection]), 'The renewed lease, or a rejection.'), ...commonErrors },
});

export const floatHeartbeat = (deps: AppDeps) => publicRoute(route, async (call) => ({ body: await heartbeatFloatingSession(licensingContext(deps), sessionTokenOf(call)) }));
