import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { runCli } from './support/processes.js';
import { seedTwoTenants } from './support/tenants.js';

// Management API: products and licenses over GraphQL — behaviour, activity entries, tenant isolation, roles.

let t: TestApp;
const clock = new TestClock();
const IP = '203.0.113.9';
let A: { token: string; tenantId: string; userId: string };
let B: { token: string; tenantId: string };
let readOnly: string;
let readOnlyKey: string;
let revokedKey: string;
const issuedKeys: string[] = [];

type Auth = { token?: string; apiKey?: string; ip?: string };
const asAdmin: () => Auth = () => ({ token: A.token, ip: IP });

const ok = (query: string, variables: Record<string, unknown> = {}, auth: Auth = asAdmin()) => t.gqlData(query, variables, auth);
const errorCode = async (query: string, variables: Record<string, unknown> = {}, auth: Auth = asAdmin()) => (await t.gql(query, variables, auth)).errors?.[0]?.extensions?.code;

/** Runs `run` and returns the activity entries of tenant A it wrote. */
async function audited<T>(run: () => Promise<T>) {
  const before = await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId } });
  const result = await run();
  const entries = await t.prisma.auditLogEntry.findMany({ where: { tenantId: A.tenantId, seq: { gt: before } }, orderBy: { seq: 'asc' } });
  return { result, entries };
}

/** Everything of a tenant that a management mutation could change. */
async function snapshot(tenantId: string) {
  const [products, licenses, activations, audit] = await Promise.all([
    t.prisma.product.findMany({ where: { tenantId }, include: { bundleMembers: true }, orderBy: { id: 'asc' } }),
    t.prisma.license.findMany({ where: { tenantId }, orderBy: { id: 'asc' } }),
    t.prisma.activation.findMany({ where: { tenantId }, orderBy: { id: 'asc' } }),
    t.prisma.auditLogEntry.count({ where: { tenantId } }),
  ]);
  return JSON.stringify({ products, licenses, activations, audit });
}

const PRODUCT = 'id name isBundle bundleMembers { id name } licenseCount';
const LICENSE = `id keyHint status maxActivations currentActivations remainingActivations expiresAt isTrial nodeLocked offlineGraceDays gracePeriodDays
  features customFields minVersion maxVersion maintenanceExpiresAt customerEmail floatingSeats revokedAt product { id name }`;
const CREATE_LICENSE = `mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key license { ${LICENSE} } } }`;
const UPDATE_LICENSE = `mutation($input: UpdateLicenseInput!) { updateLicense(input: $input) { license { ${LICENSE} } } }`;
const LIST = `query($filter: LicenseFilter, $first: Int, $after: String) {
  licenses(filter: $filter, first: $first, after: $after) { totalCount pageInfo { endCursor hasNextPage } nodes { id keyHint status customerEmail } } }`;

async function createLicense(input: Record<string, unknown>, auth: Auth = asAdmin()) {
  const { createLicense: created } = await ok(CREATE_LICENSE, { input }, auth);
  issuedKeys.push(created.key);
  return created as { key: string; license: Record<string, any> };
}

beforeAll(async () => {
  t = await startTestApp({ clock });
  const seeded = await seedTwoTenants(t, { catalog: false });
  A = { token: seeded.A.admin.token, tenantId: seeded.A.tenantId, userId: seeded.A.admin.userId };
  B = { token: seeded.B.admin.token, tenantId: seeded.B.tenantId };
  readOnly = seeded.A.readOnly.token;
  readOnlyKey = seeded.A.readOnlyKey.key;
  revokedKey = seeded.A.revokedKey.key;
});
afterAll(() => t.close());

const ids: Record<string, string> = {};

