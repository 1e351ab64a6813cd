import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBulkJobs } from '../server/src/services/licenses/bulk.js';
import { MAX_IMPORT_ROWS } from '../server/src/services/licenses/import.js';
import { createLicense } from '../server/src/services/licenses/management.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { adminContext, seedTwoTenants, type SeededTenant } from './support/tenants.js';

// Importing licenses from CSV through GraphQL, the job run by the bulk job runner as a worker runs
// it: the dry run's every error by line and column, the import (audited and emitted like single creates, provided
// keys hashed, generated keys downloadable once), a re-run of the same file creating nothing, and a job that dies
// midway resumed without a duplicate.

const clock = new TestClock(Date.parse('2026-06-01T08:00:00.000Z'));
let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;

type Auth = { token?: string; apiKey?: string };
const ok = (query: string, variables: Record<string, unknown> = {}, auth: Auth = { token: A.admin.token }) => t.gqlData(query, variables, auth);
const REPORT = 'rows valid alreadyImported errorCount errors { line column message }';
const JOB = 'id total done created skipped failed finished keysToDownload failures { line error }';
const CHECK = `mutation($input: CheckLicenseImportInput!) { checkLicenseImport(input: $input) { report { ${REPORT} } } }`;
const START = `mutation($input: StartLicenseImportInput!) { startLicenseImport(input: $input) { job { ${JOB} } report { ${REPORT} } } }`;
const TAKE = 'mutation($input: TakeLicenseImportKeysInput!) { takeLicenseImportKeys(input: $input) { csv keys } }';
const check = async (csv: string, auth?: Auth) => (await ok(CHECK, { input: { csv } }, auth)).checkLicenseImport.report;
const start = async (csv: string) => (await ok(START, { input: { csv } })).startLicenseImport;
const jobQuery = async (id: string, auth?: Auth) => (await ok(`query($id: ID!) { licenseImportJob(id: $id) { ${JOB} } }`, { id }, auth)).licenseImportJob;
const work = (failpoint?: (jobId: string, item: string) => void) => runBulkJobs({ db: t.deps.db, now: clock.now(), failpoint });
const validate = async (licenseKey: string) => (await t.post('/api/v1/validate', { licenseKey })).json;
const licensesOf = (productId: string) => t.prisma.license.findMany({ where: { productId }, orderBy: { createdAt: 'asc' } });

