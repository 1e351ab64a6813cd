import { deliverDueEmails } from '../services/notifications/delivery.js';
import type { JobDefinition } from './types.js';

export const emailDeliveryJob: JobDefinition = {
  name: 'email-delivery',
  lockLifetimeMs: 60_000,
  description: 'Delivers due emails from the outbox, retrying failed attempts with backoff.',
  schedule: '* * * * *',
  frequent: true,
  run: async (ctx) => ({ ...(await deliverDueEmails(ctx, ctx.transport)) }),
};