describe('products', () => {
  it('creates products and bundles (members by name or id), lists and gets them; each creation writes one entry', async () => {
    const { result, entries } = await audited(() => ok(`mutation { createProduct(input: { name: "Editor" }) { product { ${PRODUCT} } } }`));
    ids.editor = result.createProduct.product.id;
    expect(result.createProduct.product).toMatchObject({ name: 'Editor', isBundle: false, bundleMembers: [], licenseCount: 0 });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      action: 'CreateProduct', entityType: 'Product', entityId: ids.editor, entity: 'Editor', actor: 'admin@acme.test', actorId: A.userId, ip: IP,
      details: { name: 'Editor', isBundle: false, bundleOf: [] },
    });
    ids.viewer = (await ok('mutation { createProduct(input: { name: "Viewer" }) { product { id } } }')).createProduct.product.id;
    ids.spare = (await ok('mutation { createProduct(input: { name: "Spare" }) { product { id } } }')).createProduct.product.id;

    const bundle = await audited(() => ok(`mutation($ids: [ID!]) { createProduct(input: { name: "Suite", bundleOf: ["Editor"], bundleMemberIds: $ids }) { product { ${PRODUCT} } } }`, { ids: [ids.viewer] }));
    ids.suite = bundle.result.createProduct.product.id;
    expect(bundle.result.createProduct.product).toMatchObject({ isBundle: true, bundleMembers: [{ id: ids.editor, name: 'Editor' }, { id: ids.viewer, name: 'Viewer' }] });
    expect(bundle.entries).toHaveLength(1);
    expect(bundle.entries[0].details).toEqual({ name: 'Suite', isBundle: true, bundleOf: ['Editor', 'Viewer'] });

    const { products } = await ok(`{ products { nodes { name } } }`);
    expect(products.nodes.map((p: { name: string }) => p.name)).toEqual(['Editor', 'Spare', 'Suite', 'Viewer']);
    expect((await ok(`{ product(id: "${ids.suite}") { name isBundle } }`)).product).toEqual({ name: 'Suite', isBundle: true });
    expect(await ok('{ product(id: "not-a-uuid") { id } }')).toEqual({ product: null });
  });

  it('updates the name and the bundle members with a before/after diff; a no-op writes nothing', async () => {
    const renamed = await audited(() => ok(`mutation { updateProduct(input: { id: "${ids.spare}", name: "Spare Parts" }) { product { name } } }`));
    expect(renamed.result.updateProduct.product.name).toBe('Spare Parts');
    expect(renamed.entries).toHaveLength(1);
    expect(renamed.entries[0]).toMatchObject({ action: 'UpdateProduct', entity: 'Spare Parts', entityId: ids.spare, ip: IP, details: { before: { name: 'Spare' }, after: { name: 'Spare Parts' } } });

    const members = await audited(() => ok(`mutation { updateProduct(input: { id: "${ids.suite}", bundleOf: ["Editor"] }) { product { ${PRODUCT} } } }`));
    expect(members.result.updateProduct.product).toMatchObject({ isBundle: true, bundleMembers: [{ name: 'Editor' }] });
    expect(members.entries.map((e) => e.details)).toEqual([{ before: { bundleOf: ['Editor', 'Viewer'] }, after: { bundleOf: ['Editor'] } }]);
    await ok(`mutation($ids: [ID!]) { updateProduct(input: { id: "${ids.suite}", bundleMemberIds: $ids }) { product { id } } }`, { ids: [ids.editor, ids.viewer] });

    const noop = await audited(() => ok(`mutation { updateProduct(input: { id: "${ids.suite}", name: "Suite", bundleOf: ["Viewer", "Editor"] }) { product { name } } }`));
    expect(noop.entries).toHaveLength(0);
  });

  it('refuses duplicates and bad bundles clearly, writing nothing', async () => {
    const before = await snapshot(A.tenantId);
    const duplicate = await t.gql('mutation { createProduct(input: { name: "Editor" }) { product { id } } }', {}, asAdmin());
    expect(duplicate.errors![0]).toMatchObject({ extensions: { code: 'Conflict', fields: { name: expect.stringMatching(/already has this name/) } }, message: expect.stringContaining('Editor') });
    expect(await errorCode(`mutation { updateProduct(input: { id: "${ids.viewer}", name: "Editor" }) { product { id } } }`)).toBe('Conflict');
    expect(await errorCode('mutation { createProduct(input: { name: "X", bundleOf: ["Nope"] }) { product { id } } }')).toBe('NotFound');
    expect(await errorCode('mutation { createProduct(input: { name: "X", bundleOf: ["Suite"] }) { product { id } } }')).toBe('InvalidRequest'); // bundle in a bundle
    expect(await errorCode(`mutation { updateProduct(input: { id: "${ids.suite}", bundleMemberIds: ["${ids.suite}"] }) { product { id } } }`)).toBe('InvalidRequest');
    expect(await errorCode(`mutation { updateProduct(input: { id: "${ids.editor}", bundleOf: ["Spare Parts"] }) { product { id } } }`)).toBe('InvalidRequest'); // Editor is in Suite
    expect(await errorCode('mutation { createProduct(input: { name: "  " }) { product { id } } }')).toBe('InvalidRequest');
    expect(await snapshot(A.tenantId)).toBe(before);
  });

  it('deletes only products no license uses and no bundle contains', async () => {
    await createLicense({ productId: ids.viewer, maxActivations: 1 });
    const before = await snapshot(A.tenantId);
    const used = await t.gql(`mutation { deleteProduct(input: { id: "${ids.viewer}" }) { deletedProductId } }`, {}, asAdmin());
    expect(used.errors![0]).toMatchObject({ extensions: { code: 'Conflict' }, message: expect.stringMatching(/used by 1 license/) });
    const member = await t.gql(`mutation { deleteProduct(input: { id: "${ids.editor}" }) { deletedProductId } }`, {}, asAdmin());
    expect(member.errors![0]).toMatchObject({ extensions: { code: 'Conflict' }, message: expect.stringContaining('Suite') });
    expect(await snapshot(A.tenantId)).toBe(before);

    ids.doomed = (await ok('mutation { createProduct(input: { name: "Doomed" }) { product { id } } }')).createProduct.product.id;
    const deleted = await audited(() => ok(`mutation { deleteProduct(input: { id: "${ids.doomed}" }) { deletedProductId } }`));
    expect(deleted.result.deleteProduct).toEqual({ deletedProductId: ids.doomed });
    expect(deleted.entries).toHaveLength(1);
    expect(deleted.entries[0]).toMatchObject({ action: 'DeleteProduct', entityType: 'Product', entityId: ids.doomed, entity: 'Doomed', actor: 'admin@acme.test', ip: IP });
    expect(await t.prisma.product.count({ where: { id: ids.doomed } })).toBe(0);
    expect(await errorCode(`mutation { deleteProduct(input: { id: "${ids.doomed}" }) { deletedProductId } }`)).toBe('NotFound');
  });
});

