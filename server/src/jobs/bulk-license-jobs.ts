import { BULK_LEASE_MS, runBulkJobs } from '../services/licenses/bulk.js';
import type { JobDefinition } from './types.js';

export const bulkLicenseJobsJob: JobDefinition = {
  name: 'bulk-license-jobs',
  // Also the lease of a bulk job (services/licenses/bulk.ts): a dead worker's job is taken over after it.
  lockLifetimeMs: BULK_LEASE_MS,
  description: 'Runs queued bulk license actions (suspend, reinstate, revoke, renew, transfer) and finishes those of a worker that stopped.',
  schedule: '* * * * *',
  frequent: true,
  async run(ctx) {
    return runBulkJobs({ db: ctx.db, now: ctx.now, logger: ctx.logger });
  },
};
