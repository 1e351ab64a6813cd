import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { LICENSING_OPERATIONS, metricsResponse, type Metrics } from '../../metrics/index.js';
import type { AppEnv } from '../env.js';

/**
 * Counts every request by route template, method and status class with its latency; on the licensing endpoints
 * also the outcome (valid, the rejection code, or the error code), and rate-limit refusals by limit. The route is
 * the template that matched (`/api/v1/activate`), never the path, so a label cannot carry a key or an id.
 */
export function requestMetrics(metrics: Metrics): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const route = routeTemplate(c);
    metrics.observeRequest(route, c.req.method, c.res.status, (performance.now() - started) / 1000);
    const error = c.get('appError');
    if (error?.code === 'RateLimited') metrics.rateLimited(error.details.rateLimitName ?? 'other');
    const operation = LICENSING_OPERATIONS[route];
    if (!operation) return;
    const result = c.get('licensingResult');
    if (result) metrics.licensingOutcome(operation, typeof result.errorCode === 'string' ? 'rejected' : 'valid', typeof result.errorCode === 'string' ? result.errorCode : 'none');
    else if (error) metrics.licensingOutcome(operation, 'error', error.code);
  };
}

/** The first route (not middleware) that matched, e.g. `/api/v1/activate` even when a middleware answered; else `unmatched`. */
function routeTemplate(c: Context<AppEnv>): string {
  for (const route of matchedRoutes(c)) if (route.method !== 'ALL') return route.path;
  return 'unmatched';
}

/** `GET /metrics` on the app's own port, behind `Authorization: Bearer <METRICS_TOKEN>`. */
export function metricsRoute(metrics: Metrics, token: string): MiddlewareHandler<AppEnv> {
  return async (c) => {
    const { status, contentType, body } = await metricsResponse(metrics, token, c.req.header('authorization'));
    return c.body(body, status as 200, { 'content-type': contentType, 'cache-control': 'no-store' });
  };
}
