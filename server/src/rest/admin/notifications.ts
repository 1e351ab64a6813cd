import type { Hono } from 'hono';
import { AppError } from '../../domain/errors.js';
import type { AppDeps } from '../../deps.js';
import type { AppEnv } from '../../http/env.js';
import { getNotificationPreferences, updateNotificationPreferences } from '../../services/users.js';
import { adminServiceContext } from './context.js';

/** docs/integrate/management-api.md "Notification preferences (REST)": the calling user's own notification preferences. */
export function mountNotificationRoutes(app: Hono<AppEnv>, deps: AppDeps) {
  app.get('/api/users/me/notifications', async (c) => c.json(await getNotificationPreferences(adminServiceContext(deps, c))));
  app.patch('/api/users/me/notifications', async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      throw new AppError('InvalidRequest', 'The body must be a JSON object such as {"digestEmailEnabled": true, "expiryEmailEnabled": false}.');
    }
    return c.json(await updateNotificationPreferences(adminServiceContext(deps, c), body));
  });
}
