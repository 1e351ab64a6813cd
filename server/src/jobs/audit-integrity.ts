import { currentServerSecrets } from '../crypto/secrets.js';
import { checkpointAllChains, verifyAllChains } from '../services/audit/checkpoints.js';
import { loadTokenSigner } from '../services/signing/signing-keys.js';
import type { JobDefinition } from './types.js';

// The activity log's anchors: checkpoints bound how many newest rows could vanish unnoticed; the daily full
// verification re-hashes everything (also rows older than the last checkpoint).

export const auditCheckpointJob: JobDefinition = {
  name: 'audit-checkpoints',
  description: 'Verifies new activity-log entries and signs a checkpoint of each company’s chain head.',
  schedule: '*/15 * * * *',
  lockLifetimeMs: 90_000,
  frequent: true,
  async run(ctx) {
    const secrets = currentServerSecrets();
    const signer = await loadTokenSigner({ db: ctx.db, secrets, now: ctx.now }, ctx.publicUrl);
    const result = await checkpointAllChains({ db: ctx.db, secrets, now: ctx.now }, signer);
    if (result.broken.length) ctx.logger.error({ tenants: result.broken }, 'activity log integrity broken');
    return { tenants: result.tenants, broken: result.broken.length };
  },
};

export const auditVerifyJob: JobDefinition = {
  name: 'audit-verify',
  description: 'Re-verifies every company’s whole activity-log chain and records the result.',
  schedule: '30 3 * * *',
  lockLifetimeMs: 90_000,
  async run(ctx) {
    const result = await verifyAllChains({ db: ctx.db, secrets: currentServerSecrets(), now: ctx.now });
    if (result.broken.length) ctx.logger.error({ broken: result.broken }, 'activity log integrity broken: full verification failed');
    return { tenants: result.tenants, broken: result.broken.length };
  },
};
