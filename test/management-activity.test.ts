import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { seedTwoTenants } from './support/tenants.js';

// Activity log (docs/integrate/management-api.md "Activity log"): the GraphQL query, its filters and pagination, tenant isolation, the
// append-only table and the hash chain.

let t: TestApp;
const clock = new TestClock();
const IP = '198.51.100.23';
let A: { token: string; tenantId: string; userId: string };
let B: { token: string; tenantId: string };
let readOnly: string;
let readOnlyKey: string;
let adminKey: { key: string; id: string };
let revokedKey: string;

type Auth = { token?: string; apiKey?: string; ip?: string };
const ok = (query: string, variables: Record<string, unknown> = {}, auth: Auth = { token: A.token, ip: IP }) => t.gqlData(query, variables, auth);

const ENTRY = 'seq action entity entityType entityId user userId ip timestamp details';
const LOG = `query($filter: ActivityFilter, $first: Int, $after: String) {
  activityLog(filter: $filter, first: $first, after: $after) { totalCount pageInfo { endCursor hasNextPage } nodes { ${ENTRY} } } }`;
const INTEGRITY = '{ activityLogIntegrity { valid entries brokenAtSeq } }';
const log = async (filter: Record<string, unknown> = {}, page: Record<string, unknown> = {}, auth?: Auth) => (await ok(LOG, { filter, ...page }, auth)).activityLog;

beforeAll(async () => {
  t = await startTestApp({ clock });
  const seeded = await seedTwoTenants(t, { catalog: false });
  A = { token: seeded.A.admin.token, tenantId: seeded.A.tenantId, userId: seeded.A.admin.userId };
  B = { token: seeded.B.admin.token, tenantId: seeded.B.tenantId };
  readOnly = seeded.A.readOnly.token;
  readOnlyKey = seeded.A.readOnlyKey.key;
  adminKey = seeded.A.adminKey;
  revokedKey = seeded.A.revokedKey.key;
});
afterAll(() => t.close());

const at: Record<string, string> = {};
const ids: Record<string, string> = {};

/** Moves the clock a minute on, runs the step and remembers when it ran. */
async function step<T>(name: string, run: () => Promise<T>): Promise<T> {
  clock.advance(60_000);
  at[name] = clock.now().toISOString();
  return run();
}

