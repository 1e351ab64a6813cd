import { Hono } from 'hono';
import { requestId } from 'hono/request-id';
import type { AppDeps } from '../deps.js';
import { mountAdminRoutes } from '../rest/admin/index.js';
import { createPublicApi } from '../rest/v1/index.js';
import { mountConsole } from './console.js';
import type { AppEnv } from './env.js';
import { mountGraphQL } from './graphql-route.js';
import { mountHealthAndKeys } from './health.js';
import { managementAuth } from './middleware/auth.js';
import { bodySizeLimit } from './middleware/body-size.js';
import { clientIpMiddleware } from './middleware/client-ip.js';
import { managementCors, publicApiCors } from './middleware/cors.js';
import { refuseCredentialsInUrl } from './middleware/credentials-in-url.js';
import { bodyTooLarge, notFound, onError } from './middleware/errors.js';
import { requestLogging } from './middleware/logging.js';
import { metricsRoute, requestMetrics } from './middleware/metrics.js';
import { perIpRateLimit } from './middleware/rate-limit.js';
import { securityHeaders } from './middleware/security-headers.js';

export const MAX_PUBLIC_BODY_BYTES = 16 * 1024;
const MAX_MANAGEMENT_BODY_BYTES = 256 * 1024;

/**
 * The HTTP app: only the wiring. Each concern is one middleware (http/middleware/*); the routes are the public
 * API (rest/v1), the management API (GraphQL + rest/admin), keys and health, and the console.
 * `consoleDir`: the built admin console to serve at `/` (absent in tests and API-only deployments).
 */
export function createApp(deps: AppDeps, options: { consoleDir?: string } = {}): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.use(requestId());
  if (deps.metrics) app.use(requestMetrics(deps.metrics));
  app.use(clientIpMiddleware(deps.config.trustProxy));
  app.use(requestLogging(deps.logger));
  app.use(securityHeaders());
  app.use(refuseCredentialsInUrl());

  app.use('/api/v1/*', publicApiCors(), perIpRateLimit(deps.rateLimits));
  app.use('/api/v1/*', bodySizeLimit(MAX_PUBLIC_BODY_BYTES, bodyTooLarge(`The request body is larger than ${MAX_PUBLIC_BODY_BYTES / 1024} KiB.`)));
  app.route('/api/v1', createPublicApi(deps));

  // Management API: GraphQL plus the REST endpoints the spec names.
  const management = [managementCors(deps.config.consoleOrigin), bodySizeLimit(MAX_MANAGEMENT_BODY_BYTES, bodyTooLarge('The request body is too large.')), managementAuth(deps)];
  for (const path of ['/api/graphql', '/api/dashboard/*', '/api/users/*', '/api/licenses/*']) app.use(path, ...management);
  mountGraphQL(app, deps);
  mountAdminRoutes(app, deps);

  mountHealthAndKeys(app, deps);
  if (deps.metrics && deps.config.metrics?.token) app.get('/metrics', metricsRoute(deps.metrics, deps.config.metrics.token));
  if (options.consoleDir) mountConsole(app, options.consoleDir);

  app.notFound(notFound);
  app.onError(onError(deps.logger, deps.metrics));
  return app;
}
