import { deliverDueEmails } from '../services/notifications/delivery.js';
import { queueWeeklyDigests } from '../services/notifications/digest.js';
import { RUN_LEASE_MS } from '../services/notifications/runs.js';
import type { JobDefinition } from './types.js';

export const weeklyDigestJob: JobDefinition = {
  name: 'weekly-digest',
  // Also the lease of its progress record (runs.ts): a dead worker's run is resumed after it.
  lockLifetimeMs: RUN_LEASE_MS,
  description: 'The weekly digest to each company’s admins: active licenses, new activations and upcoming expiries.',
  schedule: '0 9 * * 1',
  async run(ctx) {
    const digest = await queueWeeklyDigests(ctx);
    return { ...digest, delivery: await deliverDueEmails(ctx, ctx.transport) };
  },
};