describe('activity log entries', () => {
  it('records every product, license and activation event once, with action, entity, user, IP, UTC time and diff', async () => {
    const firstNew = (await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId } })) + 1;
    ids.alpha = (await step('createProduct', () => ok('mutation { createProduct(input: { name: "Alpha" }) { product { id } } }'))).createProduct.product.id;
    await step('updateProduct', () => ok(`mutation { updateProduct(input: { id: "${ids.alpha}", name: "Alpha Pro" }) { product { id } } }`));
    const created = (await step('createLicense', () => ok(`mutation { createLicense(input: { productId: "${ids.alpha}", maxActivations: 2, customerEmail: "c@customer.test" }) { key license { id keyHint } } }`))).createLicense;
    ids.license = created.license.id;
    const hint = created.license.keyHint as string;
    await step('updateLicense', () => ok(`mutation { updateLicense(input: { id: "${ids.license}", maxActivations: 3, features: ["sync"] }) { license { id } } }`));
    expect((await t.activate({ licenseKey: created.key, deviceId: 'dev-1', deviceName: 'Workstation' })).json.isValid).toBe(true);
    ids.activation = (await t.prisma.activation.findFirstOrThrow({ where: { licenseId: ids.license } })).id;
    await step('deactivateActivation', () => ok(`mutation { deactivateActivation(input: { id: "${ids.activation}" }) { license { id } } }`));
    await step('revokeLicense', () => ok(`mutation { revokeLicense(input: { id: "${ids.license}" }) { license { id } } }`));
    ids.beta = (await step('createProductByKey', () => ok('mutation { createProduct(input: { name: "Beta" }) { product { id } } }', {}, { apiKey: adminKey.key, ip: IP }))).createProduct.product.id;
    await step('deleteProduct', () => ok(`mutation { deleteProduct(input: { id: "${ids.beta}" }) { deletedProductId } }`, {}, { apiKey: adminKey.key, ip: IP }));

    const { nodes, totalCount } = await log({}, { first: 8 });
    expect(totalCount).toBe(firstNew + 7);
    const admin = { user: 'admin@acme.test', userId: A.userId, ip: IP };
    const key = { user: 'api-key automation (kf_…' + adminKey.key.slice(-4) + ')', userId: adminKey.id, ip: IP };
    expect(nodes).toEqual([
      { seq: firstNew + 7, action: 'DELETE_PRODUCT', entity: 'Beta', entityType: 'Product', entityId: ids.beta, ...key, timestamp: at.deleteProduct, details: { name: 'Beta', isBundle: false, bundleOf: [] } },
      { seq: firstNew + 6, action: 'CREATE_PRODUCT', entity: 'Beta', entityType: 'Product', entityId: ids.beta, ...key, timestamp: at.createProductByKey, details: { name: 'Beta', isBundle: false, bundleOf: [] } },
      { seq: firstNew + 5, action: 'REVOKE_LICENSE', entity: `${hint} (Alpha Pro)`, entityType: 'License', entityId: ids.license, ...admin, timestamp: at.revokeLicense, details: null },
      {
        seq: firstNew + 4, action: 'DEACTIVATE_ACTIVATION', entity: `Workstation on ${hint}`, entityType: 'Activation', entityId: ids.activation, ...admin, timestamp: at.deactivateActivation,
        details: { licenseId: ids.license, deviceId: 'dev-1', deviceName: 'Workstation' },
      },
      {
        seq: firstNew + 3, action: 'UPDATE_LICENSE', entity: `${hint} (Alpha Pro)`, entityType: 'License', entityId: ids.license, ...admin, timestamp: at.updateLicense,
        details: { before: { maxActivations: 2, features: [] }, after: { maxActivations: 3, features: ['sync'] } },
      },
      {
        seq: firstNew + 2, action: 'CREATE_LICENSE', entity: `${hint} (Alpha Pro)`, entityType: 'License', entityId: ids.license, ...admin, timestamp: at.createLicense,
        details: { productId: ids.alpha, productName: 'Alpha Pro', keyHint: hint, maxActivations: 2, customerEmail: 'c@customer.test' },
      },
      { seq: firstNew + 1, action: 'UPDATE_PRODUCT', entity: 'Alpha Pro', entityType: 'Product', entityId: ids.alpha, ...admin, timestamp: at.updateProduct, details: { before: { name: 'Alpha' }, after: { name: 'Alpha Pro' } } },
      { seq: firstNew, action: 'CREATE_PRODUCT', entity: 'Alpha', entityType: 'Product', entityId: ids.alpha, ...admin, timestamp: at.createProduct, details: { name: 'Alpha', isBundle: false, bundleOf: [] } },
    ]);
    expect(JSON.stringify(nodes)).not.toContain(created.key.slice(5));
    for (const node of nodes) expect(node.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('filters by action, user, user id, entity text, entity type and id, and date range', async () => {
    const actions = async (filter: Record<string, unknown>) => (await log(filter, { first: 100 })).nodes.map((n: { action: string }) => n.action);
    expect(await actions({ action: 'UPDATE_LICENSE' })).toEqual(['UPDATE_LICENSE']);
    expect(await actions({ user: 'API-KEY AUTOMATION' })).toEqual(['DELETE_PRODUCT', 'CREATE_PRODUCT']);
    expect(await actions({ userId: adminKey.id })).toEqual(['DELETE_PRODUCT', 'CREATE_PRODUCT']);
    expect(await actions({ entity: 'alpha pro' })).toEqual(['REVOKE_LICENSE', 'UPDATE_LICENSE', 'CREATE_LICENSE', 'UPDATE_PRODUCT']);
    expect(await actions({ entityType: 'License' })).toEqual(['REVOKE_LICENSE', 'UPDATE_LICENSE', 'CREATE_LICENSE']);
    expect(await actions({ entityId: ids.alpha })).toEqual(['UPDATE_PRODUCT', 'CREATE_PRODUCT']);
    expect(await actions({ from: at.updateProduct, to: at.updateLicense })).toEqual(['CREATE_LICENSE', 'UPDATE_PRODUCT']); // from inclusive, to exclusive
    expect(await actions({ action: 'CREATE_PRODUCT', user: 'admin@acme', from: at.createProduct })).toEqual(['CREATE_PRODUCT']);
    const setup = await log({ userId: A.userId, action: 'CREATE_USER' });
    expect(setup.nodes.map((n: { entity: string }) => n.entity)).toEqual(['admin@acme.test']); // the read-only member was made by the operator
    expect((await t.gql('{ activityLog(filter: { action: Nonsense }) { totalCount } }', {}, { token: A.token })).errors![0].message).toMatch(/Nonsense/);
  });

  it('pages newest first with an opaque cursor', async () => {
    const all = await log({}, { first: 100 });
    const seen: number[] = [];
    let after: string | null = null;
    for (let page = 0; page < 20; page++) {
      const result: { nodes: { seq: number }[]; pageInfo: { endCursor: string; hasNextPage: boolean }; totalCount: number } = await log({}, { first: 3, after });
      expect(result.totalCount).toBe(all.totalCount);
      seen.push(...result.nodes.map((node) => node.seq));
      if (!result.pageInfo.hasNextPage) break;
      after = result.pageInfo.endCursor;
    }
    expect(seen).toEqual(all.nodes.map((node: { seq: number }) => node.seq));
    expect(seen).toEqual([...seen].sort((x, y) => y - x));
    expect((await t.gql(LOG, { after: 'not-a-cursor' }, { token: A.token })).errors![0].extensions!.code).toBe('InvalidRequest');
    expect((await t.gql(LOG, { first: 101 }, { token: A.token })).errors![0].extensions!.code).toBe('InvalidRequest');
  });
});

