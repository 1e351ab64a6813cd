import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPeriod, parsePeriod } from '../server/src/domain/period.js';
import { runBulkJobs } from '../server/src/services/licenses/bulk.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { runCli } from './support/processes.js';
import { seedTwoTenants, type SeededTenant } from './support/tenants.js';

// License plans over GraphQL: CRUD with its activity entries, a license created from a plan (values copied, dates
// from the plan's periods, quotas, explicit fields overriding), a plan edit leaving sold licenses alone, archive vs
// delete, another company's plan answering not found everywhere, roles, the list filter and analytics by plan, the
// CSV import's plan column and the CLI.

const clock = new TestClock(Date.parse('2026-06-01T12:00:00.000Z'));
let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;
type Auth = { token?: string; apiKey?: string };
const ok = (query: string, variables: Record<string, unknown> = {}, auth: Auth = { token: A.admin.token }) => t.gqlData(query, variables, auth);
const error = async (query: string, variables: Record<string, unknown> = {}, auth: Auth = { token: A.admin.token }) => (await t.gql(query, variables, auth)).errors?.[0];

const PLAN = `id name product { id name } duration maxActivations isTrial nodeLocked offlineGraceDays gracePeriodDays features customFields
  minVersion maxVersion maintenancePeriod floatingSeats quotas { event period limit } archived archivedAt licenseCount`;
const CREATE_PLAN = `mutation($input: CreatePlanInput!) { createPlan(input: $input) { plan { ${PLAN} } } }`;
const UPDATE_PLAN = `mutation($input: UpdatePlanInput!) { updatePlan(input: $input) { plan { ${PLAN} } } }`;
const DELETE_PLAN = 'mutation($input: DeletePlanInput!) { deletePlan(input: $input) { deletedPlanId } }';
const GET_PLAN = `query($id: ID!) { plan(id: $id) { ${PLAN} } }`;
const LIST_PLANS = `query($filter: PlanFilter) { plans(filter: $filter) { totalCount nodes { id name archived licenseCount } } }`;
const LICENSE = `id maxActivations expiresAt isTrial nodeLocked offlineGraceDays gracePeriodDays features customFields minVersion maxVersion
  maintenanceExpiresAt floatingSeats customerEmail product { id name } plan { id name archived }`;
const CREATE_LICENSE = `mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key license { ${LICENSE} } } }`;

const createPlan = async (input: Record<string, unknown>, auth?: Auth) => (await ok(CREATE_PLAN, { input }, auth)).createPlan.plan;
const createLicense = async (input: Record<string, unknown>, auth?: Auth) => (await ok(CREATE_LICENSE, { input }, auth)).createLicense;
const auditOf = (entityId: string) => t.prisma.auditLogEntry.findMany({ where: { entityId }, orderBy: { seq: 'asc' } });

const ids: Record<string, string> = {};
const PRO = {
  name: 'Pro yearly',
  duration: 'p1y',
  maxActivations: 3,
  isTrial: false,
  nodeLocked: true,
  offlineGraceDays: 7,
  gracePeriodDays: 5,
  features: ['pro', 'sync'],
  customFields: { tier: 'pro' },
  minVersion: '2.0.0',
  maxVersion: '3.9.9',
  maintenancePeriod: 'P6M',
  floatingSeats: 2,
  quotas: [{ event: 'api.calls', period: 'MONTH', limit: 1000 }],
};

beforeAll(async () => {
  t = await startTestApp({ clock });
  ({ A, B } = await seedTwoTenants(t, { catalog: false }));
  ids.studio = (await t.seedProduct(A.tenantId, 'Studio')).id;
  ids.viewer = (await t.seedProduct(A.tenantId, 'Viewer')).id;
  ids.globex = (await t.seedProduct(B.tenantId, 'Globex Tool')).id;
});
afterAll(() => t.close());

