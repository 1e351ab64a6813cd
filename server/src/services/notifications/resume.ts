import type { NotificationContext } from '../context.js';
import { digestRun, emptyDigestReport } from './digest.js';
import { emptyExpiryReport, expiryRun } from './expiry.js';
import { resumeRuns } from './runs.js';

/** Finishes today's expiry run and this week's digest run if a worker died in them (or tenants are due a retry). */
export function resumeScheduledRuns(ctx: NotificationContext) {
  return resumeRuns(ctx, [
    { job: expiryRun, report: emptyExpiryReport },
    { job: digestRun, report: () => emptyDigestReport(ctx.now) },
  ]);
}
