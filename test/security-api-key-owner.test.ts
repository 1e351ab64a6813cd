import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';

// A key created with X-Api-Key has a human owner; deactivating the owner or revoking the
// parent disables every derived key.
let t: TestApp;
let admin: Awaited<ReturnType<TestApp['setupAdmin']>>;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.setupAdmin();
});
afterAll(() => t.close());

const createKey = async (auth: { token?: string; apiKey?: string }, name: string) =>
  (await t.gqlData(`mutation { createApiKey(input: { name: "${name}", role: COMPANY_ADMIN }) { key apiKey { id } } }`, {}, auth)).createApiKey as { key: string; apiKey: { id: string } };
const works = async (key: string) => (await t.gql('{ company { name } }', {}, { apiKey: key })).status === 200;

describe('API keys trace to a human', () => {
  it("the issue's scenario: after the human is deactivated, keys made by keys stop creating keys and products", async () => {
    await t.seedUser(admin.user.tenantId, { email: 'ops@acme.test' });
    const ops = await t.login('ops@acme.test');
    const first = await createKey({ token: ops.token }, 'first');
    const second = await createKey({ apiKey: first.key }, 'second');
    const third = await createKey({ apiKey: second.key }, 'third');
    const opsId = (await t.prisma.user.findUniqueOrThrow({ where: { email: 'ops@acme.test' } })).id;
    expect(await t.prisma.apiKey.findUniqueOrThrow({ where: { id: second.apiKey.id } })).toMatchObject({ createdById: opsId, parentKeyId: first.apiKey.id });
    expect(await t.prisma.apiKey.findUniqueOrThrow({ where: { id: third.apiKey.id } })).toMatchObject({ createdById: opsId, parentKeyId: second.apiKey.id });

    await t.gql(`mutation { deactivateUser(input: { id: "${opsId}" }) { user { active } } }`, {}, { token: admin.token });
    for (const key of [first, second, third]) {
      expect(await works(key.key)).toBe(false);
      const product = await t.gql('mutation { createProduct(input: { name: "Backdoor", slug: "backdoor" }) { product { id } } }', {}, { apiKey: key.key });
      expect(product.status).toBe(401);
      await expect(createKey({ apiKey: key.key }, 'fourth')).rejects.toThrow();
    }
    expect(await t.prisma.apiKey.count({ where: { createdById: opsId, revokedAt: null } })).toBe(0);
    expect(await t.prisma.product.count({ where: { name: 'Backdoor' } })).toBe(0);
  });

  it('revoking a parent key revokes the keys derived from it, not its siblings or ancestors', async () => {
    const root = await createKey({ token: admin.token }, 'root');
    const child = await createKey({ apiKey: root.key }, 'child');
    const grandchild = await createKey({ apiKey: child.key }, 'grandchild');
    const sibling = await createKey({ apiKey: root.key }, 'sibling');
    await t.gql(`mutation { revokeApiKey(input: { id: "${child.apiKey.id}" }) { apiKey { revokedAt } } }`, {}, { token: admin.token });
    expect(await works(child.key)).toBe(false);
    expect(await works(grandchild.key)).toBe(false);
    expect(await works(root.key)).toBe(true);
    expect(await works(sibling.key)).toBe(true);
  });

  it('a key without a human owner (from before this change) authenticates nobody', async () => {
    const legacy = await createKey({ token: admin.token }, 'legacy');
    await t.prisma.apiKey.update({ where: { id: legacy.apiKey.id }, data: { createdById: null } });
    expect(await works(legacy.key)).toBe(false);
  });
});

describe("a key never acts above its owner's current role", () => {
  it("a demoted owner's admin keys (and the keys they minted) act read-only at most, and again as admins once re-promoted", async () => {
    const owner = await t.seedUser(admin.user.tenantId, { email: 'demoted@acme.test' });
    const session = await t.login('demoted@acme.test');
    const key = await createKey({ token: session.token }, 'owner key');
    const minted = await createKey({ apiKey: key.key }, 'minted by key');
    const setRole = async (role: string) => {
      const response = await t.gql(`mutation { updateUser(input: { id: "${owner.id}", role: ${role} }) { user { role } } }`, {}, { token: admin.token });
      expect(response.errors).toBeUndefined();
    };
    await setRole('READ_ONLY');
    for (const apiKey of [key.key, minted.key]) {
      expect(await works(apiKey)).toBe(true); // reading is still allowed
      const refused = await t.gql('mutation { createApiKey(input: { name: "more", role: COMPANY_ADMIN }) { key } }', {}, { apiKey });
      expect(refused.errors?.[0].extensions?.code).toBe('Forbidden');
      const product = await t.gql('mutation { createProduct(input: { name: "Sneaky" }) { product { id } } }', {}, { apiKey });
      expect(product.errors?.[0].extensions?.code).toBe('Forbidden');
    }
    expect(await t.prisma.apiKey.count({ where: { name: 'more' } })).toBe(0);
    expect(await t.prisma.product.count({ where: { name: 'Sneaky' } })).toBe(0);
    // The keys themselves still say COMPANY_ADMIN: the bound is applied when they are used.
    await setRole('COMPANY_ADMIN');
    const allowed = await t.gql('mutation { createProduct(input: { name: "Allowed" }) { product { id } } }', {}, { apiKey: minted.key });
    expect(allowed.errors).toBeUndefined();
  });
});
