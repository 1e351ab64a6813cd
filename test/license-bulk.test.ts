import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBulkJobs } from '../server/src/services/licenses/bulk.js';
import { COUNT_CAP, SEARCH_COUNT_CAP } from '../server/src/services/listing.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { seedTwoTenants, type SeededTenant } from './support/tenants.js';

// Bulk license actions through GraphQL, run by the bulk job's service function as a worker runs
// it: the confirmation's count, every change audited and emitted as a single one, the failures with their reason,
// tenant scoping, and a job interrupted midway finishing without changing any license twice.

const clock = new TestClock(Date.parse('2026-06-01T08:00:00.000Z'));
let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;

type Auth = { token?: string; apiKey?: string };
const ok = (query: string, variables: Record<string, unknown> = {}, auth: Auth = { token: A.admin.token }) => t.gqlData(query, variables, auth);
const COUNT = 'query($selection: BulkLicenseSelection!) { bulkSelectionCount(selection: $selection) }';
const JOB = 'id action total done failed finished failures { licenseId keyHint error }';
const START = `mutation($input: StartBulkLicenseActionInput!) { startBulkLicenseAction(input: $input) { job { ${JOB} } } }`;
const jobQuery = async (id: string) => (await ok(`query($id: ID!) { bulkJob(id: $id) { ${JOB} } }`, { id })).bulkJob;
const start = async (input: Record<string, unknown>) => (await ok(START, { input })).startBulkLicenseAction.job;
const work = (failpoint?: (jobId: string, licenseId: string) => void) => runBulkJobs({ db: t.deps.db, now: clock.now(), failpoint });

/** Licenses of a fresh product of tenant A (so each test selects its own). */
async function seedLicenses(name: string, count: number, attributes: Record<string, unknown> = {}) {
  const product = await t.seedProduct(A.tenantId, name);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await t.seedLicense(A.tenantId, product.id, { customerEmail: `c${i}@${name.toLowerCase()}.test`, ...attributes })).license.id);
  return { productId: product.id, ids };
}
const entries = (action: string, ids: string[]) => t.prisma.auditLogEntry.findMany({ where: { tenantId: A.tenantId, action: action as never, entityId: { in: ids } } });
const events = (type: string, ids: string[]) =>
  t.prisma.webhookEvent.findMany({ where: { tenantId: A.tenantId, type } }).then((rows) => rows.filter((row) => ids.includes(JSON.parse(row.body).data.licenseId)));

