import { builder } from '../builder.js';
import { serviceCtx } from '../context.js';
import type { Page } from '../../services/listing.js';
import { getOutboxBodies, listOutbox, type EmailKind, type OutboxEntry } from '../../services/notifications/outbox.js';
import { RUNNABLE_JOBS, listJobSchedules, runJobNow, type JobSchedule } from '../../services/notifications/schedules.js';
import { sendTestEmail } from '../../services/notifications/test-email.js';
import { AppError } from '../../domain/errors.js';
import { PageInfoType } from './licenses.js';

// Scheduled jobs and the email outbox: thin resolvers over services/notifications. Emails are the caller's
// tenant's only; schedules are the service's (the same for every tenant).

const EmailStatusEnum = builder.enumType('EmailStatus', {
  description: 'pending: not delivered yet (or retrying); sent: accepted by the provider (or kept in the development outbox); failed: given up.',
  values: ['pending', 'sent', 'failed'] as const,
});

const EmailKindEnum = builder.enumType('EmailKind', {
  values: { weeklyDigest: { value: 'weekly-digest' }, expiryAdmin: { value: 'expiry-admin' }, expiryCustomer: { value: 'expiry-customer' }, test: { value: 'test' }, invitation: { value: 'invitation' } } as const,
});

const EmailDeliveryModeEnum = builder.enumType('EmailDeliveryMode', {
  description: 'POSTMARK: emails are delivered. DEVELOPMENT: no mail provider is configured (POSTMARK_SERVER_TOKEN); emails are kept in the outbox, nothing is delivered.',
  values: ['POSTMARK', 'DEVELOPMENT'] as const,
});

const JobScheduleType = builder.objectRef<JobSchedule>('JobSchedule').implement({
  description: 'A scheduled job with its last and next run in the job store.',
  fields: (t) => ({
    name: t.exposeString('name'),
    description: t.exposeString('description'),
    schedule: t.exposeString('schedule', { description: 'Cron expression.' }),
    timezone: t.exposeString('timezone'),
    lastRunAt: t.expose('lastRunAt', { type: 'DateTime', nullable: true }),
    lastFinishedAt: t.expose('lastFinishedAt', { type: 'DateTime', nullable: true }),
    nextRunAt: t.expose('nextRunAt', { type: 'DateTime', nullable: true }),
    lastFailedAt: t.expose('lastFailedAt', { type: 'DateTime', nullable: true }),
    lastFailReason: t.exposeString('lastFailReason', { nullable: true }),
    running: t.exposeBoolean('running'),
    canRunNow: t.boolean({ description: 'A CompanyAdmin may start it with runJobNow.', resolve: (job) => (RUNNABLE_JOBS as readonly string[]).includes(job.name) }),
  }),
});

const EmailType = builder.objectRef<OutboxEntry>('Email').implement({
  description: 'An email in the outbox: written first, then delivered.',
  fields: (t) => ({
    id: t.exposeID('id'),
    kind: t.field({ type: EmailKindEnum, resolve: (email) => email.kind as EmailKind }),
    to: t.exposeString('toAddress'),
    subject: t.exposeString('subject'),
    status: t.field({ type: EmailStatusEnum, resolve: (email) => email.status }),
    attempts: t.exposeInt('attempts'),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime' }),
    lastError: t.exposeString('lastError', { nullable: true }),
    providerMessageId: t.exposeString('providerMessageId', { nullable: true, description: '"development" for the development outbox.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    sentAt: t.expose('sentAt', { type: 'DateTime', nullable: true }),
    textBody: t.string({ nullable: true, resolve: async (email, _args, ctx) => (await getOutboxBodies(serviceCtx(ctx), email.id))?.text ?? null }),
    htmlBody: t.string({ nullable: true, resolve: async (email, _args, ctx) => (await getOutboxBodies(serviceCtx(ctx), email.id))?.html ?? null }),
  }),
});

const EmailConnectionType = builder.objectRef<Page<OutboxEntry>>('EmailConnection').implement({
  fields: (t) => ({
    nodes: t.field({ type: [EmailType], resolve: (page) => page.nodes }),
    pageInfo: t.field({ type: PageInfoType, resolve: (page) => page.pageInfo }),
    totalCount: t.exposeInt('totalCount'),
  }),
});

builder.queryFields((t) => ({
  jobSchedules: t.field({
    type: [JobScheduleType],
    description: 'Weekly digest, expiry alerts, email delivery and house-keeping: schedule (UTC), last and next run.',
    resolve: (_root, _args, ctx) => listJobSchedules({ jobs: ctx.deps.jobs }),
  }),
  emails: t.field({
    type: EmailConnectionType,
    authScopes: { admin: true },
    description: "Your company's emails, newest first. first: 1–100 (default 20); after: a pageInfo.endCursor.",
    args: { status: t.arg({ type: EmailStatusEnum }), kind: t.arg({ type: EmailKindEnum }), first: t.arg.int(), after: t.arg.string() },
    resolve: (_root, args, ctx) => listOutbox(serviceCtx(ctx), args),
  }),
}));

builder.queryFields((t) => ({
  emailDeliveryMode: t.field({
    type: EmailDeliveryModeEnum,
    authScopes: { admin: true },
    description: 'Whether emails are delivered (Postmark) or only kept in the development outbox.',
    resolve: (_root, _args, ctx) => (ctx.deps.config.postmarkServerToken ? 'POSTMARK' : 'DEVELOPMENT'),
  }),
}));

builder.mutationFields((t) => ({
  runJobNow: t.field({
    type: JobScheduleType,
    authScopes: { admin: true },
    description: 'Queues expiry-notifications, weekly-digest or email-delivery for the next free worker (CompanyAdmin). The jobs are idempotent: a run sends nothing twice.',
    args: { name: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => runJobNow({ jobs: ctx.deps.jobs, actor: ctx.actor }, args.name),
  }),
  sendTestEmail: t.field({
    type: EmailType,
    authScopes: { admin: true },
    description: 'Sends a test email to you (the signed-in CompanyAdmin) at once, through the configured delivery; answers with its outbox entry.',
    resolve: (_root, _args, ctx) => {
      const transport = ctx.deps.jobs?.transport;
      if (!transport) throw new AppError('ServiceUnavailable', 'Email delivery is not running in this process.');
      return sendTestEmail({ ...serviceCtx(ctx), publicUrl: ctx.deps.config.publicUrl, transport });
    },
  }),
}));
