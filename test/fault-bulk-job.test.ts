import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startBulkLicenseAction } from '../server/src/services/licenses/bulk.js';
import { startLicenseImport } from '../server/src/services/licenses/import.js';
import { startTestApp, TestClock, type TestApp } from './support/harness.js';
import { startWorkerProcess, stopAllProcesses } from './support/processes.js';
import { adminContext, seedTwoTenants, type SeededTenant } from './support/tenants.js';
import { waitUntil } from './support/wait.js';

// A `pnpm worker` killed (SIGKILL) in the middle of a bulk job, on real PostgreSQL: another worker takes the job
// over once its lease lapses (production lease, about a minute) and finishes it; every license is revoked, with
// exactly one activity entry and one webhook event each. The same for a CSV import: every row one license.

const LICENSES = 300;
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
  startWorkerProcess({ DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, PUBLIC_URL: t.config.publicUrl, LOG_LEVEL: 'info',
    // Deliveries to the endpoint (nobody listens) are then retried later, not refused at once: 20 refusals would
    // disable it, and later changes would emit nothing.
    WEBHOOK_ALLOW_PRIVATE: 'true' });
const runSoon = () => t.deps.db.sql.query(`UPDATE agenda.agenda_jobs SET next_run_at = now() WHERE name = 'bulk-license-jobs' AND type = 'single'`, []);
const progress = async (id: string) => t.prisma.bulkJob.findUniqueOrThrow({ where: { id } });
// At the wall time: the workers that run the job are separate processes on the wall clock.
const asAdmin = () => ({ ...adminContext(t, A), now: new Date() });
const subscribe = () =>
  t.gql('mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } } }', { input: { url: 'http://127.0.0.1:9/hooks' } }, { token: A.admin.token });

/** Kills `first` (SIGKILL) once it is midway through the job; a second worker must finish it after the lease lapses. */
async function killMidwayAndFinish(first: Awaited<ReturnType<typeof startWorker>>, jobId: string) {
  await runSoon();
  await waitUntil(async () => (await progress(jobId)).done >= 20, { timeout: 120_000, interval: 20, what: 'the first worker to be midway' });
  await first.stop('SIGKILL');
  const midway = await progress(jobId);
  expect(midway.finishedAt).toBeNull();
  expect(midway.done).toBeLessThan(midway.total);
  const second = await startWorker();
  try {
    await waitUntil(
      async () => {
        await runSoon();
        return (await progress(jobId)).finishedAt !== null;
      },
      { timeout: 240_000, interval: 5_000, what: 'the second worker to finish the job' },
    );
  } finally {
    await second.stop('SIGKILL');
  }
}

describe('a worker killed during a bulk job', () => {
  it('another worker finishes it after the lease lapses: every license changed, audited and emitted exactly once', async () => {
    const product = await t.seedProduct(A.tenantId, 'Killed Studio');
    await subscribe();
    for (let i = 0; i < LICENSES; i++) await t.seedLicense(A.tenantId, product.id, { customerEmail: `k${i}@killed.test` });
    const first = await startWorker();
    const job = await startBulkLicenseAction(asAdmin(), { action: 'revoke', filter: { productId: product.id } });
    expect(job.total).toBe(LICENSES);
    await killMidwayAndFinish(first, job.id);
    expect(await progress(job.id)).toMatchObject({ total: LICENSES, done: LICENSES, failed: 0 });
    const ids = (await t.prisma.license.findMany({ where: { productId: product.id }, select: { id: true } })).map((row) => row.id);
    expect(await t.prisma.license.count({ where: { id: { in: ids }, status: 'revoked' } })).toBe(LICENSES);
    const entries = await t.prisma.auditLogEntry.groupBy({ by: ['entityId'], where: { tenantId: A.tenantId, action: 'RevokeLicense', entityId: { in: ids } }, _count: true });
    expect(entries).toHaveLength(LICENSES);
    expect(entries.every((entry) => entry._count === 1)).toBe(true);
    const events = await t.prisma.webhookEvent.findMany({ where: { tenantId: A.tenantId, type: 'license.revoked' }, select: { body: true } });
    const revokedIds = events.map((event) => JSON.parse(event.body).data.licenseId as string);
    expect(revokedIds).toHaveLength(LICENSES);
    expect(new Set(revokedIds).size).toBe(LICENSES);
  }, 600_000);

  it('a CSV import: every row created, audited and emitted exactly once, and every generated key kept for its download', async () => {
    const product = await t.seedProduct(A.tenantId, 'Killed Import');
    await subscribe();
    const csv = ['product,customer_email,seats', ...Array.from({ length: LICENSES }, (_, i) => `Killed Import,i${i}@killed.test,1`)].join('\n');
    const first = await startWorker();
    const { job } = await startLicenseImport(asAdmin(), csv);
    expect(job.total).toBe(LICENSES);
    await killMidwayAndFinish(first, job.id);
    expect(await progress(job.id)).toMatchObject({ total: LICENSES, done: LICENSES, failed: 0 });
    const licenses = await t.prisma.license.findMany({ where: { productId: product.id }, select: { id: true, customerEmail: true } });
    expect(licenses).toHaveLength(LICENSES);
    expect(new Set(licenses.map((license) => license.customerEmail)).size).toBe(LICENSES);
    const ids = licenses.map((license) => license.id);
    const entries = await t.prisma.auditLogEntry.groupBy({ by: ['entityId'], where: { tenantId: A.tenantId, action: 'CreateLicense', entityId: { in: ids } }, _count: true });
    expect(entries).toHaveLength(LICENSES);
    expect(entries.every((entry) => entry._count === 1)).toBe(true);
    const events = await t.prisma.webhookEvent.findMany({ where: { tenantId: A.tenantId, type: 'license.created' }, select: { body: true } });
    const createdIds = events.map((event) => JSON.parse(event.body).data.licenseId as string).filter((id) => ids.includes(id));
    expect(createdIds).toHaveLength(LICENSES);
    expect(new Set(createdIds).size).toBe(LICENSES);
    expect(await t.prisma.licenseImportRow.count({ where: { jobId: job.id, status: 'created', sealedKey: { not: null } } })).toBe(LICENSES);
  }, 600_000);
});