beforeAll(async () => {
  t = await startTestApp({ clock, env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  ({ A, B } = await seedTwoTenants(t));
  // A subscribed endpoint: lifecycle changes then write their webhook event (nothing is delivered here).
  await ok('mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } } }', { input: { url: 'http://127.0.0.1:9/hooks' } });
});
afterAll(() => t.close());

describe('bulk license actions', () => {
  it('counts a selection for the confirmation, in the caller company only; read-only members count but cannot start', async () => {
    const { productId, ids } = await seedLicenses('Counted', 3);
    expect((await ok(COUNT, { selection: { filter: { productId } } })).bulkSelectionCount).toBe(3);
    expect((await ok(COUNT, { selection: { licenseIds: [ids[0], ids[1], B.licenses[0].id, 'nope'] } })).bulkSelectionCount).toBe(2);
    expect((await ok(COUNT, { selection: { filter: { productId, search: 'c1@' } } }, { token: A.readOnly.token })).bulkSelectionCount).toBe(1);

    const refused = await t.gql(START, { input: { action: 'SUSPEND', licenseIds: ids } }, { token: A.readOnly.token });
    expect(refused.errors?.[0].extensions?.code).toBe('Forbidden');
    const both = await t.gql(START, { input: { action: 'SUSPEND', licenseIds: ids, filter: { productId } } }, { token: A.admin.token });
    expect(both.errors?.[0].extensions?.code).toBe('InvalidRequest');
    // Another company's licenses are not part of a selection: it matches nothing here.
    const foreign = await t.gql(START, { input: { action: 'REVOKE', licenseIds: B.licenses.map((license) => license.id) } }, { token: A.admin.token });
    expect(foreign.errors?.[0].extensions?.code).toBe('InvalidRequest');
    expect(await t.prisma.license.count({ where: { tenantId: B.tenantId, status: 'revoked' } })).toBe(0);
    const noEmail = await t.gql(START, { input: { action: 'TRANSFER', licenseIds: ids } }, { token: A.admin.token });
    expect(noEmail.errors?.[0].extensions?.fields).toHaveProperty('customerEmail');
    const pastRenewal = await t.gql(START, { input: { action: 'RENEW', licenseIds: ids, expiresAt: new Date(clock.now().getTime() - DAY).toISOString() } }, { token: A.admin.token });
    expect(pastRenewal.errors?.[0].extensions?.fields).toHaveProperty('expiresAt');
    // Another company's job is not visible.
    const job = await start({ action: 'SUSPEND', licenseIds: [ids[0]] });
    expect((await t.gql('query($id: ID!) { bulkJob(id: $id) { id } }', { id: job.id }, { token: B.admin.token })).data.bulkJob).toBeNull();
    await work();
  });

  it('bulkSelectionTotal counts exactly up to 10,000 (a search up to 1,000) and says "more than" from one license past it', async () => {
    const product = await t.seedProduct(A.tenantId, 'Capped');
    const total = async (filter: Record<string, unknown>) => (await ok(`query($selection: BulkLicenseSelection!) { bulkSelectionTotal(selection: $selection) { totalCount totalCountCapped } }`, { selection: { filter } })).bulkSelectionTotal;
    // COUNT_CAP - 1 licenses at capped.test (every 3rd revoked), written in one statement.
    const insert = (from: number, count: number) => t.prisma.$executeRawUnsafe(
      `INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, status, revoked_at, customer_email, created_at, updated_at)
       SELECT gen_random_uuid(), $1::uuid, $2::uuid, md5(random()::text || n), 'CAP-…-' || n, 1, CASE WHEN n % 3 = 0 THEN 'revoked' ELSE 'active' END::license_status,
              CASE WHEN n % 3 = 0 THEN now() END, 'c' || n || '@capped.test', now(), now()
         FROM generate_series($3::int, $3::int + $4::int - 1) AS n`,
      A.tenantId, product.id, from, count);
    await insert(1, COUNT_CAP - 1);
    const revoked = Math.floor((COUNT_CAP - 1) / 3);
    expect(await total({ productId: product.id })).toEqual({ totalCount: COUNT_CAP - 1, totalCountCapped: false });
    // A search counts up to SEARCH_COUNT_CAP, as the license list does.
    expect(await total({ productId: product.id, search: 'capped.test', status: 'REVOKED' })).toEqual({ totalCount: SEARCH_COUNT_CAP, totalCountCapped: true });
    expect(revoked).toBeGreaterThan(SEARCH_COUNT_CAP);
    await insert(COUNT_CAP, 1);
    expect(await total({ productId: product.id })).toEqual({ totalCount: COUNT_CAP, totalCountCapped: false });
    expect(await total({ search: 'CAP-…-' })).toEqual({ totalCount: SEARCH_COUNT_CAP, totalCountCapped: true });
    await insert(COUNT_CAP + 1, 1);
    expect(await total({ productId: product.id })).toEqual({ totalCount: COUNT_CAP, totalCountCapped: true });
    expect(await total({ search: 'capped.test' })).toEqual({ totalCount: SEARCH_COUNT_CAP, totalCountCapped: true });
    expect(await total({ productId: product.id, search: 'c12' })).toEqual({ totalCount: 1 + 10 + 100, totalCountCapped: false }); // c12, c12x, c12xx
    expect(await total({ productId: product.id, search: 'c1' })).toEqual({ totalCount: SEARCH_COUNT_CAP, totalCountCapped: true }); // c1, c1x, c1xx, c1xxx, c10000–c10001: 1,113
    // The exact count goes on past the cap; a selection by ids is always exact.
    expect((await ok(COUNT, { selection: { filter: { productId: product.id } } })).bulkSelectionCount).toBe(COUNT_CAP + 1);
    expect((await ok(COUNT, { selection: { filter: { search: 'capped.test', status: 'ACTIVE' } } })).bulkSelectionCount).toBe(COUNT_CAP + 1 - Math.floor((COUNT_CAP + 1) / 3));
  });

  it('suspends every license matching a filter in the background: each audited and emitted exactly like a single suspension', async () => {
    const { productId, ids } = await seedLicenses('Suspended', 5);
    const [single, ...rest] = ids;
    await ok('mutation($input: SuspendLicenseInput!) { suspendLicense(input: $input) { license { id } } }', { input: { id: single } });
    await ok('mutation($input: ReinstateLicenseInput!) { reinstateLicense(input: $input) { license { id } } }', { input: { id: single } });
    const [singleEntry] = await entries('SuspendLicense', [single]);

    const job = await start({ action: 'SUSPEND', filter: { productId, status: 'ACTIVE' } });
    expect(job).toMatchObject({ action: 'SUSPEND', total: 5, done: 0, failed: 0, finished: false });
    expect(await t.prisma.license.count({ where: { id: { in: ids }, status: 'suspended' } })).toBe(0);
    expect(await work()).toMatchObject({ jobs: 1, done: 5, failed: 0 });
    expect(await jobQuery(job.id)).toMatchObject({ total: 5, done: 5, failed: 0, finished: true, failures: [] });
    expect(await t.prisma.license.count({ where: { id: { in: ids }, status: 'suspended' } })).toBe(5);

    const bulkEntries = await entries('SuspendLicense', rest);
    expect(bulkEntries).toHaveLength(4);
    const shape = ({ action, entityType, actorId, actor, details }: (typeof bulkEntries)[number]) => ({ action, entityType, actorId, actor, details });
    for (const entry of bulkEntries) expect(shape(entry)).toEqual(shape(singleEntry));
    expect(await events('license.suspended', rest)).toHaveLength(4);
  });

  it('renews and transfers a selection; a license the action cannot change is a failure with its reason', async () => {
    const expiring = await seedLicenses('Renewed', 3, { expiresAt: new Date(clock.now().getTime() + 10 * DAY) });
    const perpetual = await t.seedLicense(A.tenantId, expiring.productId, { customerEmail: 'forever@renewed.test' });
    const expiresAt = new Date(clock.now().getTime() + 400 * DAY).toISOString();
    const job = await start({ action: 'RENEW', licenseIds: [...expiring.ids, perpetual.license.id], expiresAt });
    await work();
    const finished = await jobQuery(job.id);
    expect(finished).toMatchObject({ total: 4, done: 3, failed: 1, finished: true });
    expect(finished.failures).toEqual([{ licenseId: perpetual.license.id, keyHint: perpetual.license.keyHint, error: expect.stringContaining('perpetual') }]);
    const renewed = await t.prisma.license.findMany({ where: { id: { in: expiring.ids } } });
    expect(renewed.map((license) => license.expiresAt?.toISOString())).toEqual([expiresAt, expiresAt, expiresAt]);
    expect(await events('license.renewed', expiring.ids)).toHaveLength(3);

    const transfer = await start({ action: 'TRANSFER', filter: { productId: expiring.productId }, customerEmail: 'new-owner@example.test' });
    await work();
    expect(await jobQuery(transfer.id)).toMatchObject({ total: 4, done: 4, failed: 0 });
    expect(await t.prisma.license.count({ where: { productId: expiring.productId, customerEmail: 'new-owner@example.test' } })).toBe(4);
    expect(await entries('TransferLicense', [...expiring.ids, perpetual.license.id])).toHaveLength(4);
  });

  it('an interrupted job finishes on the next run, and no license is changed, audited or emitted twice', async () => {
    const { productId, ids } = await seedLicenses('Interrupted', 12);
    const job = await start({ action: 'REVOKE', filter: { productId } });
    let seen = 0;
    // The worker "dies" before its 8th license: the job stays unfinished, its done items recorded.
    expect(await work(() => {
      if (++seen === 8) throw new Error('worker killed');
    })).toEqual({ jobs: 1, done: 7, failed: 0 });
    expect(await jobQuery(job.id)).toMatchObject({ done: 7, finished: false });
    // A change that committed just before its worker died, its item not yet marked: the resumed job meets it again.
    const committedButUnmarked = (await t.prisma.bulkJobItem.findMany({ where: { jobId: job.id, status: 'done' }, take: 3 })).map((item) => item.licenseId);
    await t.prisma.bulkJobItem.updateMany({ where: { jobId: job.id, licenseId: { in: committedButUnmarked } }, data: { status: 'pending' } });

    expect(await work()).toMatchObject({ jobs: 1, done: 8 });
    expect(await t.prisma.license.count({ where: { id: { in: ids }, status: 'revoked' } })).toBe(12);
    expect(await entries('RevokeLicense', ids)).toHaveLength(12);
    expect(await events('license.revoked', ids)).toHaveLength(12);
    expect(await work()).toEqual({ jobs: 0, done: 0, failed: 0 });
  });

  it('a requester who lost the admin role changes nothing more', async () => {
    const { ids } = await seedLicenses('Demoted', 2);
    const job = await start({ action: 'SUSPEND', licenseIds: ids });
    const demoted = await t.gql('mutation($input: StartBulkLicenseActionInput!) { startBulkLicenseAction(input: $input) { job { id } } }', { input: { action: 'SUSPEND', licenseIds: ids } }, { apiKey: A.adminKey.key });
    await t.prisma.apiKey.update({ where: { id: A.adminKey.id }, data: { revokedAt: clock.now() } });
    await work();
    expect(await jobQuery(job.id)).toMatchObject({ done: 2, failed: 0 });
    // The key's job ran after its key was revoked: every license failed, none changed by it.
    const keyJob = await jobQuery(demoted.data.startBulkLicenseAction.job.id);
    expect(keyJob).toMatchObject({ total: 2, done: 0, failed: 2 });
    expect(keyJob.failures[0].error).toMatch(/can no longer change licenses/);
  });
});
