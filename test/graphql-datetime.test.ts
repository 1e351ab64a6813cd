import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';

// The DateTime scalar (graphql-scalars, server/src/graphql/builder.ts) on the wire: answered as an ISO 8601 string in
// UTC with milliseconds (what the console and the SDK parse), read from an RFC 3339 date-time with any offset; anything
// else is the client's mistake (InvalidRequest) and changes nothing.
let t: TestApp;
let token: string;
let productId: string;

beforeAll(async () => {
  t = await startTestApp();
  const admin = await t.setupAdmin();
  token = admin.token;
  productId = (await t.seedProduct(admin.user.tenantId)).id;
});
afterAll(() => t?.close());

const CREATE = `mutation($input: CreateLicenseInput!) { createLicense(input: $input) { license { expiresAt createdAt maintenanceExpiresAt } } }`;

describe('DateTime', () => {
  it('answers UTC ISO 8601 with milliseconds, whatever offset it was sent with', async () => {
    const data = await t.gqlData(CREATE, { input: { productId, maxActivations: 1, expiresAt: '2027-03-01T10:00:00+02:00', maintenanceExpiresAt: null } }, { token });
    expect(data.createLicense.license).toEqual({ expiresAt: '2027-03-01T08:00:00.000Z', createdAt: t.clock.now().toISOString(), maintenanceExpiresAt: null });
    const literal = await t.gqlData(`mutation { createLicense(input: { productId: "${productId}", maxActivations: 1, expiresAt: "2027-03-01T23:59:59.999Z" }) { license { expiresAt } } }`, {}, { token });
    expect(literal.createLicense.license.expiresAt).toBe('2027-03-01T23:59:59.999Z');
  });

  it('refuses what is not a date-time, as a variable or a literal, before any license is created', async () => {
    const before = await t.prisma.license.count();
    for (const expiresAt of ['next tuesday', '2027-02-30T00:00:00Z', 1_700_000_000_000]) {
      const response = await t.gql(CREATE, { input: { productId, maxActivations: 1, expiresAt } }, { token });
      expect(response.errors?.[0].extensions?.code, String(expiresAt)).toBe('InvalidRequest');
    }
    const literal = await t.gql(`mutation { createLicense(input: { productId: "${productId}", maxActivations: 1, expiresAt: "soon" }) { license { id } } }`, {}, { token });
    expect(literal.errors?.[0].message).toMatch(/DateTime/);
    expect(await t.prisma.license.count()).toBe(before);
  });
});
