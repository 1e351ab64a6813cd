import { deliverDueEmails } from '../services/notifications/delivery.js';
import { queueExpiryNotifications } from '../services/notifications/expiry.js';
import type { JobDefinition } from './types.js';

export const expiryNotificationsJob: JobDefinition = {
  name: 'expiry-notifications',
  lockLifetimeMs: 90_000,
  description: 'License expiry alerts at 30, 7 and 1 days to admins and customers (spec §6.2).',
  schedule: '0 8 * * *',
  async run(ctx) {
    const expiry = await queueExpiryNotifications(ctx);
    return { ...expiry, delivery: await deliverDueEmails(ctx, ctx.transport) };
  },
};