describe('licenses', () => {
  it('createLicense returns the key once; its entry records the attributes and the hint, never the key', async () => {
    const { result, entries } = await audited(() =>
      createLicense({ productId: ids.editor, maxActivations: 2, features: ['export'], customerEmail: 'buyer@customer.test', expiresAt: new Date(clock.now().getTime() + 60 * DAY).toISOString() }),
    );
    ids.license = result.license.id;
    expect(result.key).toMatch(/^ACME(-[A-Z2-9]{4}){4}$/);
    expect(result.license).toMatchObject({ status: 'ACTIVE', keyHint: `ACME-…-${result.key.slice(-4)}`, maxActivations: 2, remainingActivations: 2, product: { name: 'Editor' } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      action: 'CreateLicense', entityType: 'License', entityId: ids.license, entity: `${result.license.keyHint} (Editor)`, actor: 'admin@acme.test', ip: IP,
      details: { productId: ids.editor, productName: 'Editor', keyHint: result.license.keyHint, maxActivations: 2, features: ['export'], customerEmail: 'buyer@customer.test' },
    });
    expect(JSON.stringify(entries[0])).not.toContain(result.key.slice(5));
    // Afterwards the key is never readable again.
    expect(JSON.stringify(await ok(`{ license(id: "${ids.license}") { ${LICENSE} } }`))).not.toContain(result.key.slice(5));
    expect(await errorCode(CREATE_LICENSE, { input: { productId: ids.editor, maxActivations: 0 } })).toBe('InvalidRequest');
    expect(await errorCode(CREATE_LICENSE, { input: { productId: '00000000-0000-4000-8000-000000000000', maxActivations: 1 } })).toBe('NotFound');
  });

  it('updateLicense changes every attribute with a before/after diff; null clears; invalid input changes nothing', async () => {
    const all = {
      maxActivations: 7, expiresAt: '2027-01-01T00:00:00.000Z', isTrial: true, nodeLocked: true, offlineGraceDays: 3, gracePeriodDays: 2, features: ['a', 'b'],
      customFields: { plan: 'pro' }, minVersion: '1.0.0', maxVersion: '3.0.0', maintenanceExpiresAt: '2026-12-01T00:00:00.000Z', customerEmail: 'new@customer.test', floatingSeats: 2,
    };
    const { result, entries } = await audited(() => ok(UPDATE_LICENSE, { input: { id: ids.license, ...all } }));
    expect(result.updateLicense.license).toMatchObject(all);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ action: 'UpdateLicense', entityId: ids.license, actor: 'admin@acme.test', ip: IP });
    const details = entries[0].details as { before: Record<string, unknown>; after: Record<string, unknown> };
    expect(Object.keys(details.after).sort()).toEqual(Object.keys(all).sort());
    expect(details.after).toEqual(all);
    expect(details.before).toMatchObject({ maxActivations: 2, isTrial: false, features: ['export'], customFields: null, customerEmail: 'buyer@customer.test', floatingSeats: null });

    const cleared = await audited(() => ok(UPDATE_LICENSE, { input: { id: ids.license, expiresAt: null, customFields: null, floatingSeats: null } }));
    expect(cleared.result.updateLicense.license).toMatchObject({ expiresAt: null, customFields: null, floatingSeats: null, maxActivations: 7 });
    expect(cleared.entries.map((e) => e.details)).toEqual([
      { before: { expiresAt: '2027-01-01T00:00:00.000Z', customFields: { plan: 'pro' }, floatingSeats: 2 }, after: { expiresAt: null, customFields: null, floatingSeats: null } },
    ]);

    const before = await snapshot(A.tenantId);
    const crossed = await t.gql(UPDATE_LICENSE, { input: { id: ids.license, minVersion: '4.0.0' } }, asAdmin()); // above maxVersion 3.0.0
    expect(crossed.errors![0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { minVersion: expect.any(String) } });
    expect(await errorCode(UPDATE_LICENSE, { input: { id: ids.license, maxActivations: null } })).toBe('InvalidRequest');
    expect(await errorCode(UPDATE_LICENSE, { input: { id: ids.license, customerEmail: 'not-an-email' } })).toBe('InvalidRequest');
    expect(await errorCode(UPDATE_LICENSE, { input: { id: ids.license, customFields: { nested: { no: 1 } } } })).toBe('InvalidRequest');
    const noop = await ok(UPDATE_LICENSE, { input: { id: ids.license, maxActivations: 7, features: ['a', 'b'] } });
    expect(noop.updateLicense.license.maxActivations).toBe(7);
    expect(await snapshot(A.tenantId)).toBe(before);
  });

  it('revokeLicense revokes once (one entry); validate then refuses the key', async () => {
    const { key, license } = await createLicense({ productId: ids.editor, maxActivations: 1 });
    const first = await audited(() => ok(`mutation { revokeLicense(input: { id: "${license.id}" }) { license { status revokedAt } } }`));
    expect(first.result.revokeLicense.license).toEqual({ status: 'REVOKED', revokedAt: clock.now().toISOString() });
    expect(first.entries).toHaveLength(1);
    expect(first.entries[0]).toMatchObject({ action: 'RevokeLicense', entityType: 'License', entityId: license.id, entity: `${license.keyHint} (Editor)`, ip: IP });
    const again = await audited(() => ok(`mutation { revokeLicense(input: { id: "${license.id}" }) { license { status } } }`));
    expect(again.entries).toHaveLength(0);
    expect((await t.post('/api/v1/validate', { licenseKey: key })).json).toMatchObject({ isValid: false, errorCode: 'LicenseRevoked' });
  });

  it('detail lists active and deactivated activations; deactivateActivation frees the seat once', async () => {
    const { key, license } = await createLicense({ productId: ids.editor, maxActivations: 2 });
    ids.activatedLicense = license.id;
    for (const device of ['laptop', 'desktop']) expect((await t.activate({ licenseKey: key, deviceId: `dev-${device}`, deviceName: device })).json.isValid).toBe(true);
    expect((await t.activate({ licenseKey: key, deviceId: 'dev-third' })).json.errorCode).toBe('SeatsExhausted');
    const detail = async () => {
      const found = (await ok(`{ license(id: "${license.id}") { currentActivations remainingActivations activations { totalCount totalCountCapped nodes { id active deviceId deviceName deactivatedAt } } } }`)).license;
      expect(found.activations).toMatchObject({ totalCount: found.activations.nodes.length, totalCountCapped: false });
      return { ...found, activations: found.activations.nodes };
    };
    const shown = await detail();
    expect(shown.currentActivations).toBe(2);
    expect(shown.activations).toHaveLength(2);
    const laptop = shown.activations.find((a: { deviceName: string }) => a.deviceName === 'laptop');
    ids.activation = laptop.id;

    const { result, entries } = await audited(() => ok(`mutation { deactivateActivation(input: { id: "${laptop.id}" }) { license { currentActivations remainingActivations activations { nodes { id active deactivatedAt } } } } }`));
    expect(result.deactivateActivation.license).toMatchObject({ currentActivations: 1, remainingActivations: 1 });
    expect(result.deactivateActivation.license.activations.nodes.find((a: { id: string }) => a.id === laptop.id)).toEqual({ id: laptop.id, active: false, deactivatedAt: clock.now().toISOString() });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      action: 'DeactivateActivation', entityType: 'Activation', entityId: laptop.id, entity: `laptop on ${license.keyHint}`, actor: 'admin@acme.test', ip: IP,
      details: { licenseId: license.id, deviceId: 'dev-laptop', deviceName: 'laptop' },
    });
    const again = await audited(() => ok(`mutation { deactivateActivation(input: { id: "${laptop.id}" }) { license { currentActivations } } }`));
    expect(again.result.deactivateActivation.license.currentActivations).toBe(1);
    expect(again.entries).toHaveLength(0);
    // The freed seat can be taken again; the history keeps the deactivated activation.
    expect((await t.activate({ licenseKey: key, deviceId: 'dev-third' })).json.isValid).toBe(true);
    expect((await detail()).activations.map((a: { active: boolean }) => a.active).sort()).toEqual([false, true, true]);
    expect(await errorCode(`mutation { deactivateActivation(input: { id: "00000000-0000-4000-8000-000000000000" }) { license { id } } }`)).toBe('NotFound');
  });

  it('pages a license\'s activations newest first, with a stable cursor and a count', async () => {
    const { license } = await createLicense({ productId: ids.editor, maxActivations: 50 });
    // 25 activations one minute apart (two at the same instant, ordered by id).
    await t.prisma.$executeRaw`
      INSERT INTO activations (id, tenant_id, license_id, device_id, created_at, last_seen_at)
      SELECT gen_random_uuid(), l.tenant_id, l.id, 'dev-' || n, ${clock.now().toISOString()}::timestamptz - least(n, 24) * interval '1 minute', now()
        FROM licenses l CROSS JOIN generate_series(1, 25) AS n WHERE l.id = ${license.id}::uuid`;
    const expected = await t.prisma.activation.findMany({ where: { licenseId: license.id }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], select: { id: true } });
    const page = async (after: string | null) =>
      (await ok('query ($id: ID!, $after: String) { license(id: $id) { activations(first: 10, after: $after) { totalCount totalCountCapped pageInfo { endCursor hasNextPage } nodes { id } } } }', { id: license.id, after })).license.activations;
    const seen: string[] = [];
    let after: string | null = null;
    for (const hasNextPage of [true, true, false]) {
      const current = await page(after);
      expect(current).toMatchObject({ totalCount: 25, totalCountCapped: false, pageInfo: { hasNextPage } });
      seen.push(...current.nodes.map((node: { id: string }) => node.id));
      after = current.pageInfo.endCursor;
    }
    expect(seen).toEqual(expected.map((row) => row.id));
    expect(await errorCode(`{ license(id: "${license.id}") { activations(first: 101) { totalCount } } }`)).toBe('InvalidRequest');
    expect(await errorCode(`{ license(id: "${license.id}") { activations(after: "nonsense") { totalCount } } }`)).toBe('InvalidRequest');
  });

  it('lists with filters (product, status, expiring within N days, search) and stable cursor pagination', async () => {
    const productId = (await ok('mutation { createProduct(input: { name: "Listing" }) { product { id } } }')).createProduct.product.id;
    // Created one second apart; expiries relative to `end`, the time once all are created.
    const end = clock.now().getTime() + 5_000;
    const at = (ms: number) => new Date(end + ms).toISOString();
    const specs = {
      a: { expiresAt: at(3 * DAY), customerEmail: 'alice@customer.test' },
      b: { expiresAt: at(7 * DAY), customerEmail: 'Bob@Customer.test' },
      c: { expiresAt: new Date((Math.floor((end + 7 * DAY) / DAY) + 1) * DAY).toISOString() }, // the midnight after b's day: in 8 days
      d: { expiresAt: at(-DAY) },
      e: {},
    };
    const made: Record<string, { key: string; license: Record<string, any> }> = {};
    for (const [name, spec] of Object.entries(specs)) {
      clock.advance(1_000);
      made[name] = await createLicense({ productId, maxActivations: 1, ...spec });
    }
    await ok(`mutation { revokeLicense(input: { id: "${made.e.license.id}" }) { license { id } } }`);
    const names = (nodes: { id: string }[]) => nodes.map((node) => Object.keys(made).find((name) => made[name].license.id === node.id));
    const list = async (filter: Record<string, unknown>, page: Record<string, unknown> = {}) => (await ok(LIST, { filter: { productId, ...filter }, ...page })).licenses;

    expect(names((await list({})).nodes)).toEqual(['e', 'd', 'c', 'b', 'a']); // newest first
    expect(names((await list({ status: 'ACTIVE' })).nodes)).toEqual(['c', 'b', 'a']);
    expect(names((await list({ status: 'EXPIRED' })).nodes)).toEqual(['d']);
    expect(names((await list({ status: 'REVOKED' })).nodes)).toEqual(['e']);
    expect(names((await list({ expiringWithinDays: 7 })).nodes)).toEqual(['b', 'a']); // b's countdown reads 7 (calendar days), c's 8
    expect(names((await list({ expiringWithinDays: 8 })).nodes)).toEqual(['c', 'b', 'a']);
    expect(names((await list({ search: 'BOB@customer' })).nodes)).toEqual(['b']);
    expect(names((await list({ search: made.c.key.slice(-4).toLowerCase() })).nodes)).toEqual(['c']);
    expect(names((await list({ search: `ACME-...-${made.d.key.slice(-4)}` })).nodes)).toEqual(['d']);
    expect(names((await list({ search: made.a.key })).nodes)).toEqual(['a']); // a whole key, matched by digest
    expect((await list({ search: 'nobody' })).totalCount).toBe(0);

    // Pages of 2; a license created meanwhile (newest, so before page 1) neither repeats nor skips a row.
    const page1 = await list({}, { first: 2 });
    expect(page1).toMatchObject({ totalCount: 5, pageInfo: { hasNextPage: true } });
    clock.advance(1_000);
    await createLicense({ productId, maxActivations: 1 });
    const page2 = await list({}, { first: 2, after: page1.pageInfo.endCursor });
    const page3 = await list({}, { first: 2, after: page2.pageInfo.endCursor });
    expect([page1, page2, page3].map((page) => names(page.nodes))).toEqual([['e', 'd'], ['c', 'b'], ['a']]);
    expect(page3).toMatchObject({ totalCount: 6, pageInfo: { hasNextPage: false } });
    const all = await ok(LIST, { first: 100 });
    expect(all.licenses.totalCount).toBe(await t.prisma.license.count({ where: { tenantId: A.tenantId } }));

    for (const page of [{ first: 0 }, { first: 101 }, { after: 'garbage' }, { after: Buffer.from('[1]').toString('base64url') }]) {
      expect(await errorCode(LIST, page), JSON.stringify(page)).toBe('InvalidRequest');
    }
    expect(await errorCode(LIST, { filter: { expiringWithinDays: 0 } })).toBe('InvalidRequest');
  });

  it('CLI license:create and license:revoke write entries as "system (cli)"', async () => {
    const env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir };
    const created = runCli(['license:create', '--tenant', 'ACME', '--product', 'Editor', '--max-activations', '1', '--json'], env);
    expect(created.status, created.stderr).toBe(0);
    issuedKeys.push(created.json.key);
    const revoked = runCli(['license:revoke', '--key', created.json.key, '--json'], env);
    expect(revoked.status, revoked.stderr).toBe(0);
    const entries = await t.prisma.auditLogEntry.findMany({ where: { entityId: created.json.license.id }, orderBy: { seq: 'asc' } });
    expect(entries).toMatchObject([
      { action: 'CreateLicense', actor: 'system (cli)', actorId: null, ip: null, tenantId: A.tenantId, details: { productName: 'Editor', maxActivations: 1 } },
      { action: 'RevokeLicense', actor: 'system (cli)', actorId: null, ip: null },
    ]);
  });
});