describe('periods', () => {
  it('reads ISO 8601 date periods and adds them in UTC, a month from the 31st ending on the month\'s last day', () => {
    expect(parsePeriod('P1Y6M')).toEqual({ years: 1, months: 6, weeks: 0, days: 0 });
    expect(parsePeriod('p30d')).toEqual({ years: 0, months: 0, weeks: 0, days: 30 });
    for (const bad of ['P', 'P0D', 'PT1H', '1Y', 'P1Y1Y', 'P-1D', 'P101Y', 'P 1D', 'P9999999D', '']) expect(parsePeriod(bad), bad).toBeNull();
    expect(addPeriod(new Date('2027-01-31T10:00:00Z'), parsePeriod('P1M')!).toISOString()).toBe('2027-02-28T10:00:00.000Z');
    expect(addPeriod(new Date('2028-01-31T10:00:00Z'), parsePeriod('P1M')!).toISOString()).toBe('2028-02-29T10:00:00.000Z');
    expect(addPeriod(new Date('2028-02-29T00:00:00Z'), parsePeriod('P1Y')!).toISOString()).toBe('2029-02-28T00:00:00.000Z');
    expect(addPeriod(new Date('2026-12-20T00:00:00Z'), parsePeriod('P2W')!).toISOString()).toBe('2027-01-03T00:00:00.000Z');
  });
});

describe('plans: CRUD', () => {
  it('creates a plan of a product with every license attribute (periods stored canonical), audited CreatePlan', async () => {
    const plan = await createPlan({ productId: ids.studio, ...PRO });
    ids.pro = plan.id;
    expect(plan).toMatchObject({ ...PRO, duration: 'P1Y', product: { id: ids.studio, name: 'Studio' }, archived: false, archivedAt: null, licenseCount: 0 });
    const [entry] = await auditOf(plan.id);
    expect(entry).toMatchObject({ action: 'CreatePlan', entityType: 'Plan', entity: 'Pro yearly (Studio)', actor: A.admin.email, details: { productName: 'Studio', duration: 'P1Y', maxActivations: 3 } });
    ids.basic = (await createPlan({ productId: ids.studio, name: 'Basic', maxActivations: 1 })).id;
    ids.viewerPlan = (await createPlan({ productId: ids.viewer, name: 'Viewer monthly', maxActivations: 1, duration: 'P1M' })).id;
    const basic = (await ok(GET_PLAN, { id: ids.basic })).plan;
    expect(basic).toMatchObject({ duration: null, maintenancePeriod: null, isTrial: false, features: [], quotas: [], customFields: null });
  });

  it('refuses bad fields with the license rules (InvalidRequest per field) and a duplicate name (Conflict)', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ duration: '1 year' }, 'duration'],
      [{ duration: 'PT1H' }, 'duration'],
      [{ maintenancePeriod: 'P0D' }, 'maintenancePeriod'],
      [{ maxActivations: 0 }, 'maxActivations'],
      [{ offlineGraceDays: 4000 }, 'offlineGraceDays'],
      [{ minVersion: '3.0.0', maxVersion: '2.0.0' }, 'minVersion'],
      [{ minVersion: 'banana' }, 'minVersion'],
      [{ customFields: { nested: { no: 1 } } }, 'customFields.nested'],
      [{ quotas: [{ event: 'a.b', period: 'DAY', limit: 1 }, { event: 'a.b', period: 'MONTH', limit: 2 }] }, 'quotas'],
      [{ quotas: [{ event: 'Bad Event', period: 'DAY', limit: 1 }] }, 'quotas.0.event'],
      [{ name: '  ' }, 'name'],
    ];
    for (const [fields, field] of cases) {
      const refused = await error(CREATE_PLAN, { input: { productId: ids.studio, name: 'X', maxActivations: 1, ...fields } });
      expect(refused?.extensions, JSON.stringify(fields)).toMatchObject({ code: 'InvalidRequest', fields: { [field]: expect.any(String) } });
    }
    expect((await error(CREATE_PLAN, { input: { productId: ids.studio, name: 'Basic', maxActivations: 1 } }))?.extensions).toMatchObject({ code: 'Conflict', fields: { name: expect.any(String) } });
    // Another product may have a plan of the same name.
    expect((await createPlan({ productId: ids.viewer, name: 'Basic', maxActivations: 1 })).product.name).toBe('Viewer');
    expect(await t.prisma.plan.count({ where: { tenantId: A.tenantId, name: 'X' } })).toBe(0);
  });

  it('lists plans by product then name, one product\'s with productId', async () => {
    const all = (await ok(LIST_PLANS)).plans;
    expect(all.nodes.map((plan: { name: string }) => plan.name)).toEqual(['Basic', 'Pro yearly', 'Basic', 'Viewer monthly']);
    const viewer = (await ok(LIST_PLANS, { filter: { productId: ids.viewer } })).plans;
    expect(viewer).toMatchObject({ totalCount: 2, nodes: [{ name: 'Basic' }, { name: 'Viewer monthly' }] });
    expect((await ok(LIST_PLANS, { filter: { productId: 'not-a-uuid' } })).plans.totalCount).toBe(0);
  });
});

