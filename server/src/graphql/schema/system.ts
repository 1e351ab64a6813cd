import { builder } from '../builder.js';
import { serviceCtx } from '../context.js';
import { isInstallationOperator } from '../../services/auth/actor.js';
import { installationStatus, systemStatus, type InstallationStatus, type SystemStatus } from '../../services/system-status.js';
import type { GraphQLContext } from '../context.js';
import { EmailDeliveryModeEnum } from './email.js';

// The console's System page: the numbers the metrics export (docs/operate/observability.md), for the caller's company,
// and for an installation operator (OPERATOR_EMAILS) the installation as a whole.

type Dependencies = { redis: 'UP' | 'DOWN' | 'NOT_CONFIGURED'; mailProvider: 'POSTMARK' | 'DEVELOPMENT' };
type SystemView = SystemStatus & Dependencies & { installationOperator: boolean };
type InstallationView = InstallationStatus & Dependencies;

/** Redis and the mail provider as this process sees them (what keyforge_redis_up reports). */
function dependencies(ctx: GraphQLContext): Dependencies {
  const reachable = ctx.deps.rateLimits.redisReachable();
  return { redis: reachable === null ? 'NOT_CONFIGURED' : reachable ? 'UP' : 'DOWN', mailProvider: ctx.deps.config.postmarkServerToken ? 'POSTMARK' : 'DEVELOPMENT' };
}

const RedisStatusEnum = builder.enumType('RedisStatus', {
  description: 'UP: rate limits are shared through Redis. DOWN: Redis does not answer; each process counts its own until it returns. NOT_CONFIGURED: no REDIS_URL.',
  values: ['UP', 'DOWN', 'NOT_CONFIGURED'] as const,
});

// Not a prismaObject: a job run aggregated with its companies' progress (services/system-status.ts), not a row.
const JobRunProgressType = builder.objectRef<SystemStatus['runs'][number]>('JobRunProgress').implement({
  description: 'An unfinished per-company run (expiry notifications, weekly digest) of one period, for your company.',
  fields: (t) => ({
    job: t.exposeString('job'),
    period: t.exposeString('period', { description: 'The UTC day (2026-06-01) or ISO week (2026-W23).' }),
    companiesPending: t.exposeInt('tenantsPending', { description: 'Companies not done yet (yours: 0 or 1).' }),
    companiesFailed: t.exposeInt('tenantsFailed', { description: 'Companies whose last attempt failed (retried with backoff).' }),
  }),
});

const SystemStatusType = builder.objectRef<SystemView>('SystemStatus').implement({
  description: "Your company's backlogs, activity-log anchors and the service's dependencies: the numbers of the Prometheus metrics.",
  fields: (t) => ({
    emailsPending: t.exposeInt('emailsPending'),
    oldestPendingEmailAt: t.expose('oldestPendingEmailAt', { type: 'DateTime', nullable: true }),
    webhookDeliveriesPending: t.exposeInt('webhookDeliveriesPending'),
    oldestPendingWebhookAt: t.expose('oldestPendingWebhookAt', { type: 'DateTime', nullable: true }),
    webhookEndpointsDisabled: t.exposeInt('webhookEndpointsDisabled'),
    lastAuditCheckpointAt: t.expose('lastAuditCheckpointAt', { type: 'DateTime', nullable: true }),
    lastAuditVerificationAt: t.expose('lastAuditVerificationAt', { type: 'DateTime', nullable: true }),
    auditVerificationHolds: t.exposeBoolean('auditVerificationHolds', { nullable: true, description: 'Whether the newest full verification of your activity log holds; null before the first.' }),
    unfinishedRuns: t.field({ type: [JobRunProgressType], resolve: (status) => status.runs }),
    redis: t.field({ type: RedisStatusEnum, resolve: (status) => status.redis }),
    mailProvider: t.field({ type: EmailDeliveryModeEnum, resolve: (status) => status.mailProvider }),
    installationOperator: t.exposeBoolean('installationOperator', { description: 'Whether you operate the installation (OPERATOR_EMAILS lists your email): installationStatus answers you.' }),
  }),
});

const JobRunOutcomeEnum = builder.enumType('JobRunOutcome', {
  description: 'RUNNING: started, not finished (or its process died; the lock expires and another process retries it).',
  values: ['RUNNING', 'SUCCEEDED', 'FAILED'] as const,
});

