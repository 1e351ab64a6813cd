import { OpenAPIHono, createRoute } from '@hono/zod-openapi';
import type { AppDeps } from '../../deps.js';
import { REJECTION_CODES } from '../../domain/errors.js';
import { publicRoute, type PublicRoute } from '../../http/public-api.js';
import { activate } from './activate.js';
import { deactivate } from './deactivate.js';
import { floatCheckin } from './float-checkin.js';
import { floatCheckout } from './float-checkout.js';
import { floatHeartbeat, sessionTokenScheme } from './float-heartbeat.js';
import { licenseFile } from './license-file.js';
import { electronFeed, feedDownload, tauriFeed } from './feeds.js';
import { meter } from './meter.js';
import { nonce } from './nonce.js';
import { paymentWebhook } from './payment-webhook.js';
import { artifactDownload, artifactFile, licenseKeyScheme, listReleases, upgradeCheck } from './releases.js';
import { validate } from './validate.js';

/** The public licensing API, `/api/v1` (served by http/public-api.ts), with its OpenAPI 3.1 document at /openapi.json. */
export function publicRoutes(deps: AppDeps): PublicRoute[] {
  const api = [nonce, activate, validate, deactivate, floatCheckout, floatHeartbeat, floatCheckin, meter, licenseFile, paymentWebhook, listReleases, upgradeCheck, artifactDownload, artifactFile, electronFeed, tauriFeed, feedDownload].map((route) => route(deps));
  let document: object | undefined;
  const documentRoute = publicRoute(createRoute({ method: 'get', path: '/openapi.json', responses: { 200: { description: 'This document.' } } }), async () => ({
    body: (document ??= publicApiDocument(api, deps.config.publicUrl)),
  }));
  return [...api, documentRoute];
}

/** The OpenAPI 3.1 document of `routes`, generated from their `createRoute` definitions (the schemas that validate). */
export function publicApiDocument(routes: PublicRoute[], publicUrl: string): object {
  // OpenAPIHono serves here only as zod-openapi's registry and generator; it routes nothing.
  const registry = new OpenAPIHono();
  registry.openAPIRegistry.registerComponent('securitySchemes', 'SessionToken', sessionTokenScheme);
  registry.openAPIRegistry.registerComponent('securitySchemes', 'LicenseKey', licenseKeyScheme);
  for (const route of routes) registry.openAPIRegistry.registerPath(route.definition);
  return registry.getOpenAPI31Document({
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
        'Release routes (`/releases`, `/releases/upgrade`, `/artifacts/{id}/download`) are GET requests: the license key goes in the header `Authorization: License <key>`.',
        'Offline tokens are verified with the Ed25519 keys published at `/.well-known/jwks.json` (algorithm EdDSA).',
      ].join('\n\n'),
    },
    servers: [{ url: `${publicUrl}/api/v1` }],
  });
}
