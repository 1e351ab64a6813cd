import type { MiddlewareHandler } from 'hono';
import { secureHeaders } from 'hono/secure-headers';

/**
 * Browser-facing responses (console, management API) get the full set of security headers; the JSON-only
 * public API, on the hot path, only needs nosniff.
 */
export function securityHeaders(): MiddlewareHandler {
  const browserHeaders = secureHeaders({ crossOriginResourcePolicy: false });
  return async (c, next) => {
    if (!c.req.path.startsWith('/api/v1/')) return browserHeaders(c, next);
    // Set before next(): a header added to a finished response makes Hono rebuild it as a streamed Response.
    c.header('X-Content-Type-Options', 'nosniff');
    await next();
  };
}