describe('access', () => {
  it("tenant B sees only its own log and chain; A's entries stay out of reach", async () => {
    const mine = await log({}, { first: 100 }, { token: B.token });
    expect(mine.totalCount).toBe(await t.prisma.auditLogEntry.count({ where: { tenantId: B.tenantId } }));
    expect(mine.nodes.every((n: { user: string; entity: string }) => !JSON.stringify(n).includes('acme'))).toBe(true);
    expect((await log({ entityId: ids.license }, {}, { token: B.token })).totalCount).toBe(0);
    expect((await log({ userId: A.userId }, {}, { token: B.token })).totalCount).toBe(0);
    expect((await ok(INTEGRITY, {}, { token: B.token })).activityLogIntegrity).toEqual({ valid: true, entries: mine.totalCount, brokenAtSeq: null });
  });

  it('the ReadOnly role reads the log; a revoked key gets 401; no credential is Unauthorized', async () => {
    for (const auth of [{ token: readOnly }, { apiKey: readOnlyKey }]) {
      expect((await log({ action: 'REVOKE_LICENSE' }, {}, auth)).nodes).toHaveLength(1);
      expect((await ok(INTEGRITY, {}, auth)).activityLogIntegrity.valid).toBe(true);
    }
    for (const query of [LOG, INTEGRITY]) {
      const response = await t.gql(query, {}, { apiKey: revokedKey });
      expect(response.status).toBe(401);
      expect((await t.gql(query, {}, {})).errors![0].extensions!.code).toBe('Unauthorized');
    }
  });
});

describe('append-only, hash-chained storage', () => {
  it('UPDATE, DELETE and TRUNCATE on audit_log fail in the database (no grant for the app role; triggers for the owner)', async () => {
    const before = await t.prisma.auditLogEntry.findMany({ orderBy: [{ tenantId: 'asc' }, { seq: 'asc' }] });
    for (const sql of [
      `UPDATE audit_log SET actor = 'mallory' WHERE tenant_id = '${A.tenantId}'`,
      `DELETE FROM audit_log WHERE tenant_id = '${A.tenantId}'`,
      'TRUNCATE audit_log',
      'TRUNCATE audit_log CASCADE',
    ]) {
      await expect(t.prisma.$executeRawUnsafe(sql), sql).rejects.toThrow(/append-only|permission denied/);
    }
    expect(await t.prisma.auditLogEntry.findMany({ orderBy: [{ tenantId: 'asc' }, { seq: 'asc' }] })).toEqual(before);
  });

  it('the chain verifies, and a forged row is detected at its seq (per tenant)', async () => {
    const entries = await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId } });
    expect((await ok(INTEGRITY)).activityLogIntegrity).toEqual({ valid: true, entries, brokenAtSeq: null });
    await t.prisma.$executeRawUnsafe(
      `INSERT INTO audit_log (id, tenant_id, seq, action, entity_type, entity, actor, created_at, prev_hash, hash)
       SELECT gen_random_uuid(), tenant_id, seq + 1, 'DELETE_PRODUCT', 'Product', 'forged', 'mallory', now(), hash, repeat('0', 64)
         FROM audit_log WHERE tenant_id = $1::uuid ORDER BY seq DESC LIMIT 1`,
      A.tenantId,
    );
    expect((await ok(INTEGRITY)).activityLogIntegrity).toEqual({ valid: false, entries, brokenAtSeq: entries + 1 });
    expect((await ok(INTEGRITY, {}, { token: B.token })).activityLogIntegrity.valid).toBe(true);
  });
});
