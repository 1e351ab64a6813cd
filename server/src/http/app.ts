import { Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { cors } from 'hono/cors';
import { requestId } from 'hono/request-id';
import { secureHeaders } from 'hono/secure-headers';
import { KEY_LIKE_PATTERN } from '../crypto/license-key.js';
import { AppError } from '../domain/errors.js';
import { createGraphQLHandler } from '../graphql/handler.js';
import { REFRESH_COOKIE } from '../graphql/schema/account.js';
import { mountAdminRoutes } from '../rest/admin/index.js';
import { createPublicApi } from '../rest/v1/index.js';
import { SESSION_TOKEN_LIKE_PATTERN } from '../services/floating/sessions.js';
import { publicJwks } from '../services/signing/signing-keys.js';
import { bodySizeLimit } from './body-size.js';
import { clientIpResolver } from './client-ip.js';
import { mountConsole } from './console.js';
import type { AppDeps } from './deps.js';
import type { AppEnv } from './env.js';
import { errorResponse, toAppError, UNAVAILABLE_RETRY_AFTER_SECONDS } from './errors.js';
import { managementAuth } from './management-auth.js';

export const MAX_PUBLIC_BODY_BYTES = 16 * 1024;
const MAX_MANAGEMENT_BODY_BYTES = 256 * 1024;
const PUBLIC_EXPOSED_HEADERS = 'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset';
const KEY_PARAM_NAMES = new Set(['licensekey', 'license_key', 'key', 'license', 'sessiontoken', 'session_token']);
// License keys and floating-session tokens: refused in URLs, masked in logged paths.
const CREDENTIAL_LIKE = new RegExp(`${KEY_LIKE_PATTERN.source}|${SESSION_TOKEN_LIKE_PATTERN.source}`, 'i');
const KEY_LIKE_GLOBAL = new RegExp(CREDENTIAL_LIKE.source, 'gi');

/** `consoleDir`: the built admin console to serve at `/` (absent in tests and API-only deployments). */
export function createApp(deps: AppDeps, options: { consoleDir?: string } = {}): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const clientIp = clientIpResolver(deps.config.trustProxy);

  app.use(requestId());
  app.use(async (c, next) => {
    c.set('clientIp', clientIp(c));
    c.set('actor', null);
    const started = performance.now();
    await next();
    if (!deps.logger.isLevelEnabled('info')) return;
    // Path only: query strings and bodies are never logged; a key pasted into a path is masked.
    deps.logger.info(
      {
        requestId: c.get('requestId'),
        method: c.req.method,
        path: c.req.path.replace(KEY_LIKE_GLOBAL, '[redacted]'),
        status: c.res.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
        ip: c.get('clientIp'),
      },
      'request',
    );
  });
  // Browser-facing responses (console, management API) get the full set of security headers; the JSON-only
  // public API, on the hot path, only needs nosniff.
  const browserHeaders = secureHeaders({ crossOriginResourcePolicy: false });
  app.use(async (c, next) => {
    if (!c.req.path.startsWith('/api/v1/')) return browserHeaders(c, next);
    // Set before next(): a header added to a finished response makes Hono rebuild it as a streamed Response.
    c.header('X-Content-Type-Options', 'nosniff');
    await next();
  });

  // A license key is a credential: it must never travel in a URL, where proxies and logs keep it.
  app.use(async (c, next) => {
    let leaked = CREDENTIAL_LIKE.test(safeDecode(c.req.path));
    if (!leaked && c.req.url.includes('?')) {
      for (const [name, value] of new URL(c.req.url).searchParams) {
        if (KEY_PARAM_NAMES.has(name.toLowerCase()) || CREDENTIAL_LIKE.test(value)) leaked = true;
      }
    }
    if (leaked) throw new AppError('InvalidRequest', 'License keys and session tokens must be sent in the JSON request body (or, for session tokens, an Authorization header), never in the URL.');
    await next();
  });

  // Any origin may call the public API (web apps validate too); it never uses cookies.
  // Preflights go through Hono's cors; actual calls get the two CORS headers and the per-IP limit in one
  // step (this is the hot path).
  const publicCors = cors({ origin: '*', exposeHeaders: PUBLIC_EXPOSED_HEADERS.split(', ') });
  app.use('/api/v1/*', async (c, next) => {
    if (c.req.method === 'OPTIONS') return publicCors(c, next);
    c.header('Access-Control-Allow-Origin', '*');
    c.header('Access-Control-Expose-Headers', PUBLIC_EXPOSED_HEADERS);
    const state = await deps.rateLimits.perIp(c.get('clientIp'));
    c.header('RateLimit-Limit', String(state.limit));
    c.header('RateLimit-Remaining', String(state.remaining));
    c.header('RateLimit-Reset', String(state.resetSeconds));
    await next();
  });
  app.use(
    '/api/v1/*',
    bodySizeLimit(MAX_PUBLIC_BODY_BYTES, (c) => errorResponse(c, new AppError('InvalidRequest', `The request body is larger than ${MAX_PUBLIC_BODY_BYTES / 1024} KiB.`))),
  );

  app.route('/api/v1', createPublicApi(deps));

  // Management API: GraphQL plus the REST endpoints the spec names. CORS only for the console's origin.
  const managementCors = cors({
    origin: deps.config.consoleOrigin,
    credentials: true,
    allowHeaders: ['authorization', 'content-type', 'x-api-key', 'x-keyforge-csrf'],
    exposeHeaders: ['x-request-id', 'retry-after'],
  });
  for (const path of ['/api/graphql', '/api/dashboard/*', '/api/users/*']) {
    app.use(path, managementCors, bodySizeLimit(MAX_MANAGEMENT_BODY_BYTES, (c) => errorResponse(c, new AppError('InvalidRequest', 'The request body is too large.'))), managementAuth(deps));
  }
  const graphql = createGraphQLHandler(deps);
  app.on(['GET', 'POST'], '/api/graphql', async (c) => {
    const cookies: string[] = [];
    const response = await graphql.fetch(c.req.raw, {
      actor: c.get('actor'),
      meta: { ip: c.get('clientIp'), userAgent: c.req.header('user-agent') ?? null },
      requestId: c.get('requestId'),
      refreshCookie: getCookie(c, REFRESH_COOKIE) ?? null,
      cookies,
    });
    const limited = await rateLimitedGraphQL(response);
    if (cookies.length === 0 && !limited) return response;
    const headers = new Headers(response.headers);
    for (const cookie of cookies) headers.append('set-cookie', cookie);
    if (limited) {
      // A refused sign-in step is an HTTP 429 with Retry-After, like the public API's limits.
      headers.set('retry-after', String(limited.retryAfterSeconds));
      return new Response(limited.body, { status: 429, headers });
    }
    return new Response(response.body, { status: response.status, headers });
  });
  mountAdminRoutes(app, deps);

  app.get('/.well-known/jwks.json', async (c) => {
    c.header('Cache-Control', 'public, max-age=300');
    return c.json(await publicJwks(deps));
  });
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    try {
      await deps.db.ping();
      return c.json({ status: 'ok', database: 'ok' });
    } catch {
      c.header('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      return c.json({ status: 'unavailable', database: 'unreachable' }, 503);
    }
  });

  if (options.consoleDir) mountConsole(app, options.consoleDir);

  app.notFound((c) => errorResponse(c, new AppError('NotFound', `No route for ${c.req.method} ${c.req.path.replace(KEY_LIKE_GLOBAL, '[redacted]')}.`)));
  app.onError((error, c) => errorResponse(c, toAppError(error, deps.logger, c.get('requestId'))));
  return app;
}

/** A GraphQL answer whose error is RateLimited (the sign-in limits): its body and Retry-After, else null. */
async function rateLimitedGraphQL(response: Response): Promise<{ body: string; retryAfterSeconds: number } | null> {
  if (response.status !== 200 || !response.headers.get('content-type')?.includes('json')) return null;
  const body = await response.clone().text();
  if (!body.includes('"RateLimited"')) return null;
  const errors = (JSON.parse(body) as { errors?: { extensions?: { code?: string; retryAfterSeconds?: number } }[] }).errors ?? [];
  const limited = errors.find((error) => error.extensions?.code === 'RateLimited');
  return limited ? { body, retryAfterSeconds: limited.extensions?.retryAfterSeconds ?? 60 } : null;
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