beforeAll(async () => {
  t = await startTestApp({ clock, env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  ({ A, B } = await seedTwoTenants(t));
  // A subscribed endpoint: creations then write their webhook event (nothing is delivered here).
  await ok('mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { endpoint { id } } }', { input: { url: 'http://127.0.0.1:9/hooks' } });
});
afterAll(() => t.close());

describe('license import: dry run', () => {
  it('reports every bad cell by line and column, with a summary; read-only members cannot check, nothing is created', async () => {
    await t.seedProduct(A.tenantId, 'Dry Studio');
    const before = await t.prisma.license.count({ where: { tenantId: A.tenantId } });
    const csv = [
      'product,key,customer_email,seats,expires_at,features,custom.plan,notes,is_trial',
      'Dry Studio,,ok@dry.test,3,2027-01-31,"pro;sync",pro,moved from Acme Licensing,false',
      'Nope Studio,ACME-XXXX,not-an-email,0,31/01/2027,,,,maybe',
      'Dry Studio,,"multi',
      'line@dry.test",abc,,,,,',
      'Dry Studio,GLBX-AAAA-BBBB-CCCC-DDDD,,2,2027-13-45T00:00:00Z,"[1,2]",,,',
      'Dry Studio,,,2',
      ',ACME-2345-6789-ABCD-EFGH,,1,,,,,',
      ',acme-2345-6789-abcd-efgh,,1,,,,,',
    ].join('\r\n');
    const report = await check(csv);
    expect(report).toMatchObject({ rows: 7, valid: 1, alreadyImported: 0 });
    expect(report.errors).toEqual([
      { line: 3, column: 'product', message: 'no product named "Nope Studio"' },
      { line: 3, column: 'key', message: expect.stringMatching(/^must be a license key like ACME-/) },
      { line: 3, column: 'customer_email', message: expect.stringMatching(/email/i) },
      { line: 3, column: 'seats', message: expect.stringMatching(/1/) },
      { line: 3, column: 'expires_at', message: expect.stringMatching(/ISO 8601/) },
      { line: 3, column: 'is_trial', message: 'must be true or false' },
      // A quoted cell spanning lines 4–5: the row is reported at the line it starts on.
      { line: 4, column: 'customer_email', message: expect.stringMatching(/email/i) },
      { line: 4, column: 'seats', message: 'must be a whole number' },
      { line: 6, column: 'key', message: 'must start with your key prefix ACME-' },
      { line: 6, column: 'expires_at', message: 'is not a real date' },
      { line: 6, column: 'features', message: expect.stringMatching(/JSON array of strings/) },
      { line: 7, column: null, message: 'has 4 cells; the header has 9' },
      { line: 8, column: 'product', message: 'is required (a product name or id)' },
      { line: 9, column: 'product', message: 'is required (a product name or id)' },
      // The same key in another spelling (case) is the same key.
      { line: 9, column: 'key', message: 'is the same key as line 8' },
    ]);
    expect(report.errorCount).toBe(report.errors.length);

    const header = await check('product,seats,custmer_email,seats\nDry Studio,1,,1');
    expect(header.errors).toEqual([
      { line: 1, column: 'custmer_email', message: expect.stringMatching(/^is not a column an import knows/) },
      { line: 1, column: 'seats', message: 'appears twice in the header' },
      { line: 1, column: 'seats', message: 'sets the same field as seats' },
    ]);
    expect((await check('product,seats\n"Dry Studio,1')).errors).toEqual([{ line: 2, column: null, message: expect.stringMatching(/^the file is not valid CSV/) }]);
    expect((await check('')).errors[0].message).toMatch(/empty/);
    const tooMany = `product,seats\n${'Dry Studio,1\n'.repeat(MAX_IMPORT_ROWS + 1)}`;
    expect((await check(tooMany)).errors).toEqual([{ line: MAX_IMPORT_ROWS + 2, column: null, message: expect.stringMatching(/at most 2000/) }]);
    const huge = await t.gql(CHECK, { input: { csv: `product,seats\n${'x'.repeat(210_000)}` } }, { token: A.admin.token });
    expect(huge.status).toBe(200);
    expect(huge.errors?.[0].extensions?.code).toBe('InvalidRequest');

    const refused = await t.gql(CHECK, { input: { csv } }, { token: A.readOnly.token });
    expect(refused.errors?.[0].extensions?.code).toBe('Forbidden');
    const withErrors = await t.gql(START, { input: { csv } }, { token: A.admin.token });
    expect(withErrors.errors?.[0]).toMatchObject({ message: expect.stringMatching(/has 15 errors/), extensions: { code: 'InvalidRequest' } });
    expect(await t.prisma.license.count({ where: { tenantId: A.tenantId } })).toBe(before);
  });
  it('a key retired by a reissue, still in its overlap, is taken: the dry run reports it, and a create with it is Conflict', async () => {
    const product = await t.seedProduct(A.tenantId, 'Retired Studio');
    const { key: oldKey, license } = await t.seedLicense(A.tenantId, product.id);
    const reissued = await ok('mutation($input: ReissueLicenseKeyInput!) { reissueLicenseKey(input: $input) { key } }', { input: { id: license.id, overlapHours: 24 } });
    expect(reissued.reissueLicenseKey.key).not.toBe(oldKey);
    const report = await check(['product,key,seats', `Retired Studio,${oldKey},1`].join('\r\n'));
    expect(report).toMatchObject({ rows: 1, valid: 0, errorCount: 1, errors: [{ line: 2, column: 'key', message: 'cannot be used; leave it empty to generate a new key' }] });
    await expect(t.seedLicense(A.tenantId, product.id)).resolves.toBeTruthy(); // generated keys are unaffected
    const direct = createLicense(adminContext(t, A), { productId: product.id, maxActivations: 1 }, { key: oldKey });
    await expect(direct).rejects.toMatchObject({ code: 'Conflict' });
    expect((await validate(oldKey)).isValid).toBe(true); // the old key still answers for its own license
  });
});

describe('license import: the job', () => {
  it('creates each license like a single create (audited, emitted), provided keys hashed, generated keys downloadable once; a re-run creates nothing', async () => {
    const product = await t.seedProduct(A.tenantId, 'Imported Studio');
    const providedKey = 'ACME-MGRT-2345-6789-WXYZ';
    const csv = [
      'product,key,customer_email,max_activations,expires_at,features,custom_fields,custom.region,notes,floating_seats',
      `Imported Studio,${providedKey},a@imported.test,3,2027-01-31,"[""pro"",""sync""]","{""plan"":""pro""}",eu,VIP since 2019,`,
      `${product.id},,b@imported.test,1,,export,,,,2`,
      'imported studio,,,5,2027-06-01T12:00:00,,,us,,',
    ].join('\n');
    expect(await check(csv)).toMatchObject({ rows: 3, valid: 3, alreadyImported: 0, errorCount: 0, errors: [] });
    const { job } = await start(csv);
    expect(job).toMatchObject({ total: 3, done: 0, finished: false });

    expect(await work()).toEqual({ jobs: 1, done: 3, failed: 0 });
    const finished = await jobQuery(job.id);
    expect(finished).toMatchObject({ total: 3, done: 3, created: 3, skipped: 0, failed: 0, finished: true, keysToDownload: 2, failures: [] });

    const licenses = await licensesOf(product.id);
    expect(licenses).toHaveLength(3);
    const [first, second, third] = licenses.sort((a, b) => (a.customerEmail ?? 'z').localeCompare(b.customerEmail ?? 'z'));
    expect(first).toMatchObject({ maxActivations: 3, features: ['pro', 'sync'], customFields: { plan: 'pro', region: 'eu' }, expiresAt: new Date('2027-01-31T00:00:00Z'), floatingSeats: null });
    expect(second).toMatchObject({ maxActivations: 1, features: ['export'], customFields: null, expiresAt: null, floatingSeats: 2 });
    expect(third).toMatchObject({ maxActivations: 5, customFields: { region: 'us' }, expiresAt: new Date('2027-06-01T12:00:00Z') });
    // The provided key is stored as its digest like any key, and validates.
    expect(first.keyDigest).toBe(t.deps.secrets.digest(providedKey));
    expect(first.keyHint).toBe('ACME-…-WXYZ');
    expect(await validate(providedKey)).toMatchObject({ isValid: true, productName: 'Imported Studio' });

    const ids = licenses.map((license) => license.id);
    const entries = await t.prisma.auditLogEntry.findMany({ where: { tenantId: A.tenantId, action: 'CreateLicense', entityId: { in: ids } } });
    expect(entries).toHaveLength(3);
    expect(entries.every((entry) => entry.actor === A.admin.email)).toBe(true);
    expect(entries.find((entry) => entry.entityId === first.id)!.details).toMatchObject({ notes: 'VIP since 2019', importedFrom: { line: 2 }, keyHint: 'ACME-…-WXYZ' });
    expect(JSON.stringify(entries)).not.toContain(providedKey);
    const events = (await t.prisma.webhookEvent.findMany({ where: { tenantId: A.tenantId, type: 'license.created' } })).filter((event) => ids.includes(JSON.parse(event.body).data.licenseId));
    expect(events).toHaveLength(3);

    // The generated keys, once: line, license id, key; each validates. The provided key is not in it.
    expect((await t.gql(TAKE, { input: { jobId: job.id } }, { token: B.admin.token })).errors?.[0].extensions?.code).toBe('NotFound');
    const taken = (await ok(TAKE, { input: { jobId: job.id } })).takeLicenseImportKeys;
    expect(taken.keys).toBe(2);
    const rows: { line: string; license_id: string; key: string }[] = parse(taken.csv, { columns: true });
    expect(rows.map((row) => [row.line, row.license_id])).toEqual([['3', second.id], ['4', third.id]]);
    for (const row of rows) expect(await validate(row.key)).toMatchObject({ isValid: true });
    expect(taken.csv).not.toContain(providedKey);
    // No key, provided or generated, in the process log.
    for (const key of [providedKey, ...rows.map((row) => row.key)]) expect(t.logs.join('')).not.toContain(key);
    const again = await t.gql(TAKE, { input: { jobId: job.id } }, { token: A.admin.token });
    expect(again.errors?.[0]).toMatchObject({ extensions: { code: 'Conflict' }, message: expect.stringMatching(/downloaded already/) });
    expect((await jobQuery(job.id)).keysToDownload).toBe(0);
    expect(await t.prisma.licenseImportRow.count({ where: { jobId: job.id, sealedKey: { not: null } } })).toBe(0);
    // Another company sees no such import.
    expect(await jobQuery(job.id, { token: B.admin.token })).toBeNull();

    // The same file again: the dry run says every row was imported (its provided key is not "taken"); the job skips them.
    expect(await check(csv)).toMatchObject({ rows: 3, valid: 3, alreadyImported: 3, errorCount: 0 });
    const rerun = (await start(csv)).job;
    await work();
    expect(await jobQuery(rerun.id)).toMatchObject({ total: 3, done: 3, created: 0, skipped: 3, failed: 0, finished: true, keysToDownload: 0 });
    expect(await licensesOf(product.id)).toHaveLength(3);
    // Another file with the same provided key: reported, not duplicated.
    const other = `product,key,seats\nImported Studio,${providedKey.toLowerCase()},1\n`;
    expect((await check(other)).errors).toEqual([{ line: 2, column: 'key', message: 'cannot be used; leave it empty to generate a new key' }]);
  });

  it('a job that dies midway is resumed by the next run: no row is created twice', async () => {
    const product = await t.seedProduct(A.tenantId, 'Resumed Studio');
    const rows = Array.from({ length: 12 }, (_, i) => `Resumed Studio,r${i}@resumed.test,1`);
    const csv = ['product,customer_email,seats', ...rows].join('\n');
    const { job } = await start(csv);
    let seen = 0;
    // The worker "dies" before its 8th row: the job stays unfinished, its 7 rows created and marked.
    expect(await work(() => {
      if (++seen === 8) throw new Error('worker killed');
    })).toEqual({ jobs: 1, done: 7, failed: 0 });
    expect(await jobQuery(job.id)).toMatchObject({ done: 7, created: 7, finished: false });
    // Even a row whose mark were lost is not created again: its line's idempotency record is there.
    await t.prisma.licenseImportRow.updateMany({ where: { jobId: job.id, line: 2 }, data: { status: 'pending' } });
    await t.prisma.bulkJob.update({ where: { id: job.id }, data: { done: { decrement: 1 } } });
    expect(await work()).toEqual({ jobs: 1, done: 6, failed: 0 });
    expect(await jobQuery(job.id)).toMatchObject({ total: 12, done: 12, created: 11, skipped: 1, failed: 0, finished: true });
    const licenses = await licensesOf(product.id);
    expect(licenses).toHaveLength(12);
    expect(new Set(licenses.map((license) => license.customerEmail)).size).toBe(12);
    expect(await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId, action: 'CreateLicense', entityId: { in: licenses.map((license) => license.id) } } })).toBe(12);
  });
});

