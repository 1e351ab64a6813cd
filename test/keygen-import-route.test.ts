import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildKeygenAccount, keygenBundle } from './support/keygen-fixture.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { seedTwoTenants, type SeededTenant } from './support/tenants.js';

// POST /api/imports/keygen: the console's Keygen import. A bundle (a page a line) is imported into the caller's
// company only, as a dry run or for real; a read-only caller is refused before anything is read; a malformed bundle
// is a 400 naming its line, never a 5xx; a bundle larger than a management body (256 KiB) is taken.

let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;
const clock = TestClock.startingNow();
const account = buildKeygenAccount({ products: 1, policies: 2, licenses: 10, machines: 10, now: clock.now(), seed: 46 });
const bundle = keygenBundle(account, 3); // several pages per list

async function upload(body: string | Uint8Array<ArrayBuffer>, auth: Record<string, string>, query = '') {
  const response = await fetch(`${t.baseUrl}/api/imports/keygen${query}`, { method: 'POST', body, headers: { 'content-type': 'application/x-ndjson', ...auth } });
  const text = await response.text();
  return { status: response.status, json: JSON.parse(text) as { report?: Record<string, any>; error?: { code: string; message: string } } };
}
const importedKeys = async (tenantId: string) =>
  t.prisma.license.count({ where: { tenantId, product: { name: account.lists.products[0].attributes.name as string } } });

beforeAll(async () => {
  t = await startTestApp({ clock });
  ({ A, B } = await seedTwoTenants(t));
});
afterAll(() => t?.close());

describe('POST /api/imports/keygen', () => {
  it('a dry run reports and writes nothing; the import creates the licenses in the caller\'s company only; a second creates nothing', async () => {
    const asA = { authorization: `Bearer ${A.admin.token}` };
    const dry = await upload(bundle, asA, '?dryRun=true');
    expect(dry.status, JSON.stringify(dry.json)).toBe(200);
    expect(dry.json.report).toMatchObject({ dryRun: true, read: { products: 1, policies: 2, licenses: 10, machines: 10 }, licenses: { created: 10, changed: 0 } });
    expect(await importedKeys(A.tenantId)).toBe(0);
    expect(await t.prisma.keygenImportMapping.count({ where: { tenantId: A.tenantId } })).toBe(0);

    const real = await upload(bundle, asA, '?dryRun=false');
    expect(real.status, JSON.stringify(real.json)).toBe(200);
    expect(real.json.report).toMatchObject({ dryRun: false, licenses: { created: 10 }, activations: { created: expect.any(Number) } });
    expect(Array.isArray(real.json.report!.notes)).toBe(true);
    expect(await importedKeys(A.tenantId)).toBe(10);

    // Another company's admin (here through an API key with the role) importing the same account changes nothing in
    // this one: its import is its own company's (the keys, unique everywhere, are refused there).
    const before = await t.prisma.license.findMany({ where: { tenantId: A.tenantId }, select: { id: true, updatedAt: true }, orderBy: { id: 'asc' } });
    const viaKey = await upload(bundle, { 'x-api-key': B.adminKey.key }, '?dryRun=false');
    expect(viaKey.status).toBe(200);
    expect(viaKey.json.report).toMatchObject({ licenses: { created: 0, changed: 0, unchanged: 0 } });
    expect(await importedKeys(B.tenantId)).toBe(0);
    expect(await t.prisma.license.findMany({ where: { tenantId: A.tenantId }, select: { id: true, updatedAt: true }, orderBy: { id: 'asc' } })).toEqual(before);

    const again = await upload(bundle, asA);
    expect(again.json.report).toMatchObject({ licenses: { created: 0, changed: 0, unchanged: 10 } });
    expect(await importedKeys(A.tenantId)).toBe(10);
  });

  it('refuses a read-only member or key (403) and an anonymous caller (401)', async () => {
    for (const auth of [{ authorization: `Bearer ${A.readOnly.token}` }, { 'x-api-key': A.readOnlyKey.key }] as Record<string, string>[]) {
      const refused = await upload(bundle, auth);
      expect(refused.status).toBe(403);
      expect(refused.json.error?.code).toBe('Forbidden');
    }
    expect((await upload(bundle, {})).status).toBe(401);
    expect(await importedKeys(B.tenantId)).toBe(0);
  });

  it('a malformed bundle is a 400 that names the line; a bundle over 256 KiB is taken', async () => {
    const asB = { authorization: `Bearer ${B.admin.token}` };
    const cases: [string | Uint8Array<ArrayBuffer>, RegExp][] = [
      ['', /no page/],
      ['{"data": [', /^line 1: not JSON/],
      [`${bundle.split('\n')[0]}\n[1, 2]\n`, /^line 2: /],
      [new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), /not UTF-8/],
      ['{"errors": [{"title": "Unauthorized"}]}', /^line 1: .*error answer/],
    ];
    for (const [body, message] of cases) {
      const answer = await upload(body, asB);
      expect(answer.status, JSON.stringify(answer.json)).toBe(400);
      expect(answer.json.error?.message).toMatch(message);
    }
    expect((await upload(bundle, asB, '?dryRun=maybe')).status).toBe(400);
    expect(await importedKeys(B.tenantId)).toBe(0);

    const large = buildKeygenAccount({ products: 1, policies: 2, licenses: 400, machines: 200, now: clock.now(), seed: 7 });
    const big = keygenBundle(large, 100);
    expect(Buffer.byteLength(big)).toBeGreaterThan(256 * 1024);
    const answer = await upload(big, asB, '?dryRun=true');
    expect(answer.status, JSON.stringify(answer.json).slice(0, 300)).toBe(200);
    expect(answer.json.report).toMatchObject({ read: { licenses: 400 } });
  });
});
