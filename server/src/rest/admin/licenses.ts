import type { Hono } from 'hono';
import { AppError } from '../../domain/errors.js';
import type { AppDeps } from '../../deps.js';
import type { AppEnv } from '../../http/env.js';
import { exportLicensesCsv } from '../../services/licenses/export.js';
import { adminServiceContext } from './context.js';

/**
 * POST /api/licenses/export: the license list as CSV, with the list's filter as the JSON body (a POST, so that a
 * whole key searched for never travels in a URL or an access log). The response streams: each page is read when
 * the client has taken the previous one.
 */
export function mountLicenseRoutes(app: Hono<AppEnv>, deps: AppDeps) {
  app.post('/api/licenses/export', async (c) => {
    const text = await c.req.text();
    let filter: unknown = {};
    try {
      if (text.trim()) filter = JSON.parse(text);
    } catch {
      filter = null;
    }
    if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) {
      throw new AppError('InvalidRequest', 'The body must be a JSON object such as {"status": "active", "productId": "…"} (or empty: every license).');
    }
    const rows = exportLicensesCsv(adminServiceContext(deps, c), filter as Record<string, never>);
    // The first chunk (the header) is read here, so that a refused caller or a bad filter is an HTTP error, not a broken download.
    const first = await rows.next();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        if (!first.done) controller.enqueue(new TextEncoder().encode(first.value.csv));
      },
      async pull(controller) {
        try {
          const next = await rows.next();
          if (next.done) controller.close();
          else controller.enqueue(new TextEncoder().encode(next.value.csv));
        } catch (error) {
          // The headers are gone: the download breaks off (the client sees an incomplete body), the process goes on.
          deps.logger.warn({ err: (error as Error).message }, 'license export failed midway');
          controller.error(error);
        }
      },
      async cancel() {
        await rows.return(undefined);
      },
    });
    const stamp = deps.clock().toISOString().slice(0, 10);
    return new Response(body, {
      headers: {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="licenses-${stamp}.csv"`,
        'cache-control': 'no-store',
      },
    });
  });
}
