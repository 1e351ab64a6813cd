import type { Hono } from 'hono';
import type { AppDeps } from '../../deps.js';
import type { AppEnv } from '../../http/env.js';
import { dashboardStats } from '../../services/analytics.js';
import { adminServiceContext } from './context.js';

/** docs/integrate/management-api.md "Dashboard stats: `GET /api/dashboard/stats`": the caller's tenant's totals and expiry figures (Bearer token or X-Api-Key; any role). */
export function mountDashboardRoutes(app: Hono<AppEnv>, deps: AppDeps) {
  app.get('/api/dashboard/stats', async (c) => {
    c.header('Cache-Control', 'no-store');
    return c.json(await dashboardStats(adminServiceContext(deps, c)));
  });
}
