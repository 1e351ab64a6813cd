import type { Hono } from 'hono';
import type { AppDeps } from '../deps.js';
import { createGraphQLHandler } from '../graphql/handler.js';
import type { AppEnv } from './env.js';

/** Mounts the GraphQL endpoint: the actor and request metadata go in; cookies are read and set by yoga's cookie plugin. */
export function mountGraphQL(app: Hono<AppEnv>, deps: AppDeps): void {
  const graphql = createGraphQLHandler(deps);
  app.on(['GET', 'POST'], '/api/graphql', async (c) => {
    const response = await graphql.fetch(c.req.raw, {
      actor: c.get('actor'),
      meta: { ip: c.get('clientIp'), userAgent: c.req.header('user-agent') ?? null },
      requestId: c.get('requestId'),
    });
    const limited = await rateLimitedGraphQL(response);
    if (!limited) return response;
    // A refused sign-in step is an HTTP 429 with Retry-After, like the public API's limits.
    const headers = new Headers(response.headers);
    headers.set('retry-after', String(limited.retryAfterSeconds));
    return new Response(limited.body, { status: 429, headers });
  });
}

/** A GraphQL answer whose error is RateLimited (the sign-in limits): its body and Retry-After, else null. */
export async function rateLimitedGraphQL(response: Response): Promise<{ body: string; retryAfterSeconds: number } | null> {
  if (response.status !== 200 || !response.headers.get('content-type')?.includes('json')) return null;
  const body = await response.clone().text();
  if (!body.includes('"RateLimited"')) return null;
  const errors = (JSON.parse(body) as { errors?: { extensions?: { code?: string; retryAfterSeconds?: number } }[] }).errors ?? [];
  const limited = errors.find((error) => error.extensions?.code === 'RateLimited');
  return limited ? { body, retryAfterSeconds: limited.extensions?.retryAfterSeconds ?? 60 } : null;
}
