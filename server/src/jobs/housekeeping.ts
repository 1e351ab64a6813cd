import { foldSeatPoolHistory } from '../services/analytics.js';
import { sweepExpiredFloatingSessions } from '../services/floating/sessions.js';
import { purgeLicenseCacheChanges } from '../services/licenses/license-change-feed.js';
import { purgeNonces } from '../services/licenses/nonces.js';
import { purgeRetiredLicenseKeys } from '../services/licenses/reissue.js';
import { purgeRunRecords } from '../services/notifications/runs.js';
import { purgePortalSignIns } from '../services/portal/sign-in.js';
import { purgeWebhookEvents } from '../services/webhooks/delivery.js';
import type { JobDefinition } from './types.js';

export const housekeepingJob: JobDefinition = {
  name: 'housekeeping',
  lockLifetimeMs: 90_000,
  description: 'Purges spent nonces, old job-run records and webhook events older than 35 days and reissued keys past their overlap and customer portal links and sessions a day past their end, records lapsed floating leases as ended, and sums seat-pool history older than 35 days, and prunes the license caches\' change log of what every server has read.',
  schedule: '*/10 * * * *',
  frequent: true,
  async run(ctx) {
    const noncesPurged = await purgeNonces(ctx);
    // For charts only: seat counting never waits for this sweep.
    const floatingSessionsEnded = await sweepExpiredFloatingSessions(ctx);
    const runRecordsPurged = await purgeRunRecords(ctx);
    const webhookEventsPurged = await purgeWebhookEvents(ctx);
    const retiredKeysPurged = await purgeRetiredLicenseKeys(ctx);
    const seatPoolRowsFolded = await foldSeatPoolHistory(ctx);
    const portalSignInsPurged = await purgePortalSignIns(ctx);
    const licenseCacheChangesPurged = await purgeLicenseCacheChanges(ctx);
    return { portalSignInsPurged, licenseCacheChangesPurged, noncesPurged, floatingSessionsEnded, runRecordsPurged, webhookEventsPurged, retiredKeysPurged, seatPoolRowsFolded };
  },
};
