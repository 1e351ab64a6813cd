import { auditCheckpointJob, auditVerifyJob } from './audit-integrity.js';
import { bulkLicenseJobsJob } from './bulk-license-jobs.js';
import { emailDeliveryJob } from './email-delivery.js';
import { expiryNotificationsJob } from './expiry-notifications.js';
import { housekeepingJob } from './housekeeping.js';
import type { JobDefinition } from './types.js';
import { webhookDeliveryJob } from './webhook-delivery.js';
import { weeklyDigestJob } from './weekly-digest.js';

export const JOBS: readonly JobDefinition[] = [weeklyDigestJob, expiryNotificationsJob, emailDeliveryJob, housekeepingJob,
  auditCheckpointJob, auditVerifyJob, webhookDeliveryJob, bulkLicenseJobsJob];
export const JOB_NAMES = JOBS.map((job) => job.name);

export function findJob(name: string): JobDefinition | undefined {
  return JOBS.find((job) => job.name === name);
}

export type { JobContext, JobDefinition } from './types.js';