describe('a key is issued once in the whole installation', () => {
  it("another company cannot revive a key ACME retired: BETA takes the prefix, imports the key, and is refused without learning where it lives", async () => {
    const PREFIX = `mutation($input: UpdateCompanySettingsInput!) { updateCompanySettings(input: $input) { company { keyPrefix } } }`;
    const acmeProduct = await t.seedProduct(A.tenantId, 'Revival App');
    const betaProduct = await t.seedProduct(B.tenantId, 'Revival App');
    const { key: K, license } = await t.seedLicense(A.tenantId, acmeProduct.id);
    expect((await validate(K)).isValid).toBe(true);
    // ACME reissues K without overlap (K stops at once) and changes its prefix.
    const reissued = (await ok('mutation($input: ReissueLicenseKeyInput!) { reissueLicenseKey(input: $input) { key previousKeyValidUntil } }', { input: { id: license.id, overlapHours: 0 } })).reissueLicenseKey;
    expect(reissued.previousKeyValidUntil).toBeNull();
    expect((await validate(K)).isValid).toBe(false);
    await ok(PREFIX, { input: { keyPrefix: 'ACMX' } });
    try {
      // BETA takes the prefix "ACME" and imports K.
      await ok(PREFIX, { input: { keyPrefix: 'ACME' } }, { token: B.admin.token });
      const csv = `product,key,seats\nRevival App,${K},1\nRevival App,${reissued.key},1\n`;
      const report = await check(csv, { token: B.admin.token });
      // K (retired at ACME) and ACME's live key: refused alike, in words that name no company and no existing license.
      expect(report).toMatchObject({ rows: 2, valid: 0, errorCount: 2 });
      expect(report.errors).toEqual([
        { line: 2, column: 'key', message: 'cannot be used; leave it empty to generate a new key' },
        { line: 3, column: 'key', message: 'cannot be used; leave it empty to generate a new key' },
      ]);
      const started = await t.gql(START, { input: { csv } }, { token: B.admin.token });
      expect(started.errors?.[0].extensions?.code).toBe('InvalidRequest');
      // A create with the key (the import's own path, past its dry run) is refused with the same words.
      for (const key of [K, reissued.key]) {
        const direct = createLicense(adminContext(t, B), { productId: betaProduct.id, maxActivations: 1 }, { key });
        await expect(direct).rejects.toMatchObject({ code: 'Conflict', message: 'This key cannot be used; generate a new one.' });
      }
      for (const text of [JSON.stringify(report), JSON.stringify(started)]) expect(text).not.toMatch(/exist|another|other company|ACME Corp|acme/i);
      // The database itself refuses the digest, whichever statement writes it.
      const digest = t.deps.secrets.digest(K);
      await expect(
        t.prisma.$executeRaw`INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, created_at, updated_at)
          VALUES (gen_random_uuid(), ${B.tenantId}::uuid, ${betaProduct.id}::uuid, ${digest}, 'ACME-…-XXXX', 1, now(), now())`,
      ).rejects.toThrow(/license_key_digests_pkey|unique/i);
      // K does not validate, for BETA or anyone; BETA has no license of that product.
      expect((await validate(K)).isValid).toBe(false);
      expect(await t.prisma.license.count({ where: { tenantId: B.tenantId, productId: betaProduct.id } })).toBe(0);
      // The app role cannot forget a digest either.
      await expect(t.prisma.$executeRaw`DELETE FROM license_key_digests WHERE key_digest = ${digest}`).rejects.toThrow(/permission denied/);
    } finally {
      await ok(PREFIX, { input: { keyPrefix: 'GLBX' } }, { token: B.admin.token });
      await ok(PREFIX, { input: { keyPrefix: 'ACME' } });
    }
  });
});
