// A job worker killed (SIGKILL) in the middle of its work, with real `pnpm worker` processes on real PostgreSQL:
// another worker finishes the work, exactly once. Production lock lifetimes and leases (no test knobs), so each
// test waits out a dead worker's lease: about 2 minutes.
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { daysUntil } from '../server/src/domain/countdown.js';
import { enqueueEmails } from '../server/src/services/notifications/outbox.js';
import { THRESHOLDS, thresholdFor } from '../server/src/domain/notification-thresholds.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { startPostmarkPeer, type PostmarkPeer } from './support/postmark-peer.js';
import { startWorkerProcess, stopAllProcesses } from './support/processes.js';
import { seedLicensesInBulk } from './support/seed.js';
import { clearOfUtcMidnight, expiryOnCountdown } from './support/time.js';
import { waitUntil } from './support/wait.js';

let app: TestApp;
let peer: PostmarkPeer;

beforeAll(async () => {
  peer = await startPostmarkPeer();
  app = await startTestApp();
}, 120_000);

// A worker left running by a failed test would deliver the next test's emails: every test ends them all.
afterEach(() => stopAllProcesses());

afterAll(async () => {
  await stopAllProcesses();
  await app?.close();
  await peer?.close();
});

/** `pnpm worker` (server/src/worker.ts) on the test database, on the wall clock like production. */
function startWorker(env: Record<string, string> = {}) {
  return startWorkerProcess({ DATABASE_URL: app.config.databaseUrl!, SERVER_SECRET: app.config.serverSecret!, DATA_DIR: app.config.dataDir, PUBLIC_URL: app.config.publicUrl, LOG_LEVEL: 'info', ...env });
}

/** Makes a stored schedule due now; a worker polling every 5 s picks it up. */
const runSoon = (name: string) => app.deps.db.sql.query(`UPDATE agenda.agenda_jobs SET next_run_at = now() WHERE name = $1 AND type = 'single'`, [name]);

describe('a worker killed during the daily expiry run', () => {
  it('another worker finishes the same day’s run once the lease lapses: every notice and email exactly once', async () => {
    // The workers run on the wall clock and the run belongs to one UTC day (its period): not across a midnight.
    await clearOfUtcMidnight(8 * 60_000);
    const now = new Date();
    const period = now.toISOString().slice(0, 10);
    // Each license expires at noon of the day that puts it on a threshold's countdown (UTC calendar days), whatever
    // the hour now: the rule's own helpers, so the seed means the same at 00:01 and at 23:59.
    const expiryOn = (threshold: number) => expiryOnCountdown(now, threshold);
    for (const threshold of THRESHOLDS) expect(thresholdFor(daysUntil(expiryOn(threshold), now))).toBe(threshold);
    // 5 tenants × 1,500 licenses on the three thresholds, each with a customer: a tenant takes several batches.
    const tenants: { id: string; licenses: string[] }[] = [];
    for (let t = 0; t < 5; t++) {
      const prefix = `KILL${t}${randomBytes(2).toString('hex').toUpperCase()}`;
      const tenant = await app.seedTenant({ name: `Killed ${t}`, keyPrefix: prefix });
      for (const name of ['ada', 'bob']) await app.seedUser(tenant.id, { email: `${name}@${prefix.toLowerCase()}.test` });
      const product = await app.seedProduct(tenant.id, `Product ${t}`);
      await seedLicensesInBulk(app.prisma, { tenantId: tenant.id, productId: product.id, count: 1_500, hintPrefix: prefix }, (index) => ({
        maxActivations: 2,
        expiresAt: expiryOn(THRESHOLDS[index % THRESHOLDS.length]),
        customerEmail: `c${index}@${prefix.toLowerCase()}.test`,
      }));
      const licenses = await app.prisma.license.findMany({ where: { tenantId: tenant.id }, select: { id: true } });
      tenants.push({ id: tenant.id, licenses: licenses.map((license) => license.id) });
    }
    const ids = tenants.map((tenant) => tenant.id);

    const first = await startWorker();
    await runSoon('expiry-notifications');
    // Kill once at least one tenant is done and another has claimed notices but is not done: mid-tenant.
    const progress = async () => {
      const done = await app.prisma.jobRunTenant.findMany({ where: { job: 'expiry-notifications', period, status: 'done', tenantId: { in: ids } }, select: { tenantId: true } });
      const doneIds = new Set(done.map((row) => row.tenantId));
      const started = await app.prisma.expiryNotice.count({ where: { license: { tenantId: { in: ids.filter((id) => !doneIds.has(id)) } } } });
      return { done: doneIds.size, started };
    };
    await waitUntil(async () => {
      const { done, started } = await progress();
      return done >= 1 && started > 0;
    }, { timeout: 120_000, interval: 20, what: 'a run half done' });
    await first.stop('SIGKILL');
    const atKill = await progress();
    expect(atKill.done).toBeLessThan(tenants.length);
    const run = await app.prisma.jobRun.findUniqueOrThrow({ where: { job_period: { job: 'expiry-notifications', period } } });
    expect(run.finishedAt).toBeNull();

    const second = await startWorker();
    const killedAt = Date.now();
    try {
      // The dead worker's lease (90 s) lapses; the next email-delivery run (every minute) resumes the run.
      await waitUntil(async () => (await app.prisma.jobRun.findUniqueOrThrow({ where: { job_period: { job: 'expiry-notifications', period } } })).finishedAt !== null, { timeout: 240_000, interval: 500, what: 'the run to finish' });
      console.log(`expiry run resumed and finished ${((Date.now() - killedAt) / 1000).toFixed(0)} s after the kill (${atKill.done} of ${tenants.length} tenants were done)`);
      // A second pass finished it: the resume of email-delivery, or Agenda running the dead worker's one-off run
      // again once its lock lapsed (which of the two gets there first is a race; both process only what is left
      // to do, or redo it harmlessly: the checks below count every notice and email).
      expect((await app.prisma.jobRun.findUniqueOrThrow({ where: { job_period: { job: 'expiry-notifications', period } } })).passes).toBeGreaterThanOrEqual(2);
      // Agenda's rerun logs "job finished" only after the run's row says finished: wait for the line, not just the row.
      await waitUntil(() => /resuming an unfinished run|"job":"expiry-notifications"[^\n]*job finished/.test(second.output()), { timeout: 60_000, what: 'the second worker to log its pass' });

      for (const tenant of tenants) {
        const notices = await app.prisma.expiryNotice.findMany({ where: { license: { tenantId: tenant.id } }, select: { licenseId: true, threshold: true } });
        expect(notices).toHaveLength(tenant.licenses.length); // one per license (the primary key forbids two)
        const emails = await app.prisma.emailOutbox.groupBy({ by: ['toAddress', 'kind'], where: { tenantId: tenant.id }, _count: true });
        expect(emails.filter((email) => email.kind === 'expiry-customer')).toHaveLength(1_500); // 0 missing
        expect(emails.filter((email) => email.kind === 'expiry-admin').map((email) => email.toAddress.split('@')[0]).sort()).toEqual(['ada', 'bob']);
        expect(emails.filter((email) => email._count !== 1)).toEqual([]); // 0 duplicates
        // Each admin email lists the whole day (1,500), including what the killed worker had claimed.
        const admin = await app.prisma.emailOutbox.findFirstOrThrow({ where: { tenantId: tenant.id, kind: 'expiry-admin' }, select: { subject: true } });
        expect(admin.subject).toContain('1500 licenses expire soon');
      }
      expect(await app.prisma.jobRunTenant.count({ where: { job: 'expiry-notifications', period, tenantId: { in: ids }, status: 'done' } })).toBe(tenants.length);
    } finally {
      await second.stop('SIGKILL');
      // Not for the next test's workers to deliver.
      await app.prisma.emailOutbox.deleteMany({ where: { tenantId: { in: ids } } });
    }
  }, 900_000);
});

