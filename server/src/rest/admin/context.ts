import type { Context } from 'hono';
import type { AppDeps } from '../../deps.js';
import type { AppEnv } from '../../http/env.js';
import type { ServiceContext } from '../../services/context.js';

/** The service context of a management REST request: its caller (authenticated by the middleware) and meta. */
export const adminServiceContext = (deps: AppDeps, c: Context<AppEnv>): ServiceContext => ({
  db: deps.db,
  secrets: deps.secrets,
  now: deps.clock(),
  actor: c.get('actor'),
  meta: { ip: c.get('clientIp'), userAgent: c.req.header('user-agent') ?? null },
});
