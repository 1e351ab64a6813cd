import { NO_META, type Actor } from '../../server/src/services/auth/actor.js';
import { createApiKey, revokeApiKey } from '../../server/src/services/auth/api-keys.js';
import type { TestApp } from './harness.js';
import { SEED_PASSWORD } from './seed.js';

/**
 * The two-tenant starting point of the cross-tenant suites (docs/architecture.md): tenant A is the
 * first-run company (Acme Corp, ACME, admin@acme.test), tenant B a second one (Globex, GLBX, admin@globex.test).
 * Each has a signed-in admin, a signed-in read-only member, a CompanyAdmin and a ReadOnly API key and a revoked
 * one, and — unless `catalog: false` (files that count their own products and licenses) — a product with two
 * licenses. Keys are created by the tenant's admin, as the console does (the activity log names the admin); the
 * read-only member by the operator (members join by invitation in the product).
 */
export interface SeededUser {
  email: string;
  userId: string;
  token: string;
}
export interface SeededKey {
  key: string;
  id: string;
}
export interface SeededTenant {
  tenantId: string;
  keyPrefix: string;
  admin: SeededUser;
  readOnly: SeededUser;
  /** CompanyAdmin key named "automation". */
  adminKey: SeededKey;
  /** ReadOnly key named "reporting". */
  readOnlyKey: SeededKey;
  /** A CompanyAdmin key named "old", revoked. */
  revokedKey: SeededKey;
  /** With `catalog` (the default): one product and two licenses of it (plaintext keys shown once). */
  product?: { id: string; name: string };
  licenses: { id: string; key: string }[];
}

export const PASSWORD = SEED_PASSWORD;

/** Services called as a tenant's admin (a signed-in CompanyAdmin), at the app's clock. */
export function adminContext(t: TestApp, tenant: { tenantId: string; admin: SeededUser }) {
  // The admin's own session (its token's family): account-security actions see its re-authentication.
  const family = (JSON.parse(Buffer.from(tenant.admin.token.split('.')[1], 'base64url').toString()) as { fam: string }).fam;
  const actor: Actor = { kind: 'user', userId: tenant.admin.userId, tenantId: tenant.tenantId, role: 'CompanyAdmin', email: tenant.admin.email, sessionFamilyId: family };
  return { db: t.deps.db, secrets: t.deps.secrets, now: t.clock.now(), actor, meta: NO_META };
}

export async function seedTwoTenants(t: TestApp, { catalog = true }: { catalog?: boolean } = {}): Promise<{ A: SeededTenant; B: SeededTenant }> {
  const setup = await t.setupAdmin();
  const A = await seedMembers(t, { tenantId: setup.user.tenantId, keyPrefix: 'ACME', domain: 'acme.test', admin: { email: setup.user.email, userId: setup.user.id, token: setup.token } }, catalog);
  const globex = await t.seedTenant({ name: 'Globex', keyPrefix: 'GLBX' });
  const globexAdmin = await t.seedUser(globex.id, { email: 'admin@globex.test', password: PASSWORD });
  const B = await seedMembers(
    t,
    { tenantId: globex.id, keyPrefix: 'GLBX', domain: 'globex.test', admin: { email: globexAdmin.email, userId: globexAdmin.id, token: (await t.login(globexAdmin.email, PASSWORD)).token } },
    catalog,
  );
  return { A, B };
}

async function seedMembers(
  t: TestApp,
  tenant: { tenantId: string; keyPrefix: string; domain: string; admin: SeededUser },
  catalog: boolean,
): Promise<SeededTenant> {
  const { tenantId, keyPrefix, admin } = tenant;
  const ctx = () => adminContext(t, tenant);

  // Members join by invitation in the product; seeding makes the read-only member as the operator does (createUser).
  const viewer = await t.seedUser(tenantId, { email: `viewer@${tenant.domain}`, password: PASSWORD, role: 'ReadOnly' });
  const readOnly = { email: viewer.email, userId: viewer.id, token: (await t.login(viewer.email, PASSWORD)).token };
  const key = async (name: string, role: 'CompanyAdmin' | 'ReadOnly') => {
    const created = await createApiKey(ctx(), { name, role });
    return { key: created.key, id: created.apiKey.id };
  };
  const readOnlyKey = await key('reporting', 'ReadOnly');
  const adminKey = await key('automation', 'CompanyAdmin');
  const revokedKey = await key('old', 'CompanyAdmin');
  await revokeApiKey(ctx(), revokedKey.id);

  const seeded: SeededTenant = { tenantId, keyPrefix, admin, readOnly, adminKey, readOnlyKey, revokedKey, licenses: [] };
  if (catalog) {
    const product = await t.seedProduct(tenantId, `${keyPrefix === 'ACME' ? 'Acme' : 'Globex'} Studio`);
    seeded.product = { id: product.id, name: product.name };
    for (const customerEmail of [`one@${tenant.domain}`, `two@${tenant.domain}`]) {
      const { key: licenseKey, license } = await t.seedLicense(tenantId, product.id, { customerEmail });
      seeded.licenses.push({ id: license.id, key: licenseKey });
    }
  }
  return seeded;
}
