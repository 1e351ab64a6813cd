import { deliverDueEmails } from '../services/notifications/delivery.js';
import { queueWeeklyDigests } from '../services/notifications/digest.js';
import type { JobDefinition } from './types.js';

export const weeklyDigestJob: JobDefinition = {
  name: 'weekly-digest',
  lockLifetimeMs: 90_000,
  description: 'Weekly digest email to the CompanyAdmins of each tenant (spec §6.1).',
  schedule: '0 9 * * 1',
  async run(ctx) {
    const digest = await queueWeeklyDigests(ctx);
    return { ...digest, delivery: await deliverDueEmails(ctx, ctx.transport) };
  },
};
