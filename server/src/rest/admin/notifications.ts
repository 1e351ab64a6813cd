import type { Hono } from 'hono';
import { AppError } from '../../domain/errors.js';
import type { AppDeps } from '../../deps.js';
import type { AppEnv } from '../../http/env.js';
import { getNotificationPreferences, updateNotificationPreferences } from '../../services/users.js';

/** Spec §4.5–4.6: the calling user's own notification preferences. */
export function mountNotificationRoutes(app: Hono<AppEnv>, deps: AppDeps) {
  const ctx = () => ({ db: deps.db, secrets: deps.secrets, now: deps.clock() });
  app.get('/api/users/me/notifications', async (c) => c.json(await getNotificationPreferences(ctx(), c.get('actor'))));
  app.patch('/api/users/me/notifications', async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      throw new AppError('InvalidRequest', 'The body must be a JSON object such as {"digestEmailEnabled": true, "expiryEmailEnabled": false}.');
    }
    return c.json(await updateNotificationPreferences(ctx(), c.get('actor'), body));
  });
}
