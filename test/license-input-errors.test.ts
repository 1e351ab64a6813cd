import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';

// Every bad license attribute a vendor can type in the console is a field error (InvalidRequest with
// `extensions.fields`), on create and on update — never a 500, never silently changed.

let t: TestApp;
let token: string;
let productId: string;
let licenseId: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ token } = await t.setupAdmin());
  productId = (await t.gql('mutation { createProduct(input: { name: "Acme Studio" }) { product { id } } }', {}, { token })).data.createProduct.product.id;
  licenseId = (await t.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { license { id } } }', { input: { productId, maxActivations: 2 } }, { token })).data.createLicense.license.id;
});
afterAll(() => t.close());

const CASES: [string, Record<string, unknown>, string][] = [
  ['an unparsable min version with a max version', { minVersion: 'banana', maxVersion: '1.0.0' }, 'minVersion'],
  ['an unparsable max version', { maxVersion: 'v-next' }, 'maxVersion'],
  ['min above max', { minVersion: '3.0.0', maxVersion: '2.0.0' }, 'minVersion'],
  ['negative max activations', { maxActivations: -3 }, 'maxActivations'],
  ['zero max activations', { maxActivations: 0 }, 'maxActivations'],
  ['negative floating seats', { floatingSeats: -2 }, 'floatingSeats'],
  ['negative offline grace', { offlineGraceDays: -1 }, 'offlineGraceDays'],
  ['negative grace after expiry', { gracePeriodDays: -1 }, 'gracePeriodDays'],
];

describe('license input errors', () => {
  it.each(CASES)('create: %s → a field error, nothing created', async (_name, attributes, field) => {
    const before = await t.prisma.license.count();
    const response = await t.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key } }', { input: { productId, maxActivations: 2, ...attributes } }, { token });
    expect(response.status).toBe(200);
    expect(response.errors?.[0].extensions?.code).toBe('InvalidRequest');
    expect(Object.keys(response.errors?.[0].extensions?.fields ?? {})).toContain(field);
    expect(await t.prisma.license.count()).toBe(before);
  });

  it.each(CASES)('update: %s → a field error, nothing changed', async (_name, attributes, field) => {
    const before = await t.prisma.license.findUniqueOrThrow({ where: { id: licenseId } });
    const response = await t.gql('mutation($input: UpdateLicenseInput!) { updateLicense(input: $input) { license { id } } }', { input: { id: licenseId, ...attributes } }, { token });
    expect(response.errors?.[0].extensions?.code).toBe('InvalidRequest');
    expect(Object.keys(response.errors?.[0].extensions?.fields ?? {})).toContain(field);
    expect(await t.prisma.license.findUniqueOrThrow({ where: { id: licenseId } })).toEqual(before);
  });
});

describe('dates the database cannot store', () => {
  const FAR = ['+010000-01-01T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '-000001-01-01T00:00:00.000Z'];
  it.each(FAR)('%s: a field error on renew, create and update, never InternalError', async (date) => {
    const expiring = (await t.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { license { id } } }', { input: { productId, maxActivations: 1, expiresAt: '2030-01-01T00:00:00Z' } }, { token })).data.createLicense.license.id;
    const renew = await t.gql('mutation($input: RenewLicenseInput!) { renewLicense(input: $input) { license { expiresAt } } }', { input: { id: expiring, expiresAt: date } }, { token });
    expect(renew.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { expiresAt: 'must be a date between the years 1 and 9999' } });
    const create = await t.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { key } }', { input: { productId, maxActivations: 1, maintenanceExpiresAt: date } }, { token });
    expect(create.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { maintenanceExpiresAt: expect.any(String) } });
    const update = await t.gql('mutation($input: UpdateLicenseInput!) { updateLicense(input: $input) { license { id } } }', { input: { id: licenseId, expiresAt: date } }, { token });
    expect(update.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { expiresAt: expect.any(String) } });
    const activity = await t.gql('query($from: DateTime) { activityLog(filter: { from: $from }) { totalCount } }', { from: date }, { token });
    expect(activity.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { from: expect.any(String) } });
  });

  it('the last storable instant is accepted', async () => {
    const expiring = (await t.gql('mutation($input: CreateLicenseInput!) { createLicense(input: $input) { license { id } } }', { input: { productId, maxActivations: 1, expiresAt: '2030-01-01T00:00:00Z' } }, { token })).data.createLicense.license.id;
    const renew = await t.gql('mutation($input: RenewLicenseInput!) { renewLicense(input: $input) { license { expiresAt } } }', { input: { id: expiring, expiresAt: '9999-12-31T23:59:59.999Z' } }, { token });
    expect(renew.errors).toBeUndefined();
    expect(renew.data.renewLicense.license.expiresAt).toBe('9999-12-31T23:59:59.999Z');
  });
});
