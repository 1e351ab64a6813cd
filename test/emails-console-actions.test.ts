import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJobs, type Jobs } from '../server/src/jobs/scheduler.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { startPostmarkPeer, type PostmarkPeer } from './support/postmark-peer.js';
import { runCli } from './support/processes.js';
import { waitUntil } from './support/wait.js';

// The Emails page's actions: which delivery is configured, "Send test email" and "Run now", and the last run
// of a job started from the CLI.

const SCHEDULES = '{ jobSchedules { name lastRunAt lastFinishedAt running } }';
const TEST_EMAIL = 'mutation { sendTestEmail { email { kind to status providerMessageId lastError } } }';

describe('development outbox (no mail provider)', () => {
  let t: TestApp;
  let jobs: Jobs;
  let admin: { token: string; tenantId: string };
  beforeAll(async () => {
    t = await startTestApp({ clock: TestClock.startingNow(), env: { POSTMARK_SERVER_TOKEN: '' } });
    const setup = await t.setupAdmin();
    admin = { token: setup.token, tenantId: setup.user.tenantId };
    await t.seedUser(admin.tenantId, { email: 'reader@acme.test', role: 'ReadOnly' });
    jobs = await startJobs({ ...t.deps, clock: () => new Date() }, { worker: true, processEvery: 100 });
    t.deps.jobs = jobs;
  });
  afterAll(async () => {
    await jobs?.stop();
    await t?.close();
  });

  it('says emails are kept, not delivered; a test email lands in the outbox marked as the development outbox', async () => {
    expect((await t.gql('{ emailDeliveryMode }', {}, { token: admin.token })).data.emailDeliveryMode).toBe('DEVELOPMENT');
    const sent = await t.gql(TEST_EMAIL, {}, { token: admin.token });
    expect(sent.errors).toBeUndefined();
    expect(sent.data.sendTestEmail.email).toEqual({ kind: 'TEST', to: 'admin@acme.test', status: 'SENT', providerMessageId: 'development', lastError: null });
    const listed = await t.gql('{ emails(kind: TEST) { totalCount nodes { subject } } }', {}, { token: admin.token });
    expect(listed.data.emails).toEqual({ totalCount: 1, nodes: [{ subject: 'Acme Corp: test email from Keyforge' }] });
  });

  it('read-only members and API keys may not send test emails or start jobs', async () => {
    const reader = await t.login('reader@acme.test');
    expect((await t.gql(TEST_EMAIL, {}, { token: reader.token })).errors?.[0].extensions?.code).toBe('Forbidden');
    expect((await t.gql('mutation { runJobNow(input: { name: "email-delivery" }) { jobSchedule { name } } }', {}, { token: reader.token })).errors?.[0].extensions?.code).toBe('Forbidden');
    const key = (await t.gql('mutation { createApiKey(input: { name: "ops", role: COMPANY_ADMIN }) { key } }', {}, { token: admin.token })).data.createApiKey.key;
    expect((await t.gql(TEST_EMAIL, {}, { apiKey: key })).errors?.[0].extensions?.code).toBe('Forbidden');
  });

  it('Run now queues a job that then shows its last run; only the idempotent email jobs can be started', async () => {
    const before = (await t.gql(SCHEDULES, {}, { token: admin.token })).data.jobSchedules.find((job: { name: string }) => job.name === 'expiry-notifications');
    const queued = await t.gql('mutation { runJobNow(input: { name: "expiry-notifications" }) { jobSchedule { name } } }', {}, { token: admin.token });
    expect(queued.errors).toBeUndefined();
    const after = await waitUntil(
      async () => {
        const now = (await t.gql(SCHEDULES, {}, { token: admin.token })).data.jobSchedules.find((job: { name: string }) => job.name === 'expiry-notifications');
        return now.lastFinishedAt !== before.lastFinishedAt && now;
      },
      { timeout: 20_000, interval: 100, what: 'the queued run to finish' },
    );
    expect(after.lastFinishedAt).not.toBe(before.lastFinishedAt);
    expect(await t.prisma.jobLastRun.findUniqueOrThrow({ where: { job: 'expiry-notifications' } })).toMatchObject({ source: 'console', failedAt: null });
    const refused = await t.gql('mutation { runJobNow(input: { name: "audit-verify" }) { jobSchedule { name } } }', {}, { token: admin.token });
    expect(refused.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { name: expect.any(String) } });
  });

  it('a run from the CLI shows as the last run too (the job store alone does not know it)', async () => {
    const env = { DATABASE_URL: t.config.databaseUrl!, DATA_DIR: t.config.dataDir, SERVER_SECRET: t.config.serverSecret!, POSTMARK_SERVER_TOKEN: '' };
    const run = runCli(['jobs:run', 'weekly-digest', '--json'], env);
    expect(run.status, run.stderr).toBe(0);
    const digest = (await t.gql(SCHEDULES, {}, { token: admin.token })).data.jobSchedules.find((job: { name: string }) => job.name === 'weekly-digest');
    expect(digest.lastRunAt).not.toBeNull();
    expect(digest.lastFinishedAt).not.toBeNull();
    expect(await t.prisma.jobLastRun.findUniqueOrThrow({ where: { job: 'weekly-digest' } })).toMatchObject({ source: 'cli' });
  });
});

describe('Postmark delivery', () => {
  let t: TestApp;
  let peer: PostmarkPeer;
  let jobs: Jobs;
  beforeAll(async () => {
    peer = await startPostmarkPeer();
    t = await startTestApp({ clock: TestClock.startingNow(), env: peer.env });
    jobs = await startJobs({ ...t.deps, clock: () => new Date() }, { worker: false });
    t.deps.jobs = jobs;
  });
  afterAll(async () => {
    await jobs?.stop();
    await t?.close();
    await peer?.close();
  });

  it('a test email goes through the provider to the admin who asked, at once', async () => {
    const { token } = await t.setupAdmin({ email: 'ops@globex.test', companyName: 'Globex', keyPrefix: 'GLBX' });
    expect((await t.gql('{ emailDeliveryMode }', {}, { token })).data.emailDeliveryMode).toBe('POSTMARK');
    const sent = await t.gql(TEST_EMAIL, {}, { token });
    expect(sent.data.sendTestEmail.email).toMatchObject({ kind: 'TEST', to: 'ops@globex.test', status: 'SENT', lastError: null });
    expect(peer.messages.map((message) => [message.To, message.Subject])).toEqual([['ops@globex.test', 'Globex: test email from Keyforge']]);
  });
});
