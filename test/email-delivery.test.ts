import { mkdtempSync, rmSync } from 'node:fs';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../server/src/config.js';
import { openDatabase } from '../server/src/db/database.js';
import { createTransport } from '../server/src/jobs/email/transport.js';
import { startJobs } from '../server/src/jobs/scheduler.js';
import { createLogger } from '../server/src/logger.js';
import { EMAIL_OUTBOX, claimDueEmails, deliverDueEmails } from '../server/src/services/notifications/delivery.js';
import { queueExpiryNotifications } from '../server/src/services/notifications/expiry.js';
import { enqueueEmails, listOutbox } from '../server/src/services/notifications/outbox.js';
import { listJobSchedules } from '../server/src/services/notifications/schedules.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { seeder } from './support/seed.js';
import { startPostmarkPeer, type PostmarkPeer } from './support/postmark-peer.js';
import { runCli } from './support/processes.js';
import { waitUntil } from './support/wait.js';

const START = '2026-06-01T08:00:00.000Z';
const MINUTE = 60_000;

let app: TestApp;
let peer: PostmarkPeer;
let tenantId: string;
const clock = new TestClock(Date.parse(START));
const ctx = () => ({ db: app.deps.db, now: clock.now(), publicUrl: app.config.publicUrl });
const postmark = () => createTransport(app.config, app.deps.logger);
const deliver = () => deliverDueEmails(ctx(), postmark());
let serial = 0;

/** Writes emails straight into the outbox, as a job would. */
async function enqueue(...to: string[]) {
  const emails = to.map((address) => ({ tenantId, kind: 'expiry-customer' as const, idempotencyKey: `test:${++serial}:${address}`, to: address, subject: `Hello ${address}`, html: '<p>Hello</p>', text: 'Hello' }));
  await enqueueEmails(app.prisma, emails, clock.now());
  return emails.map((email) => email.idempotencyKey);
}
const row = (idempotencyKey: string) => app.prisma.emailOutbox.findUniqueOrThrow({ where: { idempotencyKey } });

beforeAll(async () => {
  peer = await startPostmarkPeer();
  app = await startTestApp({ clock, env: peer.env });
  tenantId = (await app.seedTenant({ name: 'Deliver Co', keyPrefix: 'DLV' })).id;
}, 120_000);

afterAll(async () => {
  await app?.close();
  await peer?.close();
});

beforeEach(() => {
  peer.reset();
  clock.set(START);
});

