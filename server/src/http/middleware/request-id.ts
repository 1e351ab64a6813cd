import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env.js';

const PLAIN_TOKEN = /^[\w\-=]{1,255}$/;

/**
 * The id of one request (the `X-Request-Id` response header, and `requestId` in its log lines and error bodies): the
 * caller's own X-Request-Id when it is a plain token (a balancer's id follows the request through), else a new UUID.
 */
export function requestIdOf(incoming: string | undefined): string {
  return incoming !== undefined && PLAIN_TOKEN.test(incoming) ? incoming : crypto.randomUUID();
}

/** Sets `requestId` and the X-Request-Id header on every request of the Hono app. */
export function requestIdMiddleware(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const id = requestIdOf(c.req.header('x-request-id'));
    c.set('requestId', id);
    c.header('X-Request-Id', id);
    await next();
  };
}