describe('licenses from a plan', () => {
  it('copies the plan onto the license: dates from its periods from now, its quotas, its id; productId may be omitted', async () => {
    const { key, license } = await createLicense({ planId: ids.pro, customerEmail: 'buyer@customer.test' });
    ids.proLicense = license.id;
    expect(key).toMatch(/^ACME-/);
    expect(license).toMatchObject({
      maxActivations: 3, expiresAt: '2027-06-01T12:00:00.000Z', maintenanceExpiresAt: '2026-12-01T12:00:00.000Z', isTrial: false, nodeLocked: true,
      offlineGraceDays: 7, gracePeriodDays: 5, features: ['pro', 'sync'], customFields: { tier: 'pro' }, minVersion: '2.0.0', maxVersion: '3.9.9',
      floatingSeats: 2, customerEmail: 'buyer@customer.test', product: { id: ids.studio, name: 'Studio' }, plan: { id: ids.pro, name: 'Pro yearly', archived: false },
    });
    expect(await t.prisma.meterQuota.findMany({ where: { licenseId: license.id } })).toEqual([{ licenseId: license.id, event: 'api.calls', period: 'month', limit: 1000 }]);
    const [entry] = await auditOf(license.id);
    expect(entry).toMatchObject({ action: 'CreateLicense', details: { planId: ids.pro, planName: 'Pro yearly', expiresAt: '2027-06-01T12:00:00.000Z', quotas: [{ event: 'api.calls', period: 'month', limit: 1000 }] } });
    // The key works as any license's.
    expect((await t.post('/api/v1/validate', { licenseKey: key })).json).toMatchObject({ isValid: true });
  });

  it('fields given alongside the plan override it (null included); the plan of another product is InvalidRequest', async () => {
    const { license } = await createLicense({ productId: ids.studio, planId: ids.pro, maxActivations: 10, expiresAt: null, features: [], floatingSeats: null });
    expect(license).toMatchObject({ maxActivations: 10, expiresAt: null, features: [], floatingSeats: null, nodeLocked: true, maintenanceExpiresAt: '2026-12-01T12:00:00.000Z', plan: { id: ids.pro } });
    const mismatch = await error(CREATE_LICENSE, { input: { productId: ids.viewer, planId: ids.pro } });
    expect(mismatch?.extensions).toMatchObject({ code: 'InvalidRequest', fields: { planId: 'is a plan of Studio, not of Viewer' } });
    const neither = await error(CREATE_LICENSE, { input: { maxActivations: 1 } });
    expect(neither?.extensions).toMatchObject({ code: 'InvalidRequest', fields: { productId: expect.any(String) } });
    const noSeats = await error(CREATE_LICENSE, { input: { productId: ids.studio } });
    expect(noSeats?.extensions).toMatchObject({ code: 'InvalidRequest', fields: { maxActivations: expect.any(String) } });
    const badOverride = await error(CREATE_LICENSE, { input: { planId: ids.pro, minVersion: '4.0.0' } });
    expect(badOverride?.extensions).toMatchObject({ code: 'InvalidRequest', fields: { minVersion: expect.any(String) } });
  });

  it('editing a plan changes no license sold from it; the edit is audited UpdatePlan with before/after', async () => {
    const before = await t.prisma.license.findUniqueOrThrow({ where: { id: ids.proLicense } });
    const quotasBefore = await t.prisma.meterQuota.findMany({ where: { licenseId: ids.proLicense } });
    const updated = (await ok(UPDATE_PLAN, { input: { id: ids.pro, maxActivations: 5, duration: 'P2Y', features: ['pro'], quotas: [], customFields: null } })).updatePlan.plan;
    expect(updated).toMatchObject({ maxActivations: 5, duration: 'P2Y', features: ['pro'], quotas: [], customFields: null, nodeLocked: true, licenseCount: 2 });
    expect(await t.prisma.license.findUniqueOrThrow({ where: { id: ids.proLicense } })).toEqual(before);
    expect(await t.prisma.meterQuota.findMany({ where: { licenseId: ids.proLicense } })).toEqual(quotasBefore);
    const entries = await auditOf(ids.pro);
    expect(entries.at(-1)).toMatchObject({ action: 'UpdatePlan', details: { before: { maxActivations: 3, duration: 'P1Y' }, after: { maxActivations: 5, duration: 'P2Y' } } });
    // A change that changes nothing writes nothing.
    await ok(UPDATE_PLAN, { input: { id: ids.pro, maxActivations: 5 } });
    expect(await auditOf(ids.pro)).toHaveLength(entries.length);
    // A new license gets the new values.
    expect((await createLicense({ planId: ids.pro })).license).toMatchObject({ maxActivations: 5, expiresAt: '2028-06-01T12:00:00.000Z', features: ['pro'] });
  });

  it('a plan with licenses is archived, not deleted: they keep working and their plan; no new license from it; restored by archived: false', async () => {
    expect((await error(DELETE_PLAN, { input: { id: ids.pro } }))?.extensions?.code).toBe('Conflict');
    const archived = (await ok(UPDATE_PLAN, { input: { id: ids.pro, archived: true } })).updatePlan.plan;
    expect(archived).toMatchObject({ archived: true, archivedAt: '2026-06-01T12:00:00.000Z' });
    expect((await error(CREATE_LICENSE, { input: { planId: ids.pro } }))?.extensions).toMatchObject({ code: 'Conflict', fields: { planId: 'archived' } });
    expect((await ok(LIST_PLANS, { filter: { productId: ids.studio } })).plans.nodes.map((plan: { name: string }) => plan.name)).toEqual(['Basic']);
    expect((await ok(LIST_PLANS, { filter: { productId: ids.studio, includeArchived: true } })).plans.nodes.map((plan: { name: string }) => plan.name)).toEqual(['Basic', 'Pro yearly']);
    const license = (await ok(`query($id: ID!) { license(id: $id) { status plan { id archived } } }`, { id: ids.proLicense })).license;
    expect(license).toEqual({ status: 'ACTIVE', plan: { id: ids.pro, archived: true } });
    await ok(UPDATE_PLAN, { input: { id: ids.pro, archived: false } });
    expect((await ok(GET_PLAN, { id: ids.pro })).plan.archived).toBe(false);
    // An unused plan is deleted, audited DeletePlan.
    const spare = await createPlan({ productId: ids.studio, name: 'Spare', maxActivations: 1 });
    expect((await ok(DELETE_PLAN, { input: { id: spare.id } })).deletePlan.deletedPlanId).toBe(spare.id);
    expect((await auditOf(spare.id)).map((entry) => entry.action)).toEqual(['CreatePlan', 'DeletePlan']);
    expect((await ok(GET_PLAN, { id: spare.id })).plan).toBeNull();
  });
});