describe('outbox delivery through Postmark', () => {
  it('sends one message via /email and several via /email/batch, with the outbox id as metadata', async () => {
    const [one] = await enqueue('one@customer.test');
    expect(await deliver()).toMatchObject({ sent: 1 });
    const batch = await enqueue('two@customer.test', 'three@customer.test');
    expect(await deliver()).toMatchObject({ sent: 2 });
    expect(peer.requests.map((request) => request.path)).toEqual(['/email', '/email/batch']);
    const sent = await row(one);
    expect(sent).toMatchObject({ status: 'sent', attempts: 1, providerMessageId: peer.to('one@customer.test')[0].MessageID, sentAt: clock.now() });
    expect(peer.to('one@customer.test')[0]).toMatchObject({ Metadata: { outbox_id: sent.id }, Tag: 'expiry-customer', MessageStream: 'outbound', TextBody: 'Hello' });
    expect((await row(batch[1])).status).toBe('sent');
    expect(await deliver()).toMatchObject({ sent: 0 });
    expect(peer.messages).toHaveLength(3);
  });

  it('a crash between the outbox write and delivery: the next run sends each email once', async () => {
    const product = await app.seedProduct(tenantId, 'Crash Studio');
    await app.prisma.user.create({ data: { tenantId, email: 'admin@deliver.test', role: 'CompanyAdmin', passwordHash: 'unused' } });
    await app.seedLicense(tenantId, product.id, { expiresAt: new Date(clock.now().getTime() + 7.3 * DAY), customerEmail: 'crash@customer.test' });
    // The job wrote its emails, then the process died before delivering.
    expect(await queueExpiryNotifications(ctx())).toMatchObject({ notices: 1, adminEmails: 1, customerEmails: 1 });
    expect(peer.messages).toHaveLength(0);
    // After restart: the job's rerun adds nothing, the delivery run sends both, a second one nothing.
    expect(await queueExpiryNotifications(ctx())).toMatchObject({ notices: 0 });
    expect(await deliver()).toMatchObject({ sent: 2 });
    expect(await deliver()).toMatchObject({ sent: 0 });
    expect(peer.messages.map((message) => message.To).sort()).toEqual(['admin@deliver.test', 'crash@customer.test']);
  });

  it('a crash after claiming, before sending: the row waits out its lease, then is sent once', async () => {
    const [key] = await enqueue('claimed@customer.test');
    expect(await claimDueEmails(ctx())).toHaveLength(1); // …and the worker dies here.
    expect(await deliver()).toMatchObject({ sent: 0 });
    clock.advance(EMAIL_OUTBOX.leaseMs - 1);
    expect(await deliver()).toMatchObject({ sent: 0 });
    clock.advance(1);
    expect(await deliver()).toMatchObject({ sent: 1, reconciled: 0 });
    expect(peer.to('claimed@customer.test')).toHaveLength(1);
    expect(await row(key)).toMatchObject({ status: 'sent', attempts: 2 });
  });

  it('a crash after Postmark accepted but before we heard back: found by its outbox id, never sent twice', async () => {
    const [key] = await enqueue('accepted@customer.test');
    peer.dropNextAnswer();
    expect(await deliver()).toMatchObject({ sent: 0, retrying: 1 });
    expect(peer.to('accepted@customer.test')).toHaveLength(1);
    clock.advance(EMAIL_OUTBOX.retryDelayMs(1));
    expect(await deliver()).toMatchObject({ sent: 1, reconciled: 1 });
    expect(peer.to('accepted@customer.test')).toHaveLength(1);
    expect(await row(key)).toMatchObject({ status: 'sent', providerMessageId: peer.to('accepted@customer.test')[0].MessageID });
  });

  it('Postmark 500s are retried with exponential backoff until accepted', async () => {
    const [key] = await enqueue('flaky@customer.test');
    peer.failRequests(2, 500, 500, 'Internal Server Error');
    expect(await deliver()).toMatchObject({ retrying: 1 });
    expect(await row(key)).toMatchObject({ status: 'pending', attempts: 1, nextAttemptAt: new Date(clock.now().getTime() + MINUTE) });
    expect((await row(key)).lastError).toMatch(/HTTP 500/);
    clock.advance(MINUTE - 1000);
    expect(await deliver()).toMatchObject({ sent: 0, retrying: 0 });
    clock.advance(1000);
    expect(await deliver()).toMatchObject({ retrying: 1 });
    expect(await row(key)).toMatchObject({ attempts: 2, nextAttemptAt: new Date(clock.now().getTime() + 2 * MINUTE) });
    clock.advance(2 * MINUTE);
    expect(await deliver()).toMatchObject({ sent: 1 });
    expect(await row(key)).toMatchObject({ status: 'sent', attempts: 3, lastError: null });
    expect(peer.to('flaky@customer.test')).toHaveLength(1);
  });

  it('422 invalid address (300) and inactive recipient (406) are recorded as failed, not retried', async () => {
    peer.rejectAddress('bad@customer.test', 300, "Error parsing 'To': Illegal email address");
    peer.rejectAddress('bounced@customer.test', 406, 'You tried to send to recipient(s) that have been marked as inactive.');
    const [bad] = await enqueue('bad@customer.test');
    expect(await deliver()).toMatchObject({ failed: 1 }); // /email answers HTTP 422
    const [bounced, fine] = await enqueue('bounced@customer.test', 'fine@customer.test');
    expect(await deliver()).toMatchObject({ failed: 1, sent: 1 }); // /email/batch answers 200, ErrorCode per message
    expect(await row(bad)).toMatchObject({ status: 'failed', attempts: 1 });
    expect((await row(bad)).lastError).toMatch(/HTTP 422 300/);
    expect(await row(bounced)).toMatchObject({ status: 'failed', lastError: expect.stringMatching(/^Postmark 406/) });
    expect((await row(fine)).status).toBe('sent');
    const requests = peer.requests.length;
    clock.advance(7 * DAY);
    expect(await deliver()).toMatchObject({ sent: 0, failed: 0, retrying: 0 });
    expect(peer.requests).toHaveLength(requests);
  });

  it('a 422 the operator can fix (405: account cannot send) is retried, and gives up after EMAIL_OUTBOX.maxAttempts', async () => {
    const [key] = await enqueue('patient@customer.test');
    peer.failRequests(EMAIL_OUTBOX.maxAttempts, 422, 405, 'Not allowed to send: out of credits');
    for (let attempt = 1; attempt <= EMAIL_OUTBOX.maxAttempts; attempt++) {
      await deliver();
      clock.advance(EMAIL_OUTBOX.retryDelayMs(attempt));
    }
    expect(await row(key)).toMatchObject({ status: 'failed', attempts: EMAIL_OUTBOX.maxAttempts, lastError: expect.stringMatching(/405/) });
    expect(peer.to('patient@customer.test')).toHaveLength(0);
  });

  it('a worker whose lease was taken over cannot overwrite the newer outcome', async () => {
    const [key] = await enqueue('fenced@customer.test');
    const [stale] = await claimDueEmails(ctx());
    clock.advance(EMAIL_OUTBOX.leaseMs);
    expect(await deliver()).toMatchObject({ sent: 1 });
    const { deliverClaimed } = await import('../server/src/services/notifications/delivery.js');
    peer.failRequests(1, 500, 500);
    await deliverClaimed(ctx(), postmark(), [stale]);
    expect(await row(key)).toMatchObject({ status: 'sent', attempts: 2, lastError: null });
  });
});

