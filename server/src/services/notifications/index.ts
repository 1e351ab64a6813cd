// Notification emails: who gets what, computed from `now`. Jobs (server/src/jobs) call these on schedule.
export { queueWeeklyDigests, digestFigures, isoWeek } from './digest.js';
export { queueExpiryNotifications } from './expiry.js';
export { THRESHOLDS, thresholdFor, digestHighlights, type Threshold } from '../../domain/notification-thresholds.js';
export { resumeScheduledRuns } from './resume.js';
export { deliverDueEmails, type MailTransport, type SendOutcome, type OutboxMessage } from './delivery.js';
export { listOutbox, enqueueEmails, EMAIL_KINDS, EMAIL_STATUSES, type EmailKind, type EmailStatus, type OutboxFilter } from './outbox.js';
export { listJobSchedules, type JobSchedule, type JobScheduleSource } from './schedules.js';