describe('a worker killed inside email-delivery', () => {
  it('the next worker takes delivery over within about 2 minutes: every email exactly once at Postmark', async () => {
    const domain = `deliver${randomBytes(3).toString('hex')}.test`;
    const tenant = await app.seedTenant({ name: 'Delivery', keyPrefix: `DLV${randomBytes(2).toString('hex').toUpperCase()}` });
    const now = new Date();
    const count = 300;
    await enqueueEmails(
      app.prisma,
      Array.from({ length: count }, (_, index) => ({ tenantId: tenant.id, kind: 'expiry-customer' as const, idempotencyKey: `fault-worker:${domain}:${index}`, to: `r${index}@${domain}`, subject: `Message ${index}`, html: `<p>${index}</p>`, text: `${index}` })),
      now,
    );
    const ours = () => peer.messages.filter((message) => message.To.endsWith(`@${domain}`));
    // Postmark accepts the first batch, and answers only after the worker is dead.
    peer.delayAnswers(30_000);
    const first = await startWorker(peer.env);
    await runSoon('email-delivery');
    await waitUntil(() => ours().length > 0, { timeout: 120_000, interval: 20, what: 'the first batch at Postmark' });
    await first.stop('SIGKILL');
    const killedAt = Date.now();
    const acceptedBeforeKill = ours().length;
    expect(acceptedBeforeKill).toBeLessThan(count);
    peer.delayAnswers(0);

    const second = await startWorker(peer.env);
    try {
      const sent = () => app.prisma.emailOutbox.count({ where: { tenantId: tenant.id, status: 'sent' } });
      await waitUntil(async () => (await sent()) === count, { timeout: 240_000, interval: 500, what: 'every email sent' });
      console.log(`delivery resumed: all ${count} sent ${((Date.now() - killedAt) / 1000).toFixed(0)} s after the kill (${acceptedBeforeKill} were accepted by Postmark, unanswered, when it died)`);
      const perAddress = new Map<string, number>();
      for (const message of ours()) perAddress.set(message.To, (perAddress.get(message.To) ?? 0) + 1);
      expect(perAddress.size).toBe(count); // 0 missing
      expect([...perAddress.values()].filter((times) => times !== 1)).toEqual([]); // 0 duplicates
      // The batch the dead worker left unanswered was found at Postmark by outbox id, not sent again.
      const reconciled = await app.prisma.emailOutbox.count({ where: { tenantId: tenant.id, attempts: { gt: 1 } } });
      expect(reconciled).toBeGreaterThanOrEqual(acceptedBeforeKill);
    } finally {
      await second.stop('SIGKILL');
    }
  }, 360_000);
});