describe('mail configuration', () => {
  it('needs MAIL_FROM with a Postmark token, and validates the store and API URLs', () => {
    expect(() => loadConfig({ POSTMARK_SERVER_TOKEN: 'token' })).toThrow(/MAIL_FROM: is required/);
    expect(loadConfig({ POSTMARK_SERVER_TOKEN: 'token', MAIL_FROM: 'Acme Licensing <licensing@acme.test>' })).toMatchObject({ postmarkApiUrl: 'https://api.postmarkapp.com', jobsWorker: true });
    expect(() => loadConfig({ MAIL_FROM: 'not an address' })).toThrow(/MAIL_FROM:/);
    expect(() => loadConfig({ MONGODB_URL: 'postgres://x' })).toThrow(/MONGODB_URL:/);
    expect(() => loadConfig({ POSTMARK_API_URL: 'ftp://x' })).toThrow(/POSTMARK_API_URL:/);
    expect(loadConfig({ JOBS_WORKER: 'false' }).jobsWorker).toBe(false);
  });
});

describe('development outbox (no POSTMARK_SERVER_TOKEN)', () => {
  it('keeps emails in the outbox, listable per tenant with their bodies, and says so in the log', async () => {
    const dev = await startTestApp({ clock });
    try {
      const jobs = await startJobs({ ...dev.deps, clock: clock.now }, { worker: true });
      expect(jobs.transport.name).toBe('development');
      await jobs.stop();
      expect(dev.logs.join('')).toContain('emails are kept in the development outbox');
      const tenant = await dev.seedTenant({ name: 'Dev Co', keyPrefix: 'DEV' });
      const other = await dev.seedTenant({ name: 'Other Co', keyPrefix: 'OTHER' });
      for (const [id, address] of [[tenant.id, 'a@dev.test'], [tenant.id, 'b@dev.test'], [other.id, 'c@other.test']]) {
        await enqueueEmails(dev.prisma, [{ tenantId: id, kind: 'weekly-digest', idempotencyKey: `dev:${address}`, to: address, subject: 'Digest', html: '<p>Hi</p>', text: 'Hi' }], clock.now());
      }
      expect(await deliverDueEmails({ db: dev.deps.db, now: clock.now() }, jobs.transport)).toMatchObject({ sent: 3 });
      const as = (tenantId: string) => ({ db: dev.deps.db, secrets: dev.deps.secrets, now: clock.now(), actor: systemActor(tenantId), meta: NO_META });
      const page = await listOutbox(as(tenant.id), { status: 'sent', first: 1, includeBody: true });
      expect(page.totalCount).toBe(2);
      expect(page.nodes[0]).toMatchObject({ providerMessageId: 'development', text: 'Hi', html: '<p>Hi</p>' });
      const next = await listOutbox(as(tenant.id), { status: 'sent', first: 1, after: page.pageInfo.endCursor });
      expect([page.nodes[0].toAddress, next.nodes[0].toAddress].sort()).toEqual(['a@dev.test', 'b@dev.test']);
      expect(next.nodes[0]).not.toHaveProperty('html');
      expect((await listOutbox(as(other.id), {})).nodes.map((email) => email.toAddress)).toEqual(['c@other.test']);
    } finally {
      await dev.close();
    }
  });
});

