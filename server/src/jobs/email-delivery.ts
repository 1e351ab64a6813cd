import { deliverDueEmails } from '../services/notifications/delivery.js';
import { resumeScheduledRuns } from '../services/notifications/resume.js';
import type { JobDefinition } from './types.js';

export const emailDeliveryJob: JobDefinition = {
  name: 'email-delivery',
  lockLifetimeMs: 60_000,
  description: 'Delivers due emails from the outbox, retrying failed attempts with backoff; finishes expiry/digest runs a dead worker left.',
  schedule: '* * * * *',
  frequent: true,
  async run(ctx) {
    // Every minute: the soonest a run whose worker died (its lease lapsed) is taken over.
    const resumed = await resumeScheduledRuns(ctx);
    if (resumed.length) ctx.logger.info({ resumed }, 'resumed scheduled runs');
    return { ...(await deliverDueEmails(ctx, ctx.transport)), ...(resumed.length && { resumed }) };
  },
};