describe('tenant isolation and roles', () => {
  const mutations = () => ({
    createProductWithForeignMember: `mutation { createProduct(input: { name: "Stolen", bundleMemberIds: ["${ids.editor}"] }) { product { id } } }`,
    updateProduct: `mutation { updateProduct(input: { id: "${ids.editor}", name: "Hijacked" }) { product { id } } }`,
    deleteProduct: `mutation { deleteProduct(input: { id: "${ids.spare}" }) { deletedProductId } }`,
    createLicense: `mutation { createLicense(input: { productId: "${ids.editor}", maxActivations: 1 }) { key } }`,
    updateLicense: `mutation { updateLicense(input: { id: "${ids.license}", maxActivations: 99 }) { license { id } } }`,
    revokeLicense: `mutation { revokeLicense(input: { id: "${ids.license}" }) { license { id } } }`,
    deactivateActivation: `mutation { deactivateActivation(input: { id: "${ids.activation}" }) { license { id } } }`,
  });

  it("tenant B gets NotFound on tenant A's objects and changes nothing", async () => {
    await ok('mutation { createProduct(input: { name: "Globex Tool" }) { product { id } } }', {}, { token: B.token });
    const before = await snapshot(A.tenantId);
    const asB = { token: B.token };
    for (const [name, mutation] of Object.entries(mutations())) expect(await errorCode(mutation, {}, asB), name).toBe('NotFound');
    // Lookups answer null, as for an id that does not exist.
    expect(await ok(`{ product(id: "${ids.editor}") { id } license(id: "${ids.license}") { id } }`, {}, asB)).toEqual({ product: null, license: null });
    expect((await ok(LIST, { filter: { productId: ids.editor } }, asB)).licenses.totalCount).toBe(0);
    expect((await ok(LIST, { filter: { search: 'customer.test' } }, asB)).licenses.totalCount).toBe(0);
    expect((await ok(LIST, {}, asB)).licenses.totalCount).toBe(0);
    expect((await ok('{ products { nodes { name } } }', {}, asB)).products.nodes).toEqual([{ name: 'Globex Tool' }]);
    expect(await snapshot(A.tenantId)).toBe(before);
  });

  it('the ReadOnly role (user or API key) reads but is refused every mutation (Forbidden), changing nothing', async () => {
    const before = await snapshot(A.tenantId);
    for (const auth of [{ token: readOnly }, { apiKey: readOnlyKey }]) {
      for (const [name, mutation] of Object.entries(mutations())) expect(await errorCode(mutation, {}, auth), name).toBe('Forbidden');
      const read = await ok(`{ products { nodes { id } } licenses(first: 1) { totalCount } license(id: "${ids.license}") { id } }`, {}, auth);
      expect(read.licenses.totalCount).toBeGreaterThan(0);
    }
    expect(await snapshot(A.tenantId)).toBe(before);
  });

  it('a revoked API key is refused everything (401); no credential is Unauthorized', async () => {
    const before = await snapshot(A.tenantId);
    for (const query of [...Object.values(mutations()), '{ products { nodes { id } } }', `{ license(id: "${ids.license}") { id } }`, LIST]) {
      const response = await t.gql(query, {}, { apiKey: revokedKey });
      expect(response.status, query).toBe(401);
      expect(response.json.error.code).toBe('Unauthorized');
    }
    expect(await errorCode('{ products { nodes { id } } }', {}, {})).toBe('Unauthorized');
    expect(await errorCode(mutations().updateProduct, {}, {})).toBe('Unauthorized');
    expect(await snapshot(A.tenantId)).toBe(before);
  });

  it('no license key reaches the activity log or the logs', async () => {
    const entries = JSON.stringify(await t.prisma.auditLogEntry.findMany());
    const logs = t.logs.join('');
    expect(issuedKeys.length).toBeGreaterThan(5);
    for (const key of issuedKeys) {
      const secretPart = key.split('-').slice(1, 4).join('-');
      expect(entries).not.toContain(secretPart);
      expect(logs).not.toContain(secretPart);
    }
  });
});
