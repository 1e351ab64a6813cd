import { currentServerSecrets } from '../crypto/secrets.js';
import { NO_META, systemActor } from '../services/auth/actor.js';
import { checkpointData } from '../services/audit/checkpoints.js';
import { checkpointAllChains, verifyAllChains } from '../services/audit/verification.js';
import { loadTokenSigner } from '../services/signing/signing-keys.js';
import type { JobDefinition } from './types.js';

// The activity log's anchors. Every 15 minutes, each company whose log grew gets a signed checkpoint of its head,
// which also leaves the database at once: as an `audit.checkpoint` webhook event and as a line of this process's log
// (`activity log checkpoint`, with the token), for whoever keeps them. The daily full verification re-hashes
// everything, holds the log to its checkpoints and to the previous verification, and records a sealed verdict.

export const auditCheckpointJob: JobDefinition = {
  name: 'audit-checkpoints',
  description: 'Verifies new activity-log entries and signs a checkpoint of each company’s chain head (also sent as a webhook event and logged).',
  schedule: '*/15 * * * *',
  lockLifetimeMs: 90_000,
  frequent: true,
  async run(ctx) {
    const system = { db: ctx.db, secrets: currentServerSecrets(), now: ctx.now, actor: systemActor(null, 'system (audit-checkpoints)'), meta: NO_META };
    const signer = await loadTokenSigner(system, ctx.publicUrl);
    const result = await checkpointAllChains(system, signer);
    for (const checkpoint of result.written) ctx.logger.info({ tenantId: checkpoint.tenantId, auditCheckpoint: checkpointData(checkpoint) }, 'activity log checkpoint');
    if (result.broken.length) ctx.logger.error({ tenants: result.broken }, 'activity log integrity broken');
    return { tenants: result.tenants, checkpoints: result.written.length, broken: result.broken.length };
  },
};

export const auditVerifyJob: JobDefinition = {
  name: 'audit-verify',
  description: 'Re-verifies every company’s whole activity log against its checkpoints and the previous verification, and records the verdict.',
  schedule: '30 3 * * *',
  lockLifetimeMs: 90_000,
  async run(ctx) {
    const result = await verifyAllChains({ db: ctx.db, secrets: currentServerSecrets(), now: ctx.now, actor: systemActor(null, 'system (audit-verify)'), meta: NO_META });
    if (result.broken.length) ctx.logger.error({ broken: result.broken }, 'activity log integrity broken: full verification failed');
    return { tenants: result.tenants, broken: result.broken.length };
  },
};
