import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';

/** The management API (GraphQL, dashboard and user routes): CORS only for the console's origin, with credentials. */
export function managementCors(consoleOrigin: string): MiddlewareHandler {
  return cors({
    origin: consoleOrigin,
    credentials: true,
    allowHeaders: ['authorization', 'content-type', 'x-api-key', 'x-keyforge-csrf'],
    exposeHeaders: ['x-request-id', 'retry-after'],
  });
}
