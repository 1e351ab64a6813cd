import type { MiddlewareHandler } from 'hono';
import type { Logger } from '../../logger.js';
import type { AppEnv } from '../env.js';
import { maskCredentials } from './credentials-in-url.js';

/** One `request` line per request: path only (query strings and bodies are never logged), a key pasted into a path masked. */
export function requestLogging(logger: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    if (!logger.isLevelEnabled('info')) return;
    logger.info(
      {
        requestId: c.get('requestId'),
        method: c.req.method,
        path: maskCredentials(c.req.path),
        status: c.res.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
        ip: c.get('clientIp'),
      },
      'request',
    );
  };
}