describe('tenants and roles', () => {
  it("another company's plan answers not found everywhere and changes nothing", async () => {
    const asB = { token: B.admin.token };
    const before = await t.prisma.plan.findUniqueOrThrow({ where: { id: ids.pro } });
    const licensesBefore = await t.prisma.license.count();
    expect((await ok(GET_PLAN, { id: ids.pro }, asB)).plan).toBeNull();
    expect((await ok(LIST_PLANS, {}, asB)).plans.totalCount).toBe(0);
    expect((await error(UPDATE_PLAN, { input: { id: ids.pro, name: 'Stolen' } }, asB))?.extensions?.code).toBe('NotFound');
    expect((await error(DELETE_PLAN, { input: { id: ids.basic } }, asB))?.extensions?.code).toBe('NotFound');
    expect((await error(CREATE_LICENSE, { input: { planId: ids.pro } }, asB))?.extensions?.code).toBe('NotFound');
    expect((await error(CREATE_LICENSE, { input: { planId: ids.pro, productId: ids.globex } }, asB))?.extensions?.code).toBe('NotFound');
    expect((await error(CREATE_PLAN, { input: { productId: ids.studio, name: 'Mine', maxActivations: 1 } }, asB))?.extensions?.code).toBe('NotFound');
    // B's own plan with A's product, and A's plan with B's product: not found.
    const globexPlan = (await ok(CREATE_PLAN, { input: { productId: ids.globex, name: 'G', maxActivations: 1 } }, asB)).createPlan.plan;
    expect((await error(CREATE_LICENSE, { input: { planId: globexPlan.id } }))?.extensions?.code).toBe('NotFound');
    expect((await ok(`query($f: LicenseFilter) { licenses(filter: $f) { totalCount } }`, { f: { planId: ids.pro } }, asB)).licenses.totalCount).toBe(0);
    expect(await t.prisma.plan.findUniqueOrThrow({ where: { id: ids.pro } })).toEqual(before);
    expect(await t.prisma.license.count()).toBe(licensesBefore);
  });

  it('read-only members and API keys read plans but every plan mutation is Forbidden', async () => {
    for (const auth of [{ token: A.readOnly.token }, { apiKey: A.readOnlyKey.key }]) {
      expect((await ok(LIST_PLANS, {}, auth)).plans.totalCount).toBeGreaterThan(0);
      expect((await error(CREATE_PLAN, { input: { productId: ids.studio, name: 'RO', maxActivations: 1 } }, auth))?.extensions?.code).toBe('Forbidden');
      expect((await error(UPDATE_PLAN, { input: { id: ids.basic, name: 'RO' } }, auth))?.extensions?.code).toBe('Forbidden');
      expect((await error(DELETE_PLAN, { input: { id: ids.basic } }, auth))?.extensions?.code).toBe('Forbidden');
    }
    // An admin API key may.
    const plan = (await ok(CREATE_PLAN, { input: { productId: ids.studio, name: 'By key', maxActivations: 1 } }, { apiKey: A.adminKey.key })).createPlan.plan;
    expect((await auditOf(plan.id))[0].actor).toMatch(/^api-key automation/);
  });
});

