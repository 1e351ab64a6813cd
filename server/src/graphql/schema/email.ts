import { builder, screamingEnumValues } from '../builder.js';
import { keysetPage, pageConnection } from '../connections.js';
import { serviceCtx, type GraphQLContext } from '../context.js';
import { queryFromInfo } from '@pothos/plugin-prisma';
import { EMAIL_SUMMARY, listOutbox, previewOutboxBody, type EmailKind, type OutboxEntry } from '../../services/notifications/outbox.js';
import { RUNNABLE_JOBS, listJobSchedules, runJobNow, type JobSchedule } from '../../services/notifications/schedules.js';
import { sendTestEmail } from '../../services/notifications/test-email.js';
import { AppError } from '../../domain/errors.js';

// Scheduled jobs and the email outbox: thin resolvers over services/notifications. Emails are the caller's
// tenant's only; schedules are the service's (the same for every tenant).

const EmailStatusEnum = builder.enumType('EmailStatus', {
  description: 'PENDING: not delivered yet (or retrying); SENT: accepted by the provider (or kept in the development outbox); FAILED: given up.',
  values: screamingEnumValues(['pending', 'sent', 'failed'] as const),
});

const EmailKindEnum = builder.enumType('EmailKind', {
  values: screamingEnumValues(['weekly-digest', 'expiry-admin', 'expiry-customer', 'test', 'invitation', 'password-reset', 'webhook-disabled', 'license-key'] as const),
});

export const EmailDeliveryModeEnum = builder.enumType('EmailDeliveryMode', {
  description: 'POSTMARK: emails are delivered. DEVELOPMENT: no mail provider is configured (POSTMARK_SERVER_TOKEN); emails are kept in the outbox, nothing is delivered.',
  values: ['POSTMARK', 'DEVELOPMENT'] as const,
});

/** POSTMARK when a mail provider is configured; DEVELOPMENT: emails are only kept in the outbox. */
export const emailDeliveryMode = (ctx: GraphQLContext): 'POSTMARK' | 'DEVELOPMENT' => (ctx.deps.config.postmarkServerToken ? 'POSTMARK' : 'DEVELOPMENT');

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
    canRunNow: t.boolean({ description: 'A COMPANY_ADMIN may start it with runJobNow.', resolve: (job) => (RUNNABLE_JOBS as readonly string[]).includes(job.name) }),
  }),
});

// Select mode: the summary columns; a body only when asked for, loaded with the email rows and shown as the service's
// preview (single-use tokens of someone else's email redacted).
const EmailType = builder.prismaObject('EmailOutbox', {
  name: 'Email',
  select: EMAIL_SUMMARY,
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
    textBody: t.string({ nullable: true, select: { text: true }, resolve: (email, _args, ctx) => previewOutboxBody(serviceCtx(ctx), email, email.text) }),
    htmlBody: t.string({ nullable: true, select: { html: true }, resolve: (email, _args, ctx) => previewOutboxBody(serviceCtx(ctx), email, email.html) }),
  }),
});

builder.queryFields((t) => ({
  jobSchedules: t.field({
    type: [JobScheduleType],
    description: 'Weekly digest, expiry alerts, email delivery and house-keeping: schedule (UTC), last and next run.',
    resolve: (_root, _args, ctx) => listJobSchedules({ jobs: ctx.deps.jobs }),
  }),
  emails: t.connection(
    {
      type: EmailType,
      authScopes: { admin: true },
      description: "Your company's emails, newest first. first/last: 1–100 (default 20); after: an endCursor (with first), before: a startCursor (with last); not both directions at once.",
      args: { status: t.arg({ type: EmailStatusEnum }), kind: t.arg({ type: EmailKindEnum }) },
      resolve: async (_root, args, ctx, info) => {
        const query = queryFromInfo({ context: ctx, info, paths: [['nodes'], ['edges', 'node']], typeName: 'Email' });
        return pageConnection(await listOutbox(serviceCtx(ctx), { status: args.status, kind: args.kind, ...keysetPage(args) }, query));
      },
    },
    { name: 'EmailConnection' },
    { name: 'EmailEdge' },
  ),
}));

builder.queryFields((t) => ({
  emailDeliveryMode: t.field({
    type: EmailDeliveryModeEnum,
    authScopes: { admin: true },
    description: 'Whether emails are delivered (Postmark) or only kept in the development outbox.',
    resolve: (_root, _args, ctx) => emailDeliveryMode(ctx),
  }),
}));

const RunJobNowInput = builder.inputType('RunJobNowInput', { fields: (t) => ({ name: t.string({ required: true, description: 'expiry-notifications, weekly-digest or email-delivery.' }) }) });
const RunJobNowPayload = builder.objectRef<JobSchedule>('RunJobNowPayload').implement({
  fields: (t) => ({ jobSchedule: t.field({ type: JobScheduleType, resolve: (job) => job }) }),
});
const SendTestEmailPayload = builder.objectRef<OutboxEntry>('SendTestEmailPayload').implement({
  fields: (t) => ({ email: t.field({ type: EmailType, description: 'Its outbox entry.', resolve: (email) => email }) }),
});

builder.mutationFields((t) => ({
  runJobNow: t.field({
    type: RunJobNowPayload,
    authScopes: { admin: true },
    description: 'Queues expiry-notifications, weekly-digest or email-delivery for the next free worker (COMPANY_ADMIN). The jobs are idempotent: a run sends nothing twice.',
    args: { input: t.arg({ type: RunJobNowInput, required: true }) },
    resolve: (_root, { input }, ctx) => runJobNow({ jobs: ctx.deps.jobs, actor: ctx.actor }, input.name),
  }),
  sendTestEmail: t.field({
    type: SendTestEmailPayload,
    authScopes: { admin: true },
    description: 'Sends a test email to you (the signed-in COMPANY_ADMIN) at once, through the configured delivery; answers with its outbox entry.',
    resolve: (_root, _args, ctx) => {
      const transport = ctx.deps.jobs?.transport;
      if (!transport) throw new AppError('ServiceUnavailable', 'Email delivery is not running in this process.');
      return sendTestEmail({ ...serviceCtx(ctx), publicUrl: ctx.deps.config.publicUrl, transport });
    },
  }),
}));
