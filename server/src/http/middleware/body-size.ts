import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

/**
 * Refuses bodies over `maxSize`. With a Content-Length it decides from the header alone; Hono's own
 * bodyLimit would first build a full web Request (costly on the hot path). Chunked bodies are counted by it.
 */
export function bodySizeLimit(maxSize: number, onError: (c: Context) => Response): MiddlewareHandler {
  const counting = bodyLimit({ maxSize, onError });
  return async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD' || c.req.method === 'OPTIONS') return next();
    const length = c.req.header('content-length');
    if (length !== undefined && c.req.header('transfer-encoding') === undefined) {
      return Number(length) > maxSize ? onError(c) : next();
    }
    return counting(c, next);
  };
}
