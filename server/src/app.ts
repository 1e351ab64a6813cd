import { createServer, type Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import type { AppDeps } from './deps.js';
import { mountConsole } from './http/console.js';
import type { AppEnv } from './http/env.js';
import { mountGraphQL } from './http/graphql-route.js';
import { mountHealthAndKeys } from './http/health.js';
import { mountPortal } from './http/portal.js';
import { managementAuth } from './http/middleware/auth.js';
import { bodySizeLimit } from './http/middleware/body-size.js';
import { clientIpMiddleware } from './http/middleware/client-ip.js';
import { managementCors } from './http/middleware/cors.js';
import { refuseCredentialsInUrl } from './http/middleware/credentials-in-url.js';
import { bodyTooLarge, notFound, onError } from './http/middleware/errors.js';
import { requestLogScope, requestLogging } from './http/middleware/logging.js';
import { metricsRoute, requestMetrics } from './http/middleware/metrics.js';
import { requestIdMiddleware } from './http/middleware/request-id.js';
import { securityHeaders } from './http/middleware/security-headers.js';
import { isPublicApiUrl, publicApiHandler } from './http/public-api.js';
import { mountAdminRoutes } from './rest/admin/index.js';
import { MAX_ACCOUNT_BYTES } from './services/keygen-import/source.js';
import { publicRoutes } from './rest/v1/index.js';

/**
 * The composition root of the HTTP side: which routes each transport serves. `consoleDir`: the built admin console
 * to serve at `/` (absent in tests and API-only deployments).
 */
export interface HttpOptions {
  consoleDir?: string;
}

export const MAX_MANAGEMENT_BODY_BYTES = 256 * 1024;

/**
 * The HTTP server of `pnpm start` (and of the tests, on an ephemeral port): the public licensing API `/api/v1/*` on
 * its own node:http handler (http/public-api.ts, the hot path), every other path on the Hono app. Answers given
 * while the process drains close their connection, so a balancer's kept-alive one ends with its answer.
 */
export function createHttpServer(deps: AppDeps, options: HttpOptions = {}): Server {
  const publicApi = publicApiHandler(deps, publicRoutes(deps));
  // A request without a Host header (HTTP/1.0: HAProxy's `option httpchk`) is given the configured one, as `serve` did.
  const app = getRequestListener(createApp(deps, options).fetch, { hostname: deps.config.host });
  const server = createServer((request, response) => {
    if (deps.lifecycle?.draining) response.setHeader('Connection', 'close');
    if (isPublicApiUrl(request.url ?? '/')) publicApi(request, response);
    else
      app(request, response).catch((error: unknown) => {
        // The adapter answers errors itself; what reaches here (a broken socket) must not become an unhandled rejection.
        deps.logger.warn({ err: (error as Error).message }, 'answer not written');
        response.destroy();
      });
  });
  // Idle kept-alive connections are closed by the client or the balancer in front (AWS ALB: 60 s), not by the
  // server first: a server that closes at Node's default 5 s races the client's next request on that socket, which
  // then fails with "other side closed". Headers must still arrive within a bounded time after a request starts.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  return server;
}

/**
 * The Hono app: the management API (GraphQL + rest/admin), keys and health, metrics and the console. Each concern is
 * one middleware (http/middleware/*); this is only the wiring.
 */
export function createApp(deps: AppDeps, options: HttpOptions = {}): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.use(requestIdMiddleware());
  if (deps.metrics) app.use(requestMetrics(deps.metrics));
  app.use(clientIpMiddleware(deps.config.trustProxy));
  app.use(requestLogging(deps.logger));
  app.use(securityHeaders());
  app.use(refuseCredentialsInUrl());

  // Management API: GraphQL plus the REST endpoints of docs/integrate/management-api.md "Management API".
  const management = [
    requestLogScope(),
    managementCors(deps.config.consoleOrigin),
    bodySizeLimit(MAX_MANAGEMENT_BODY_BYTES, bodyTooLarge('The request body is too large.')),
    managementAuth(deps),
  ];
  for (const path of ['/api/graphql', '/api/dashboard/*', '/api/users/*', '/api/licenses/*']) app.use(path, ...management);
  // Artifact uploads stream bodies of gigabytes: the same authentication, their own size limit (rest/admin/releases.ts).
  app.use('/api/releases/*', requestLogScope(), managementCors(deps.config.consoleOrigin), managementAuth(deps));
  // A Keygen account's bundle may be as large as the importer reads (rest/admin/imports.ts): that bound, not 256 KiB.
  app.use('/api/imports/keygen', requestLogScope(), managementCors(deps.config.consoleOrigin), bodySizeLimit(MAX_ACCOUNT_BYTES, bodyTooLarge(`A Keygen bundle has at most ${MAX_ACCOUNT_BYTES / 1024 / 1024} MiB.`)), managementAuth(deps));
  mountGraphQL(app, deps);
  mountAdminRoutes(app, deps);

  mountHealthAndKeys(app, deps);
  // The customer portal: its own GraphQL endpoint and session cookie, no management auth (http/portal.ts).
  mountPortal(app, deps, options.consoleDir);
  if (deps.metrics && deps.config.metrics?.token) app.get('/metrics', metricsRoute(deps.metrics, deps.config.metrics.token));
  if (options.consoleDir) mountConsole(app, options.consoleDir);

  app.notFound(notFound);
  app.onError(onError(deps.logger, deps.metrics));
  return app;
}
