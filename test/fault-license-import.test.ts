import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startLicenseImport } from '../server/src/services/licenses/import.js';
import { NO_META, type Actor } from '../server/src/services/auth/actor.js';
import { startTestApp, TestClock, type TestApp } from './support/harness.js';
import { startWorkerProcess, stopAllProcesses } from './support/processes.js';
import { seedTwoTenants, type SeededTenant } from './support/tenants.js';
import { waitUntil } from './support/wait.js';

// A `pnpm worker` killed (SIGKILL) in the middle of a CSV import, on real PostgreSQL (as test/fault-bulk-job.test.ts
// does for a bulk action): another worker takes the job over once its lease lapses and finishes it; every row is
// one license, with exactly one activity entry and one webhook event, and every generated key is kept for download.

const ROWS = 300;
let t: TestApp;
let A: SeededTenant;

beforeAll(async () => {
  t = await startTestApp({ clock: TestClock.startingNow(), env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  ({ A } = await seedTwoTenants(t, { catalog: false }));
}, 120_000);
afterEach(() => stopAllProcesses());
afterAll(async () => {
  await stopAllProcesses();
  await t?.close();
});

const startWorker = () =>
  startWorkerProcess({ DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, PUBLIC_URL: t.config.publicUrl, LOG_LEVEL: 'info', WEBHOOK_ALLOW_PRIVATE: 'true' });
const runSoon = () => t.deps.db.sql.query(`UPDATE agenda.agenda_jobs SET next_run_at = now() WHERE name = 'bulk-license-jobs' AND type = 'single'`, []);
const progress = async (id: string) => t.prisma.bulkJob.findUniqueOrThrow({ where: { id } });

describe('a worker killed during a license import', () => {
  it('another worker finishes it after the lease lapses: every row created, audited and emitted exactly once', async () => {
    const product = await t.seedProduct(A.tenantId, 'Killed Import');
    await t.gql('mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } } }', { input: { url: 'http://127.0.0.1:9/hooks' } }, { token: A.admin.token });
    const csv = ['product,customer_email,seats', ...Array.from({ length: ROWS }, (_, i) => `Killed Import,k${i}@killed.test,1`)].join('\n');
    const actor: Actor = { kind: 'user', userId: A.admin.userId, tenantId: A.tenantId, role: 'CompanyAdmin', email: A.admin.email, sessionFamilyId: null };
    const first = await startWorker();
    const { job } = await startLicenseImport({ db: t.deps.db, secrets: t.deps.secrets, now: new Date(), actor, meta: NO_META }, csv);
    expect(job.total).toBe(ROWS);
    await runSoon();
    await waitUntil(async () => (await progress(job.id)).done >= 20, { timeout: 120_000, interval: 20, what: 'the first worker to be midway' });
    await first.stop('SIGKILL');
    const midway = await progress(job.id);
    expect(midway.finishedAt).toBeNull();
    expect(midway.done).toBeLessThan(ROWS);

    const second = await startWorker();
    try {
      await waitUntil(
        async () => {
          await runSoon();
          return (await progress(job.id)).finishedAt !== null;
        },
        { timeout: 240_000, interval: 5_000, what: 'the second worker to finish the import' },
      );
    } finally {
      await second.stop('SIGKILL');
    }
    expect(await progress(job.id)).toMatchObject({ total: ROWS, done: ROWS, failed: 0 });
    const licenses = await t.prisma.license.findMany({ where: { productId: product.id }, select: { id: true, customerEmail: true } });
    expect(licenses).toHaveLength(ROWS);
    expect(new Set(licenses.map((license) => license.customerEmail)).size).toBe(ROWS);
    const ids = licenses.map((license) => license.id);
    const entries = await t.prisma.auditLogEntry.groupBy({ by: ['entityId'], where: { tenantId: A.tenantId, action: 'CreateLicense', entityId: { in: ids } }, _count: true });
    expect(entries).toHaveLength(ROWS);
    expect(entries.every((entry) => entry._count === 1)).toBe(true);
    const events = await t.prisma.webhookEvent.findMany({ where: { tenantId: A.tenantId, type: 'license.created' }, select: { body: true } });
    expect(new Set(events.map((event) => JSON.parse(event.body).data.licenseId as string))).toEqual(new Set(ids));
    expect(events).toHaveLength(ROWS);
    // Every generated key is there to download, once.
    expect(await t.prisma.licenseImportRow.count({ where: { jobId: job.id, status: 'created', sealedKey: { not: null } } })).toBe(ROWS);
  }, 600_000);
});