describe('reporting by plan', () => {
  it('the licenses list filters and counts by plan; analytics counts licenses per plan', async () => {
    const list = await ok(`query($f: LicenseFilter) { licenses(filter: $f) { totalCount nodes { id plan { name } } } }`, { f: { planId: ids.pro } });
    expect(list.licenses.totalCount).toBe(3);
    expect(list.licenses.nodes.every((node: { plan: { name: string } }) => node.plan.name === 'Pro yearly')).toBe(true);
    expect((await ok(`query($f: LicenseFilter) { licenses(filter: $f) { totalCount } }`, { f: { planId: ids.basic } })).licenses.totalCount).toBe(0);
    expect((await ok(`query($f: LicenseFilter) { licenses(filter: $f) { totalCount } }`, { f: { planId: 'nope' } })).licenses.totalCount).toBe(0);
    expect((await ok(`query { bulkSelectionCount(selection: { filter: { planId: "${ids.pro}" } }) }`)).bulkSelectionCount).toBe(3);
    await ok('mutation($input: SuspendLicenseInput!) { suspendLicense(input: $input) { license { id } } }', { input: { id: ids.proLicense } });
    const { analytics } = await ok('query { analytics(range: LAST_7_DAYS) { licensesByPlan { planId planName productName archived licenses activeLicenses } } }');
    expect(analytics.licensesByPlan).toEqual([
      { planId: ids.basic, planName: 'Basic', productName: 'Studio', archived: false, licenses: 0, activeLicenses: 0 },
      { planId: expect.any(String), planName: 'By key', productName: 'Studio', archived: false, licenses: 0, activeLicenses: 0 },
      { planId: ids.pro, planName: 'Pro yearly', productName: 'Studio', archived: false, licenses: 3, activeLicenses: 2 },
      { planId: expect.any(String), planName: 'Basic', productName: 'Viewer', archived: false, licenses: 0, activeLicenses: 0 },
      { planId: ids.viewerPlan, planName: 'Viewer monthly', productName: 'Viewer', archived: false, licenses: 0, activeLicenses: 0 },
    ]);
  });
});