describe('schedules and operators', () => {
  it('registers the four schedules (UTC) and reports their next runs', async () => {
    const jobs = await startJobs({ ...app.deps, clock: clock.now }, { worker: false });
    try {
      const schedules = await listJobSchedules({ jobs });
      expect(schedules.map((job) => [job.name, job.schedule, job.timezone])).toEqual([
        ['weekly-digest', '0 9 * * 1', 'UTC'],
        ['expiry-notifications', '0 8 * * *', 'UTC'],
        ['email-delivery', '* * * * *', 'UTC'],
        ['housekeeping', '*/10 * * * *', 'UTC'],
        ['audit-checkpoints', '*/15 * * * *', 'UTC'],
        ['audit-verify', '30 3 * * *', 'UTC'],
        ['webhook-delivery', '* * * * *', 'UTC'],
        ['bulk-license-jobs', '* * * * *', 'UTC'],
      ]);
      const digest = schedules[0].nextRunAt!;
      expect([digest.getUTCDay(), digest.getUTCHours(), digest.getUTCMinutes()]).toEqual([1, 9, 0]);
      expect(schedules[1].nextRunAt!.toISOString()).toMatch(/T08:00:00\.000Z$/);
      expect(schedules[1].nextRunAt!.getTime() - Date.now()).toBeLessThanOrEqual(DAY);
    } finally {
      await jobs.stop();
    }
    await expect(listJobSchedules({})).rejects.toThrow(/job store/);
  });

  it('GraphQL: schedules for any signed-in user, the outbox for CompanyAdmins of that tenant only', async () => {
    await app.seedUser(tenantId, { email: 'gql-admin@deliver.test' });
    await app.seedUser(tenantId, { email: 'gql-reader@deliver.test', role: 'ReadOnly' });
    const other = await app.seedTenant({ name: 'Elsewhere', keyPrefix: 'ELSE' });
    await enqueueEmails(app.prisma, [{ tenantId: other.id, kind: 'weekly-digest', idempotencyKey: 'else:1', to: 'x@else.test', subject: 'Not yours', html: '<p>x</p>', text: 'x' }], clock.now());
    const [mine] = await enqueue('gql@customer.test');
    await deliver();
    const jobs = await startJobs({ ...app.deps, clock: clock.now }, { worker: false });
    app.deps.jobs = jobs;
    try {
      const admin = await app.login('gql-admin@deliver.test');
      const reader = await app.login('gql-reader@deliver.test');
      const schedules = await app.gql('{ jobSchedules { name schedule timezone nextRunAt lastRunAt running } }', {}, { token: reader.token });
      expect(schedules.errors).toBeUndefined();
      expect(schedules.data.jobSchedules.map((job: { name: string }) => job.name)).toEqual(['weekly-digest', 'expiry-notifications', 'email-delivery', 'housekeeping', 'audit-checkpoints', 'audit-verify', 'webhook-delivery', 'bulk-license-jobs']);
      const query = 'query($status: EmailStatus, $kind: EmailKind) { emails(status: $status, kind: $kind, first: 100) { totalCount nodes { id to kind status subject textBody } pageInfo { hasNextPage } } }';
      const emails = await app.gql(query, { kind: 'EXPIRY_CUSTOMER', status: 'SENT' }, { token: admin.token });
      expect(emails.errors).toBeUndefined();
      const found = emails.data.emails.nodes.find((email: { to: string }) => email.to === 'gql@customer.test');
      expect(found).toMatchObject({ id: (await row(mine)).id, kind: 'EXPIRY_CUSTOMER', status: 'SENT', textBody: 'Hello' });
      expect(JSON.stringify(emails.data)).not.toContain('else.test');
      expect((await app.gql(query, {}, { token: reader.token })).errors?.[0].extensions?.code).toBe('Forbidden');
    } finally {
      app.deps.jobs = undefined;
      await jobs.stop();
    }
  });

  it('pnpm cli jobs:run runs a job now with a chosen clock; outbox:list lists the outbox', async () => {
    const env = { DATABASE_URL: app.config.databaseUrl!, DATA_DIR: app.config.dataDir, SERVER_SECRET: 'test-server-secret-0123456789abcdef0123456789', POSTMARK_SERVER_TOKEN: '' };
    const product = await app.seedProduct(tenantId, 'CLI Studio');
    await app.seedLicense(tenantId, product.id, { expiresAt: new Date('2026-09-01T00:00:00Z'), customerEmail: 'cli@customer.test' });
    const run = runCli(['jobs:run', 'expiry-notifications', '--now', '2026-08-31T08:00:00Z', '--json'], env);
    expect(run.status, run.stderr).toBe(0);
    expect(run.json).toMatchObject({ job: 'expiry-notifications', now: '2026-08-31T08:00:00.000Z', result: { notices: 1, adminEmails: 2, customerEmails: 1, delivery: { sent: 3 } } });
    const listed = runCli(['outbox:list', '--status', 'sent', '--kind', 'expiry-customer', '--tenant', 'DLV', '--limit', '1', '--json'], env);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.json.emails).toHaveLength(1);
    expect(listed.json.emails[0]).toMatchObject({ to: 'cli@customer.test', providerMessageId: 'development', subject: 'Your CLI Studio license expires in 1 day' });
    expect(runCli(['jobs:run', 'nope', '--json'], env).json.error.code).toBe('InvalidRequest');
  });
});

