import type { MiddlewareHandler } from 'hono';
import { secureHeaders } from 'hono/secure-headers';

/**
 * Browser-facing responses (console, management API) get the full set of security headers. (The JSON-only public
 * API is served by http/public-api.ts, which sends only nosniff.)
 */
export function securityHeaders(): MiddlewareHandler {
  return secureHeaders({ crossOriginResourcePolicy: false });
}
