import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';

// Idempotent-Replayed tells a browser client that a meter call was a repeat (README "Client SDK").
const PUBLIC_EXPOSED_HEADERS = 'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, idempotent-replayed';

/**
 * Any origin may call the public API (web apps validate too); it never uses cookies. Preflights go through
 * Hono's cors; actual calls (the hot path) just get the two CORS headers.
 */
export function publicApiCors(): MiddlewareHandler {
  const preflight = cors({ origin: '*', exposeHeaders: PUBLIC_EXPOSED_HEADERS.split(', ') });
  return async (c, next) => {
    if (c.req.method === 'OPTIONS') return preflight(c, next);
    c.header('Access-Control-Allow-Origin', '*');
    c.header('Access-Control-Expose-Headers', PUBLIC_EXPOSED_HEADERS);
    await next();
  };
}

/** The management API (GraphQL, dashboard and user routes): CORS only for the console's origin, with credentials. */
export function managementCors(consoleOrigin: string): MiddlewareHandler {
  return cors({
    origin: consoleOrigin,
    credentials: true,
    allowHeaders: ['authorization', 'content-type', 'x-api-key', 'x-keyforge-csrf'],
    exposeHeaders: ['x-request-id', 'retry-after'],
  });
}
