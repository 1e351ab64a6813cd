import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPORT_COLUMNS, EXPORT_PAGE_SIZE } from '../server/src/services/licenses/export.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { hostileString, hostileValue } from './support/hostile.js';
import { runCli } from './support/processes.js';
import { seedTwoTenants, type SeededTenant } from './support/tenants.js';

// The license list as CSV: POST /api/licenses/export and `pnpm cli license:export`. The rows are
// the list's, with its filters, in the caller's company only; cells are RFC 4180 and formula-safe; the keyset walk
// neither skips nor repeats a row across pages (many licenses share a createdAt).

let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;

type Row = Record<(typeof EXPORT_COLUMNS)[number], string>;
async function exportCsv(filter: unknown, auth: Record<string, string> = { authorization: `Bearer ${A.admin.token}` }) {
  const response = await t.post('/api/licenses/export', filter === undefined ? undefined : JSON.stringify(filter), { ...auth, 'content-type': 'application/json' });
  return response;
}
async function exportRows(filter: unknown = {}) {
  const response = await exportCsv(filter);
  expect(response.status, response.text).toBe(200);
  const records = parse(response.text, { columns: true, relax_column_count: false }) as Row[];
  return records;
}

beforeAll(async () => {
  t = await startTestApp({ clock: TestClock.startingNow() });
  ({ A, B } = await seedTwoTenants(t));
});
afterAll(() => t.close());

