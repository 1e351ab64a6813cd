import type { MiddlewareHandler } from 'hono';
import { requestScope, type Logger } from '../../logger.js';
import type { AppEnv } from '../env.js';
import { maskCredentials } from './credentials-in-url.js';

/** Probes and static files: logged at debug only, so `info` stays readable. */
export const QUIET_PATHS = /^\/(healthz|readyz|metrics)$|^\/assets\//;
/** A request slower than this is worth an info line even when it succeeded. */
const SLOW_MS = 1_000;

export interface ServedRequest {
  requestId: string;
  method: string;
  /** The path without its query string (query strings and bodies are never logged). */
  path: string;
  status: number;
  ip: string;
  /** performance.now() when the request arrived. */
  started: number;
}

/**
 * The one `request` line of a request, with its id (the `X-Request-Id` response header): a key pasted into the path
 * masked. Level: error for a 5xx, info for a 4xx or a slow answer, debug for the rest (and for probes whatever they
 * answer), so `info` shows what needs a look.
 */
export function logRequest(logger: Logger, request: ServedRequest): void {
  const ms = Math.round((performance.now() - request.started) * 10) / 10;
  const { status } = request;
  const level = QUIET_PATHS.test(request.path) ? 'debug' : status >= 500 ? 'error' : status >= 400 || ms >= SLOW_MS ? 'info' : 'debug';
  if (!logger.isLevelEnabled(level)) return;
  logger[level]({ requestId: request.requestId, method: request.method, path: maskCredentials(request.path), status, ms, ip: request.ip }, 'request');
}

/** logRequest for every request of the Hono app. */
export function requestLogging(logger: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    logRequest(logger, { requestId: c.get('requestId'), method: c.req.method, path: c.req.path, status: c.res.status, ip: c.get('clientIp'), started });
  };
}

/**
 * The management API's handlers log through the shared logger deep inside services and GraphQL resolvers: the
 * request's id reaches those lines through the logger's mixin (logger.ts `requestScope`). The public API passes it
 * explicitly instead (http/public-api.ts), so its hot path creates no AsyncLocalStorage scope.
 */
export function requestLogScope(): MiddlewareHandler<AppEnv> {
  return (c, next) => requestScope.run({ requestId: c.get('requestId') }, next);
}