describe('CSV import with a plan column', () => {
  const CHECK = 'mutation($input: CheckLicenseImportInput!) { checkLicenseImport(input: $input) { report { rows valid errorCount errors { line column message } } } }';
  const START = 'mutation($input: StartLicenseImportInput!) { startLicenseImport(input: $input) { job { id } } }';

  it('creates each row from its plan (by name or id), its own cells overriding; unknown, foreign-product and archived plans are errors', async () => {
    const archived = await createPlan({ productId: ids.studio, name: 'Old', maxActivations: 1 });
    await ok(UPDATE_PLAN, { input: { id: archived.id, archived: true } });
    const bad = ['product,plan,customer_email', 'Studio,Nope,a@x.test', 'Viewer,' + ids.pro + ',b@x.test', 'Studio,Old,c@x.test', 'Studio,,d@x.test'].join('\n');
    const report = (await ok(CHECK, { input: { csv: bad } })).checkLicenseImport.report;
    expect(report).toMatchObject({ rows: 4, valid: 0, errorCount: 4 });
    expect(report.errors).toEqual([
      { line: 2, column: 'plan', message: 'no plan named "Nope" of this product' },
      { line: 3, column: 'plan', message: 'is a plan of another product' },
      { line: 4, column: 'plan', message: 'the plan "Old" is archived' },
      { line: 5, column: 'plan', message: 'is required without a max_activations (or seats) column' },
    ]);

    const csv = ['product,plan,seats,expires_at,customer_email', 'Studio,pro yearly,,,one@x.test', `Studio,${ids.pro},7,2030-01-01,two@x.test`, 'Viewer,,2,,three@x.test'].join('\n');
    expect((await ok(CHECK, { input: { csv } })).checkLicenseImport.report).toMatchObject({ valid: 3, errorCount: 0 });
    await ok(START, { input: { csv } });
    clock.advance(60_000);
    await runBulkJobs({ db: t.deps.db, now: clock.now() });
    const rows = await t.prisma.license.findMany({ where: { tenantId: A.tenantId, customerEmail: { in: ['one@x.test', 'two@x.test', 'three@x.test'] } }, orderBy: { customerEmail: 'asc' } });
    const byEmail = Object.fromEntries(rows.map((row) => [row.customerEmail, row]));
    // Its dates from when the job created it (a minute after the dry run here).
    expect(byEmail['one@x.test']).toMatchObject({ planId: ids.pro, maxActivations: 5, nodeLocked: true });
    expect(byEmail['one@x.test'].expiresAt!.toISOString().slice(0, 16)).toBe('2028-06-01T12:01');
    expect(byEmail['two@x.test']).toMatchObject({ planId: ids.pro, maxActivations: 7, expiresAt: new Date('2030-01-01T00:00:00.000Z') });
    expect(byEmail['three@x.test']).toMatchObject({ planId: null, maxActivations: 2, expiresAt: null });
  });
});

describe('CLI', () => {
  it('plan:create, license:create --plan (found by name), plan:update --archive and a refused plan:delete', async () => {
    const env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir };
    const created = runCli(['plan:create', '--tenant', 'ACME', '--product', 'Viewer', '--name', 'CLI plan', '--max-activations', '2', '--duration', 'P30D', '--features', 'a,b', '--quotas', 'api.calls:day:10', '--json'], env);
    expect(created.status, created.stderr).toBe(0);
    expect(created.json.plan).toMatchObject({ name: 'CLI plan', productName: 'Viewer', duration: 'P30D', maxActivations: 2, features: ['a', 'b'], quotas: [{ event: 'api.calls', period: 'day', limit: 10 }] });
    const license = runCli(['license:create', '--tenant', 'ACME', '--product', 'Viewer', '--plan', 'cli plan', '--json'], env);
    expect(license.status, license.stderr).toBe(0);
    expect(license.json.license).toMatchObject({ planId: created.json.plan.id, maxActivations: 2, features: ['a', 'b'], isTrial: false });
    expect(Date.parse(license.json.license.expiresAt) - Date.parse(license.json.license.createdAt)).toBe(30 * 86_400_000);
    const refused = runCli(['plan:delete', '--tenant', 'ACME', '--product', 'Viewer', '--plan', 'CLI plan', '--json'], env);
    expect(refused.status).toBe(1);
    expect(refused.json.error.code).toBe('Conflict');
    const archived = runCli(['plan:update', '--tenant', 'ACME', '--product', 'Viewer', '--plan', 'CLI plan', '--archive', '--duration', 'perpetual', '--json'], env);
    expect(archived.status, archived.stderr).toBe(0);
    expect(archived.json.plan).toMatchObject({ duration: null, licenseCount: 1 });
    expect(archived.json.plan.archivedAt).not.toBeNull();
    expect((await auditOf(created.json.plan.id)).map((entry) => [entry.action, entry.actor])).toEqual([['CreatePlan', 'system (cli)'], ['UpdatePlan', 'system (cli)']]);
  });
});
