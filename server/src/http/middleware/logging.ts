import type { MiddlewareHandler } from 'hono';
import { requestScope, type Logger } from '../../logger.js';
import type { AppEnv } from '../env.js';
import { maskCredentials } from './credentials-in-url.js';

/** Probes and static files: logged at debug only, so `info` stays readable. */
const QUIET_PATHS = /^\/(healthz|readyz|metrics)$|^\/assets\//;
/** A request slower than this is worth an info line even when it succeeded. */
const SLOW_MS = 1_000;

/**
 * One `request` line per request: path only (query strings and bodies are never logged), a key pasted into a path
 * masked. Level: error for a 5xx, info for a 4xx or a slow answer, debug for the rest (and for probes whatever they
 * answer), so `info` shows what needs a look. Every line logged while serving the request carries its id (the
 * `X-Request-Id` response header), through the logger's mixin.
 */
export function requestLogging(logger: Logger): MiddlewareHandler<AppEnv> {
  return (c, next) =>
    requestScope.run({ requestId: c.get('requestId') }, async () => {
      const started = performance.now();
      await next();
      const ms = Math.round((performance.now() - started) * 10) / 10;
      const status = c.res.status;
      const level = QUIET_PATHS.test(c.req.path) ? 'debug' : status >= 500 ? 'error' : status >= 400 || ms >= SLOW_MS ? 'info' : 'debug';
      if (!logger.isLevelEnabled(level)) return;
      logger[level]({ method: c.req.method, path: maskCredentials(c.req.path), status, ms, ip: c.get('clientIp') }, 'request');
    });
}