describe('license export (CSV)', () => {
  it('exports the caller company\'s licenses with a header, never a key; any member may export; anonymous is refused', async () => {
    const response = await exportCsv({});
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toMatch(/^attachment; filename="licenses-\d{4}-\d\d-\d\d\.csv"$/);
    expect(response.text.split('\r\n')[0]).toBe(EXPORT_COLUMNS.join(','));
    const rows = parse(response.text, { columns: true }) as Row[];
    expect(rows.map((row) => row.id).sort()).toEqual(A.licenses.map((license) => license.id).sort());
    for (const { key } of [...A.licenses, ...B.licenses]) expect(response.text).not.toContain(key.slice(-9));
    expect(rows[0]).toMatchObject({ product: A.product!.name, status: 'active', max_activations: expect.stringMatching(/^\d+$/) });

    const viaReadOnlyKey = await exportCsv(undefined, { 'x-api-key': A.readOnlyKey.key });
    expect(viaReadOnlyKey.status).toBe(200);
    expect(viaReadOnlyKey.text).toBe(response.text);
    const globex = await exportCsv({}, { authorization: `Bearer ${B.admin.token}` });
    expect((parse(globex.text, { columns: true }) as Row[]).map((row) => row.id).sort()).toEqual(B.licenses.map((license) => license.id).sort());

    expect((await exportCsv({}, {})).status).toBe(401);
    expect((await exportCsv({}, { 'x-api-key': A.revokedKey.key })).status).toBe(401);
  });

  it('applies the list filters; a malformed filter is a 400, not a broken download', async () => {
    const [first, second] = A.licenses;
    await t.gql('mutation($input: SuspendLicenseInput!) { suspendLicense(input: $input) { license { id } } }', { input: { id: first.id } }, { token: A.admin.token });
    expect((await exportRows({ status: 'suspended' })).map((row) => row.id)).toEqual([first.id]);
    expect((await exportRows({ status: 'active' })).map((row) => row.id)).toEqual([second.id]);
    expect((await exportRows({ search: second.key })).map((row) => row.id)).toEqual([second.id]);
    expect((await exportRows({ search: 'two@acme' })).map((row) => row.customer_email)).toEqual(['two@acme.test']);
    expect(await exportRows({ productId: 'not-a-uuid' })).toEqual([]);
    for (const bad of [{ status: 'gone' }, { expiringWithinDays: -1 }, '[1]', 'not json', { search: 'x'.repeat(500) }]) {
      const response = await exportCsv(bad);
      expect(response.status, JSON.stringify(bad)).toBe(400);
      expect(response.json.error.code).toBe('InvalidRequest');
    }
    await t.gql('mutation($input: ReinstateLicenseInput!) { reinstateLicense(input: $input) { license { id } } }', { input: { id: first.id } }, { token: A.admin.token });
  });

  it('hostile request bodies: a 400 or a CSV, never a server error', async () => {
    const body = fc.oneof(
      hostileString,
      hostileValue.map((value) => JSON.stringify(value) ?? ''),
      fc.record({ productId: hostileValue, status: hostileValue, expiringWithinDays: hostileValue, search: hostileValue }, { requiredKeys: [] }).map((value) => JSON.stringify(value)),
    );
    await fc.assert(
      fc.asyncProperty(body, async (text) => {
        const response = await t.post('/api/licenses/export', text, { authorization: `Bearer ${A.admin.token}`, 'content-type': 'application/json' });
        expect([200, 400], response.text.slice(0, 200)).toContain(response.status);
        if (response.status === 200) expect(response.text.startsWith(`${EXPORT_COLUMNS.join(',')}\r\n`)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('hostile cells come back exactly (quotes, commas, line breaks) and formulas are neutralised', async () => {
    const csvText = fc.string({ unit: fc.constantFrom('=', '+', '-', '@', '"', ',', '\n', '\r', '\t', 'a', ' ', ';', "'", 'é'), minLength: 1, maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(csvText, csvText, async (name, value) => {
        const product = await t.prisma.product.create({ data: { tenantId: A.tenantId, name: `${name}${Math.random()}` } });
        const { license } = await t.seedLicense(A.tenantId, product.id, { customFields: { note: value }, features: [value.trim() || 'x'] });
        const rows = await exportRows({ productId: product.id });
        expect(rows).toHaveLength(1);
        const [row] = rows;
        expect(row.id).toBe(license.id);
        const formula = /^[=+\-@\t\r]/.test(product.name);
        expect(row.product).toBe(formula ? `'${product.name}` : product.name);
        expect(JSON.parse(row.custom_fields)).toEqual({ note: value });
        expect(JSON.parse(row.features)).toEqual(license.features);
        // No cell of the row starts a formula.
        for (const cell of Object.values(row)) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
      }),
      { numRuns: 40 },
    );
  });

  it('walks thousands of licenses sharing a createdAt across pages: every one once, newest first', async () => {
    const product = await t.seedProduct(A.tenantId, 'Bulk Product');
    const count = 2 * EXPORT_PAGE_SIZE + 345;
    await t.prisma.$executeRaw`
      INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, customer_email, created_at, updated_at)
      SELECT gen_random_uuid(), ${A.tenantId}::uuid, ${product.id}::uuid, md5('bulk-export-' || i), 'ACME-…-' || lpad(i::text, 4, '0'), 1,
             'c' || i || '@bulk.test', now() - ((i % 3) || ' seconds')::interval, now()
        FROM generate_series(1, ${count}) AS i`;
    const rows = await exportRows({ productId: product.id });
    expect(rows).toHaveLength(count);
    expect(new Set(rows.map((row) => row.id)).size).toBe(count);
    const order = rows.map((row) => [row.created_at, row.id].join(' '));
    expect(order).toEqual([...order].sort().reverse());
  });

  it('pnpm cli license:export writes the same CSV to a file, with the filters', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kf-export-'));
    try {
      const env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir };
      const out = path.join(dir, 'acme.csv');
      const result = runCli(['license:export', '--tenant', 'ACME', '--product', 'Bulk Product', '--out', out, '--json'], env);
      expect(result.status, result.stderr).toBe(0);
      expect(result.json).toEqual({ tenant: 'ACME', file: out, licenses: 2 * EXPORT_PAGE_SIZE + 345 });
      const viaHttp = (await exportCsv({ productId: (await t.prisma.product.findFirstOrThrow({ where: { tenantId: A.tenantId, name: 'Bulk Product' } })).id })).text;
      expect(readFileSync(out, 'utf8')).toBe(viaHttp);

      const suspended = runCli(['license:export', '--tenant', 'ACME', '--status', 'suspended', '--out', out, '--json'], env);
      expect(suspended.json.licenses).toBe(0);
      expect(readFileSync(out, 'utf8')).toBe(`${EXPORT_COLUMNS.join(',')}\r\n`);
      const bad = runCli(['license:export', '--tenant', 'ACME', '--status', 'gone', '--out', out, '--json'], env);
      expect(bad.status).toBe(1);
      expect(bad.json.error.code).toBe('InvalidRequest');
      // Refused before the file was opened: the previous export is still there.
      expect(readFileSync(out, 'utf8')).toBe(`${EXPORT_COLUMNS.join(',')}\r\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
