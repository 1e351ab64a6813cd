import { deliverDueEmails } from '../services/notifications/delivery.js';
import { queueExpiryNotifications } from '../services/notifications/expiry.js';
import { RUN_LEASE_MS } from '../services/notifications/runs.js';
import type { JobDefinition } from './types.js';

export const expiryNotificationsJob: JobDefinition = {
  name: 'expiry-notifications',
  // Also the lease of its progress record (runs.ts): a dead worker's run is resumed after it.
  lockLifetimeMs: RUN_LEASE_MS,
  description: 'Expiry alerts 30, 7 and 1 days before a license expires, to company admins and to the customer.',
  schedule: '0 8 * * *',
  async run(ctx) {
    const expiry = await queueExpiryNotifications(ctx);
    return { ...expiry, delivery: await deliverDueEmails(ctx, ctx.transport) };
  },
};
