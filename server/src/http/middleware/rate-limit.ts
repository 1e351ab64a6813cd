import type { MiddlewareHandler } from 'hono';
import type { RateLimits } from '../../ratelimit/index.js';
import type { AppEnv } from '../env.js';

/** The public API's per-IP limit, with the IETF RateLimit-* headers on every answer (past it: 429 from RateLimited). */
export function perIpRateLimit(rateLimits: RateLimits): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const state = await rateLimits.perIp(c.get('clientIp'));
    c.header('RateLimit-Limit', String(state.limit));
    c.header('RateLimit-Remaining', String(state.remaining));
    c.header('RateLimit-Reset', String(state.resetSeconds));
    await next();
  };
}
