import { deliverDueEmails } from '../services/notifications/delivery.js';
import { queueExpiryNotifications } from '../services/notifications/expiry.js';
import { RUN_LEASE_MS } from '../services/notifications/runs.js';
import type { JobDefinition } from './types.js';

export const expiryNotificationsJob: JobDefinition = {
  name: 'expiry-notifications',
  // Also the lease of its progress record (runs.ts): a dead worker's run is resumed after it.
  lockLifetimeMs: RUN_LEASE_MS,
  description: 'License expiry alerts at 30, 7 and 1 days to admins and customers (spec §6.2).',
  schedule: '0 8 * * *',
  async run(ctx) {
    const expiry = await queueExpiryNotifications(ctx);
    return { ...expiry, delivery: await deliverDueEmails(ctx, ctx.transport) };
  },
};
