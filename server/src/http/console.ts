import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Hono } from 'hono';
import { CONSOLE_CONTENT_SECURITY_POLICY } from './content-security-policy.js';
import type { AppEnv } from './env.js';

export const NOT_CONSOLE = /^\/(api|\.well-known|healthz|readyz|metrics|portal)(\/|$)/;

/**
 * Serves the built admin console: hashed assets cached for a year, other files as they are, and
 * index.html (never cached) for every other GET so client-side routes and deep links work. API paths
 * and missing assets are left to the API's own 404. Every file it serves carries the console's Content-Security-Policy.
 */
export function mountConsole(app: Hono<AppEnv>, dir: string): boolean {
  const indexFile = path.join(dir, 'index.html');
  if (!existsSync(indexFile)) return false;
  const index = readFileSync(indexFile, 'utf8');
  app.use(
    '/assets/*',
    async (c, next) => {
      await next();
      if (c.res.status === 200) {
        c.res.headers.set('Cache-Control', 'public, max-age=31536000, immutable');
        c.res.headers.set('Content-Security-Policy', CONSOLE_CONTENT_SECURITY_POLICY);
      }
    },
    serveStatic({ root: dir }),
  );
  app.get('*', async (c, next) => {
    if (NOT_CONSOLE.test(c.req.path) || c.req.path.startsWith('/assets/')) return next();
    c.header('Content-Security-Policy', CONSOLE_CONTENT_SECURITY_POLICY);
    return serveStatic({ root: dir })(c, async () => {
      c.header('Cache-Control', 'no-cache');
      c.res = c.html(index);
    });
  });
  return true;
}