describe('job store on the embedded database (PGlite)', () => {
  it('runs jobs through Agenda on the PostgreSQL backend in its own schema, notifications in memory', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-jobs-pglite-'));
    const db = await openDatabase({ dataDir });
    try {
      const config = loadConfig({ DATA_DIR: dataDir, PUBLIC_URL: 'http://embedded.test' });
      const logs: string[] = [];
      const logger = createLogger('info', { write: (line: string) => void logs.push(line) });
      const jobs = await startJobs({ config, db, logger, clock: clock.now }, { worker: true, processEvery: 100 });
      expect(jobs.store).toBe('embedded database (schema agenda)');
      const seed = seeder({ db, secrets: app.deps.secrets, now: clock.now });
      const tenant = await seed.tenant({ name: 'Embedded Co', keyPrefix: 'EMB' });
      const product = await seed.product(tenant.id, 'Embedded App');
      await seed.user(tenant.id, { email: 'admin@embedded.test' });
      await seed.license(tenant.id, product.id, { maxActivations: 1, expiresAt: new Date(clock.now().getTime() + 1.5 * DAY) });
      await jobs.runNow('expiry-notifications');
      await waitUntil(() => logs.some((line) => line.includes('"job":"expiry-notifications"') && line.includes('job finished')), { what: 'the expiry run to finish' });
      expect(await db.prisma.emailOutbox.findMany({ select: { toAddress: true, status: true } })).toEqual([{ toAddress: 'admin@embedded.test', status: 'sent' }]);
      const tables = await db.pglite!.query<{ table_schema: string; table_name: string }>(`SELECT table_schema, table_name FROM information_schema.tables WHERE table_name LIKE 'agenda%'`);
      expect(tables.rows.map((table) => `${table.table_schema}.${table.table_name}`).sort()).toEqual(['agenda.agenda_jobs', 'agenda.agenda_logs']);
      expect((await listJobSchedules({ jobs })).every((job) => job.nextRunAt instanceof Date)).toBe(true);
      await jobs.stop();
      // The app's own queries are untouched by the job store's search_path.
      expect(await db.sql.query('SELECT count(*)::int AS n FROM licenses', [])).toEqual([{ n: 1 }]);
    } finally {
      await db.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
