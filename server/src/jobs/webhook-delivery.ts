import { currentServerSecrets } from '../crypto/secrets.js';
import { deliverDueWebhooks } from '../services/webhooks/delivery.js';
import type { JobDefinition } from './types.js';

export const webhookDeliveryJob: JobDefinition = {
  name: 'webhook-delivery',
  lockLifetimeMs: 60_000,
  description: 'Delivers due webhook events to tenant endpoints (signed, at least once), retrying with backoff over ~24 h; disables endpoints that keep failing.',
  schedule: '* * * * *',
  frequent: true,
  async run(ctx) {
    const report = await deliverDueWebhooks(
      { db: ctx.db, now: ctx.now, secrets: currentServerSecrets() },
      { allowPrivate: ctx.webhookAllowPrivate, publicUrl: ctx.publicUrl, logger: ctx.logger },
    );
    return { ...report };
  },
};
