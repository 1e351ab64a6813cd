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
