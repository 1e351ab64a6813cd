import { builder } from '../builder.js';
import { serviceCtx } from '../context.js';
import { systemStatus, type SystemStatus } from '../../services/system-status.js';
import { EmailDeliveryModeEnum } from './email.js';

// The console's System page: the numbers the metrics export (README "Observability"), for the caller's company.

type SystemView = SystemStatus & { redis: 'UP' | 'DOWN' | 'NOT_CONFIGURED'; mailProvider: 'POSTMARK' | 'DEVELOPMENT' };

const RedisStatusEnum = builder.enumType('RedisStatus', {
  description: 'UP: rate limits are shared through Redis. DOWN: Redis does not answer; each process counts its own until it returns. NOT_CONFIGURED: no REDIS_URL.',
  values: ['UP', 'DOWN', 'NOT_CONFIGURED'] as const,
});

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
    auditVerificationHolds: t.boolean({
      nullable: true,
      description: 'Whether the newest full verification of your activity log holds; null before the first.',
      resolve: (status) => (status.auditVerifiedCompanies ? status.auditVerificationsBroken === 0 : null),
    }),
    unfinishedRuns: t.field({ type: [JobRunProgressType], resolve: (status) => status.runs }),
    redis: t.field({ type: RedisStatusEnum, resolve: (status) => status.redis }),
    mailProvider: t.field({ type: EmailDeliveryModeEnum, resolve: (status) => status.mailProvider }),
  }),
});

builder.queryFields((t) => ({
  systemStatus: t.field({
    type: SystemStatusType,
    authScopes: { admin: true },
    description: "The System page (COMPANY_ADMIN): your company's email and webhook backlogs, activity-log checkpoint and verification, unfinished runs, Redis and mail provider. Job schedules: jobSchedules.",
    resolve: async (_root, _args, ctx): Promise<SystemView> => {
      const reachable = ctx.deps.rateLimits.redisReachable();
      return {
        ...(await systemStatus(serviceCtx(ctx))),
        redis: reachable === null ? 'NOT_CONFIGURED' : reachable ? 'UP' : 'DOWN',
        mailProvider: ctx.deps.config.postmarkServerToken ? 'POSTMARK' : 'DEVELOPMENT',
      };
    },
  }),
}));
