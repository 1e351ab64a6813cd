import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';
import { seedTwoTenants, type SeededTenant } from './support/tenants.js';

// The shared two-tenant seed (test/support/tenants.ts) as the suites rely on it: every credential it hands out
// works with its role, the revoked key does not, and each tenant sees only its own catalog. Over REST only.

let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;

beforeAll(async () => {
  t = await startTestApp();
  ({ A, B } = await seedTwoTenants(t));
});
afterAll(() => t.close());

const stats = (auth: { token?: string; apiKey?: string }) =>
  t.get('/api/dashboard/stats', auth.token ? { authorization: `Bearer ${auth.token}` } : { 'x-api-key': auth.apiKey! });

describe('seedTwoTenants', () => {
  it('gives each tenant its own admin, read-only member, keys and catalog', () => {
    expect([A.keyPrefix, B.keyPrefix]).toEqual(['ACME', 'GLBX']);
    expect([A.admin.email, A.readOnly.email, B.admin.email, B.readOnly.email]).toEqual(['admin@acme.test', 'viewer@acme.test', 'admin@globex.test', 'viewer@globex.test']);
    for (const tenant of [A, B]) {
      expect(tenant.product).toMatchObject({ id: expect.any(String) });
      expect(tenant.licenses.map((license) => license.key)).toEqual([expect.stringMatching(new RegExp(`^${tenant.keyPrefix}-`)), expect.stringMatching(new RegExp(`^${tenant.keyPrefix}-`))]);
    }
  });

  it('every credential answers for its own tenant only; the revoked key is refused', async () => {
    for (const tenant of [A, B]) {
      for (const auth of [{ token: tenant.admin.token }, { token: tenant.readOnly.token }, { apiKey: tenant.adminKey.key }, { apiKey: tenant.readOnlyKey.key }]) {
        const response = await stats(auth);
        expect(response.status, JSON.stringify(auth)).toBe(200);
        expect(response.json).toMatchObject({ totalLicenses: 2, activeLicenses: 2, products: 1, activations: 0 });
      }
      const revoked = await stats({ apiKey: tenant.revokedKey.key });
      expect(revoked.status).toBe(401);
      expect(revoked.json.error.code).toBe('Unauthorized');
    }
    const users = await t.prisma.user.findMany({ select: { email: true, role: true, tenantId: true }, orderBy: { email: 'asc' } });
    expect(users).toEqual([
      { email: 'admin@acme.test', role: 'CompanyAdmin', tenantId: A.tenantId },
      { email: 'admin@globex.test', role: 'CompanyAdmin', tenantId: B.tenantId },
      { email: 'viewer@acme.test', role: 'ReadOnly', tenantId: A.tenantId },
      { email: 'viewer@globex.test', role: 'ReadOnly', tenantId: B.tenantId },
    ]);
  });

  it("a tenant's license keys validate; the other tenant's management view does not include them", async () => {
    for (const license of [...A.licenses, ...B.licenses]) expect((await t.post('/api/v1/validate', { licenseKey: license.key })).json.isValid).toBe(true);
    const mine = (await stats({ token: A.admin.token })).json;
    const theirs = (await stats({ token: B.admin.token })).json;
    expect(mine.totalLicenses + theirs.totalLicenses).toBe(await t.prisma.license.count());
  });
});
