import type { Hono } from 'hono';
import type { AppDeps } from '../../deps.js';
import type { AppEnv } from '../../http/env.js';
import { mountDashboardRoutes } from './dashboard.js';
import { mountImportRoutes } from './imports.js';
import { mountLicenseRoutes } from './licenses.js';
import { mountNotificationRoutes } from './notifications.js';
import { mountReleaseRoutes } from './releases.js';

/** Management REST endpoints docs/integrate/management-api.md "Management API" documents (the rest of the management API is GraphQL). */
export function mountAdminRoutes(app: Hono<AppEnv>, deps: AppDeps) {
  mountDashboardRoutes(app, deps);
  mountNotificationRoutes(app, deps);
  mountLicenseRoutes(app, deps);
  mountReleaseRoutes(app, deps);
  mountImportRoutes(app, deps);
}
