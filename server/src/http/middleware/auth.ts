import type { MiddlewareHandler } from 'hono';
import { authenticate } from '../../services/auth/sessions.js';
import type { AppDeps } from '../../deps.js';
import type { AppEnv } from '../env.js';

/** The token of an `Authorization: Bearer <token>` header, else null. */
export const bearerTokenOf = (header: string | undefined) => header?.match(/^Bearer\s+(\S+)$/i)?.[1] ?? null;

/**
 * Resolves the management caller from `Authorization: Bearer <access token>` or `X-Api-Key`. No credential
 * leaves the actor null (GraphQL still serves login/setup); a bad one is a 401.
 */
export function managementAuth(deps: AppDeps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.req.method === 'OPTIONS') return next();
    const bearer = bearerTokenOf(c.req.header('authorization'));
    const apiKey = c.req.header('x-api-key') ?? null;
    c.set('actor', await authenticate({ db: deps.db, secrets: deps.secrets, now: deps.clock() }, { bearer, apiKey }));
    await next();
  };
}