// Not a prismaObject: a job_last_runs row read with the status snapshot in one SQL statement, its outcome and duration derived.
const JobLastRunType = builder.objectRef<SystemStatus['jobs'][number]>('JobLastRun').implement({
  description: 'The latest run of a scheduled job on any process (schedule, CLI or "Run now").',
  fields: (t) => ({
    job: t.exposeString('job'),
    startedAt: t.expose('lastStartedAt', { type: 'DateTime' }),
    finishedAt: t.expose('lastFinishedAt', { type: 'DateTime', nullable: true, description: 'keyforge_job_last_finished_timestamp_seconds.' }),
    failedAt: t.expose('lastFailedAt', { type: 'DateTime', nullable: true }),
    failReason: t.exposeString('lastFailReason', { nullable: true }),
    outcome: t.expose('outcome', { type: JobRunOutcomeEnum }),
    durationSeconds: t.exposeFloat('durationSeconds', { nullable: true, description: 'From start to success or failure; null while running.' }),
  }),
});

const InstallationStatusType = builder.objectRef<InstallationView>('InstallationStatus').implement({
  description: 'The whole installation, for its operators: the numbers /metrics exports (one reading), and which companies need attention.',
  fields: (t) => ({
    companies: t.exposeInt('companies'),
    emailsPending: t.exposeInt('emailsPending', { description: 'keyforge_email_outbox_pending.' }),
    oldestPendingEmailAt: t.expose('oldestPendingEmailAt', { type: 'DateTime', nullable: true, description: 'Across companies (keyforge_email_outbox_oldest_pending_age_seconds).' }),
    webhookDeliveriesPending: t.exposeInt('webhookDeliveriesPending', { description: 'keyforge_webhook_deliveries_pending.' }),
    oldestPendingWebhookAt: t.expose('oldestPendingWebhookAt', { type: 'DateTime', nullable: true, description: 'Across companies (keyforge_webhook_oldest_pending_age_seconds).' }),
    webhookEndpointsDisabled: t.exposeInt('webhookEndpointsDisabled', { description: 'keyforge_webhook_endpoints_disabled.' }),
    lastAuditCheckpointAt: t.expose('lastAuditCheckpointAt', { type: 'DateTime', nullable: true, description: 'The newest checkpoint of any company (keyforge_audit_last_checkpoint_timestamp_seconds).' }),
    lastAuditVerificationAt: t.expose('lastAuditVerificationAt', { type: 'DateTime', nullable: true, description: 'keyforge_audit_last_verification_timestamp_seconds.' }),
    auditVerificationHolds: t.exposeBoolean('auditVerificationHolds', { nullable: true, description: "Whether every company's newest full verification holds (keyforge_audit_verification_ok); null before the first." }),
    auditVerifiedCompanies: t.exposeInt('auditVerifiedCompanies', { description: 'Companies whose log was fully verified at least once.' }),
    auditBrokenCompanies: t.exposeStringList('auditBrokenCompanies', { description: 'Key prefixes of the companies whose newest verification is broken (at most 50), as the operator CLI\'s audit:check takes them.' }),
    companiesWithUnanchoredEntries: t.exposeInt('companiesWithUnanchoredEntries', { description: 'Companies whose activity log has entries no checkpoint has covered for over an hour (the checkpoint job runs every 15 minutes).' }),
    unfinishedRuns: t.field({ type: [JobRunProgressType], resolve: (status) => status.runs, description: 'Unfinished per-company runs (expiry notifications, weekly digest), every company together.' }),
    jobRuns: t.field({ type: [JobLastRunType], resolve: (status) => status.jobs, description: 'The latest run of each job, on any process.' }),
    signingKeyCreatedAt: t.expose('signingKeyCreatedAt', { type: 'DateTime', nullable: true, description: 'The active signing key (keyforge_signing_key_age_seconds).' }),
    redis: t.field({ type: RedisStatusEnum, resolve: (status) => status.redis, description: 'As this process sees it (keyforge_redis_up).' }),
    mailProvider: t.field({ type: EmailDeliveryModeEnum, resolve: (status) => status.mailProvider }),
  }),
});

builder.queryFields((t) => ({
  systemStatus: t.field({
    type: SystemStatusType,
    authScopes: { admin: true },
    description: "The System page (COMPANY_ADMIN): your company's email and webhook backlogs, activity-log checkpoint and verification, unfinished runs, Redis and mail provider. Job schedules: jobSchedules.",
    resolve: async (_root, _args, ctx): Promise<SystemView> => ({
      ...(await systemStatus(serviceCtx(ctx))),
      ...dependencies(ctx),
      installationOperator: isInstallationOperator(ctx.actor, ctx.deps.config.operatorEmails),
    }),
  }),
  installationStatus: t.field({
    type: InstallationStatusType,
    description: "The System page's Installation tab: every company together, for installation operators only (OPERATOR_EMAILS; Forbidden otherwise).",
    resolve: async (_root, _args, ctx): Promise<InstallationView> => ({
      ...(await installationStatus({ ...serviceCtx(ctx), operatorEmails: ctx.deps.config.operatorEmails })),
      ...dependencies(ctx),
    }),
  }),
}));
