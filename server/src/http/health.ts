import type { Hono } from 'hono';
import type { AppDeps } from '../deps.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../domain/errors.js';
import { publicJwks } from '../services/signing/signing-keys.js';
import type { AppEnv } from './env.js';

/** The published signing keys, liveness and readiness (the database answers). */
export function mountHealthAndKeys(app: Hono<AppEnv>, deps: AppDeps): void {
  app.get('/.well-known/jwks.json', async (c) => {
    c.header('Cache-Control', 'public, max-age=300');
    // Public keys: browser applications verifying offline tokens fetch them from any origin (no credentials).
    c.header('Access-Control-Allow-Origin', '*');
    return c.json(await publicJwks(deps));
  });
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    try {
      await deps.db.ping();
      return c.json({ status: 'ok', database: 'ok' });
    } catch {
      c.header('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      return c.json({ status: 'unavailable', database: 'unreachable' }, 503);
    }
  });
}
