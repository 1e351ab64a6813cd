import { OpenAPIHono } from '@hono/zod-openapi';
import { parse as parseContentType } from 'content-type';
import { AppError, REJECTION_CODES } from '../../domain/errors.js';
import type { AppDeps } from '../../deps.js';
import type { AppEnv } from '../../http/env.js';
import { errorResponse } from '../../http/errors.js';
import { unstorableStringError } from '../../services/validation.js';
import { mountActivate } from './activate.js';
import { mountDeactivate } from './deactivate.js';
import { mountFloatCheckin } from './float-checkin.js';
import { mountFloatCheckout } from './float-checkout.js';
import { mountFloatHeartbeat } from './float-heartbeat.js';
import { mountMeter } from './meter.js';
import { mountNonce } from './nonce.js';
import { mountValidate } from './validate.js';

/** `application/json` (any letter case), optionally with `charset=utf-8`: the one media type the API documents. */
export function isDocumentedJson(contentType: string): boolean {
  try {
    const { type, parameters } = parseContentType(contentType);
    return type === 'application/json' && Object.entries(parameters).every(([name, value]) => name === 'charset' && value.toLowerCase() === 'utf-8');
  } catch {
    return false;
  }
}

/** The public licensing API, `/api/v1`, with its OpenAPI 3.1 document generated from the route schemas. */
export function createPublicApi(deps: AppDeps): OpenAPIHono<AppEnv> {
  const v1 = new OpenAPIHono<AppEnv>({
    defaultHook: (result, c) => {
      if (result.success) return;
      const fields: Record<string, string> = {};
      for (const issue of result.error.issues) fields[issue.path.join('.') || '(body)'] ??= issue.message;
      const summary = Object.entries(fields).map(([field, message]) => `${field}: ${message}`).join('; ');
      return errorResponse(c, new AppError('InvalidRequest', `Invalid request: ${summary}`, { fields }));
    },
  });
  // Bodies are JSON, as documented: a POST with any other media type is refused before a route sees it (Hono
  // itself would also parse `application/*+json` in any letter case). A NUL or lone surrogate anywhere in a JSON
  // body is refused too (PostgreSQL cannot store it); the parsed body is cached, the route does not parse it again.
  v1.use('*', async (c, next) => {
    const contentType = c.req.header('content-type');
    if (c.req.method === 'POST' && contentType !== undefined) {
      if (!isDocumentedJson(contentType)) return errorResponse(c, new AppError('InvalidRequest', 'Send the body as JSON with Content-Type: application/json.'));
      const body = await c.req.json().catch(() => undefined);
      const error = unstorableStringError(body);
      if (error) return errorResponse(c, error);
    }
    await next();
  });
  mountNonce(v1, deps);
  mountActivate(v1, deps);
  mountValidate(v1, deps);
  mountDeactivate(v1, deps);
  mountFloatCheckout(v1, deps);
  mountFloatHeartbeat(v1, deps);
  mountFloatCheckin(v1, deps);
  mountMeter(v1, deps);
  v1.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: {
      title: 'Keyforge public licensing API',
      version: '1.0.0',
      description: [
        'Called by customer applications. No admin credential: the license key (in the JSON body, never the URL) is the credential.',
        'Floating sessions: checkout with the license key; heartbeat and checkin with the session token, in the JSON body or `Authorization: Bearer`, never the URL.',
        'HTTP 200 can carry a rejection: grant access only when `isValid` is true.',
        `Rejection errorCodes (HTTP 200): ${REJECTION_CODES.join(', ')}.`,
        'Request bodies are JSON: `Content-Type: application/json` (optionally `; charset=utf-8`); any other media type is refused with 400 InvalidRequest.',
        'HTTP errors have the body `{ "error": { "code", "message", "requestId" } }` with code InvalidRequest or NonceRequired (400), NonceInvalid (422), RateLimited (429, with Retry-After), ServiceUnavailable (503), InternalError (500).',
        'Offline tokens are verified with the Ed25519 keys published at `/.well-known/jwks.json` (algorithm EdDSA).',
      ].join('\n\n'),
    },
    servers: [{ url: `${deps.config.publicUrl}/api/v1` }],
  });
  return v1;
}
