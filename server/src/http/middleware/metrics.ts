import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { AppError } from '../../domain/errors.js';
import { LICENSING_OPERATIONS, metricsResponse, type Metrics } from '../../metrics/index.js';
import type { AppEnv } from '../env.js';

export interface CountedRequest {
  /** The route template that matched (`/api/v1/activate`), never the path, so a label cannot carry a key or an id; else `unmatched`. */
  route: string;
  method: string;
  status: number;
  /** performance.now() when the request arrived. */
  started: number;
  /** The error the request was answered with. */
  error?: AppError;
  /** A licensing route's answer: valid, or a rejection with its errorCode. */
  result?: { errorCode?: unknown };
}

/**
 * Counts a request by route template, method and status class with its latency; on the licensing endpoints also the
 * outcome (valid, the rejection code, or the error code), and rate-limit refusals by limit.
 */
export function countRequest(metrics: Metrics, request: CountedRequest): void {
  const { route, error, result } = request;
  metrics.observeRequest(route, request.method, request.status, (performance.now() - request.started) / 1000);
  if (error?.code === 'RateLimited') metrics.rateLimited(error.details.rateLimitName ?? 'other');
  const operation = LICENSING_OPERATIONS[route];
  if (!operation) return;
  if (result) metrics.licensingOutcome(operation, typeof result.errorCode === 'string' ? 'rejected' : 'valid', typeof result.errorCode === 'string' ? result.errorCode : 'none');
  else if (error) metrics.licensingOutcome(operation, 'error', error.code);
}

/** countRequest for every request of the Hono app. */
export function requestMetrics(metrics: Metrics): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    countRequest(metrics, { route: routeTemplate(c), method: c.req.method, status: c.res.status, started, error: c.get('appError') });
  };
}

/** The first route (not middleware) that matched, even when a middleware answered; else `unmatched`. */
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
