// Downloads in the customer portal over real HTTP on real PostgreSQL: each of the signed-in customer's licenses lists,
// per product it grants (a bundle: its members), the published releases it may download on the chosen channel and
// the more stable ones (the public API's rules: the same lists as GET /api/v1/releases), and a download answers a
// short-lived link counted as a download, whose bytes are the file. Refused: another customer's or company's license,
// a product the license does not grant, a feature the license lacks, maintenance that ended before the release, a
// draft or yanked release, another company's artifact, a suspended license.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelease, publishRelease, yankRelease } from '../server/src/services/releases/releases.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { adminContext, seedTwoTenants, type SeededTenant } from './support/tenants.js';

let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;
const clock = new TestClock();
const PAT = 'pat@customer.test';
const SAM = 'sam@customer.test';

const bytesOf = (seed: string, size: number) => {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i += 32) createHash('sha256').update(`${seed}:${i}`).digest().copy(out, i);
  return out;
};
const local = (url: string) => url.replace('http://licensing.test', t.baseUrl);

async function upload(tenant: SeededTenant, releaseId: string, filename: string, body: Buffer) {
  const query = new URLSearchParams({ filename, platform: 'win32', arch: 'x64' });
  const response = await fetch(`${t.baseUrl}/api/releases/${releaseId}/artifacts?${query}`, { method: 'PUT', body: new Uint8Array(body), headers: { 'x-api-key': tenant.adminKey.key, 'content-type': 'application/octet-stream' } });
  expect(response.status).toBe(201);
  return ((await response.json()) as { artifact?: { id: string }; id?: string }).artifact?.id ?? ((await t.prisma.releaseArtifact.findFirstOrThrow({ where: { releaseId, filename } })).id);
}

type Channel = 'stable' | 'rc' | 'beta' | 'alpha' | 'dev';

/** A release of the tenant's product (or `productId`) with one artifact, in the status asked. */
async function release(
  tenant: SeededTenant,
  version: string,
  status: 'draft' | 'published' | 'yanked',
  requiredFeatures: string[] = [],
  options: { productId?: string; channel?: Channel; requiresMaintenance?: boolean } = {},
) {
  const ctx = () => adminContext(t, tenant);
  const created = await createRelease(ctx(), { productId: options.productId ?? tenant.product!.id, version, notes: `Notes of ${version}.`, requiredFeatures, channel: options.channel, requiresMaintenance: options.requiresMaintenance });
  const bytes = bytesOf(`${tenant.keyPrefix}-${version}`, 50_000);
  const artifactId = await upload(tenant, created.id, `Setup ${version}.exe`, bytes);
  if (status !== 'draft') await publishRelease(ctx(), created.id);
  if (status === 'yanked') await yankRelease(ctx(), created.id);
  return { releaseId: created.id, artifactId, bytes };
}

async function portal(handle: string, query: string, variables: Record<string, unknown> = {}, cookie?: string) {
  const response = await t.post(`/portal/${handle}/graphql`, { query, variables }, cookie ? { cookie } : {});
  return { data: response.json?.data, errors: response.json?.errors as { message: string; extensions?: { code?: string } }[] | undefined };
}

async function signIn(handle: string, tenantId: string, email = PAT) {
  clock.advance(16 * 60_000);
  expect((await portal(handle, 'mutation($email: String!) { requestSignInLink(input: { email: $email }) { email } }', { email })).errors).toBeUndefined();
  const row = await t.prisma.emailOutbox.findFirstOrThrow({ where: { tenantId, kind: 'portal-sign-in', toAddress: email }, orderBy: { createdAt: 'desc' } });
  const response = await t.post(`/portal/${handle}/graphql`, { query: 'mutation($token: String!) { signIn(input: { token: $token }) { customer { email } } }', variables: { token: t.outboxToken(row) } }, {});
  return response.headers.get('set-cookie')!.split(';')[0];
}

const DOWNLOADS = `query($channel: ReleaseChannel) { downloads(channel: $channel) {
  licenseId keyHint productName refusal products { productId productName releases { version channel notes publishedAt artifacts { id filename platform arch size } } } } }`;
const DOWNLOAD = 'mutation($licenseId: ID!, $artifactId: ID!) { downloadArtifact(input: { licenseId: $licenseId, artifactId: $artifactId }) { url expiresAt } }';

let cookie: string;
let proLicense: string;
let basicLicense: string;
let othersLicense: string;
let globexLicense: string;
let v1: Awaited<ReturnType<typeof release>>;
let v2: Awaited<ReturnType<typeof release>>;
let draft: Awaited<ReturnType<typeof release>>;
let yanked: Awaited<ReturnType<typeof release>>;
let globexRelease: Awaited<ReturnType<typeof release>>;
let proKey: string;
let samCookie: string;
let bundleLicense: string;
let lapsedLicense: string;
let suite: { id: string; name: string };
let extra: { id: string; name: string };
let outside: { id: string; name: string };
let extraV1: Awaited<ReturnType<typeof release>>;
let extraV11: Awaited<ReturnType<typeof release>>;
let outsideRelease: Awaited<ReturnType<typeof release>>;

interface Listed {
  licenseId: string;
  productName: string;
  refusal: string | null;
  products: { productId: string; productName: string; releases: { version: string; channel: string; artifacts: { id: string }[] }[] }[];
}
/** The signed-in customer's downloads on `channel`, by license id. */
async function downloads(session: string, channel?: string) {
  const { data, errors } = await portal('acme', DOWNLOADS, channel ? { channel } : {}, session);
  expect(errors).toBeUndefined();
  return new Map((data.downloads as Listed[]).map((row) => [row.licenseId, row]));
}
/** Per product name, the versions listed. */
const versionsOf = (listed: Listed) => Object.fromEntries(listed.products.map((product) => [product.productName, product.releases.map((r) => r.version)]));

beforeAll(async () => {
  t = await startTestApp({ clock, env: { RATE_LIMIT_SIGNIN_PER_IP_PER_MINUTE: '1000', RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '1000' } });
  ({ A, B } = await seedTwoTenants(t));
  await t.prisma.tenant.update({ where: { id: A.tenantId }, data: { portalHandle: 'acme' } });
  await t.prisma.tenant.update({ where: { id: B.tenantId }, data: { portalHandle: 'globex' } });
  const pro = await t.seedLicense(A.tenantId, A.product!.id, { customerEmail: PAT, features: ['pro'] });
  proLicense = pro.license.id;
  proKey = pro.key;
  basicLicense = (await t.seedLicense(A.tenantId, A.product!.id, { customerEmail: PAT })).license.id;
  othersLicense = (await t.seedLicense(A.tenantId, A.product!.id, { customerEmail: 'other@customer.test', features: ['pro'] })).license.id;
  globexLicense = (await t.seedLicense(B.tenantId, B.product!.id, { customerEmail: PAT, features: ['pro'] })).license.id;
  v1 = await release(A, '1.0.0', 'published');
  v2 = await release(A, '2.0.0', 'published', ['pro']);
  draft = await release(A, '3.0.0', 'draft');
  yanked = await release(A, '2.5.0', 'yanked');
  globexRelease = await release(B, '9.0.0', 'published');
  // The less stable channels, each with one release; a yanked beta and a draft rc are never listed.
  for (const [version, channel] of [['2.1.0-rc.1', 'rc'], ['2.1.0-beta.1', 'beta'], ['2.1.0-alpha.1', 'alpha'], ['2.2.0-dev.1', 'dev']] as const) await release(A, version, 'published', [], { channel });
  await release(A, '2.1.0-beta.2', 'yanked', [], { channel: 'beta' });
  await release(A, '2.1.0-rc.2', 'draft', [], { channel: 'rc' });

  // Sam: a bundle of Acme Studio and Acme Extra (not Acme Outside), without the feature pro; and a license of Acme
  // Extra whose maintenance ended before its releases were published.
  extra = await t.seedProduct(A.tenantId, 'Acme Extra');
  outside = await t.seedProduct(A.tenantId, 'Acme Outside');
  suite = await t.seedProduct(A.tenantId, 'Acme Suite', [A.product!.name, 'Acme Extra']);
  bundleLicense = (await t.seedLicense(A.tenantId, suite.id, { customerEmail: SAM })).license.id;
  lapsedLicense = (await t.seedLicense(A.tenantId, extra.id, { customerEmail: SAM, maintenanceExpiresAt: new Date(clock.now().getTime() - 86_400_000) })).license.id;
  extraV1 = await release(A, '1.0.0', 'published', [], { productId: extra.id });
  extraV11 = await release(A, '1.1.0', 'published', [], { productId: extra.id, requiresMaintenance: true });
  await release(A, '1.2.0-beta.1', 'published', [], { productId: extra.id, channel: 'beta' });
  outsideRelease = await release(A, '1.0.0', 'published', [], { productId: outside.id });
  cookie = await signIn('acme', A.tenantId);
  samCookie = await signIn('acme', A.tenantId, SAM);
}, 120_000);
afterAll(() => t?.close());

describe('portal downloads', () => {
  it('lists per license the published stable releases it may download, newest first', async () => {
    const byId = await downloads(cookie);
    expect([...byId.keys()].sort()).toEqual([proLicense, basicLicense].sort());
    expect(byId.get(proLicense)!.products.map((product) => product.productId)).toEqual([A.product!.id]);
    expect(versionsOf(byId.get(proLicense)!)).toEqual({ [A.product!.name]: ['2.0.0', '1.0.0'] });
    expect(versionsOf(byId.get(basicLicense)!)).toEqual({ [A.product!.name]: ['1.0.0'] });
    expect(byId.get(proLicense)!.products[0].releases[1].artifacts.map((a) => a.id)).toEqual([v1.artifactId]);
    expect(await downloads(cookie, 'STABLE')).toEqual(byId);
  });

  it('a channel lists its releases and the more stable ones, as GET /api/v1/releases does; never a draft or a yanked one', async () => {
    const expected = {
      STABLE: ['2.0.0', '1.0.0'],
      RC: ['2.1.0-rc.1', '2.0.0', '1.0.0'],
      BETA: ['2.1.0-rc.1', '2.1.0-beta.1', '2.0.0', '1.0.0'],
      ALPHA: ['2.1.0-rc.1', '2.1.0-beta.1', '2.1.0-alpha.1', '2.0.0', '1.0.0'],
      DEV: ['2.2.0-dev.1', '2.1.0-rc.1', '2.1.0-beta.1', '2.1.0-alpha.1', '2.0.0', '1.0.0'],
    };
    for (const [channel, versions] of Object.entries(expected)) {
      const listed = (await downloads(cookie, channel)).get(proLicense)!;
      expect(versionsOf(listed), channel).toEqual({ [A.product!.name]: versions });
      const api = await t.get(`/api/v1/releases?${new URLSearchParams({ product: A.product!.name, channel: channel.toLowerCase() })}`, { authorization: `License ${proKey}` });
      expect(api.json.releases.map((r: { version: string }) => r.version), `public API, ${channel}`).toEqual(versions);
    }
    const beta = (await downloads(cookie, 'BETA')).get(proLicense)!.products[0].releases;
    expect(beta.map((r) => r.channel)).toEqual(['RC', 'BETA', 'STABLE', 'STABLE']);
    // A channel that does not exist is refused before the service runs.
    const unknown = await portal('acme', DOWNLOADS, { channel: 'NIGHTLY' }, cookie);
    expect(unknown.errors?.length).toBe(1);
    expect(unknown.data ?? null).toBeNull();
  });

  it('a bundle lists each member product it grants, by name, under the same rules (features, maintenance)', async () => {
    const byId = await downloads(samCookie);
    expect([...byId.keys()].sort()).toEqual([bundleLicense, lapsedLicense].sort());
    const bundle = byId.get(bundleLicense)!;
    expect(bundle.productName).toBe('Acme Suite');
    // The bundle itself has no release: only its members, by name. Without the feature pro, Studio 2.0.0 is not listed.
    expect(bundle.products.map((product) => product.productId)).toEqual([extra.id, A.product!.id]);
    expect(versionsOf(bundle)).toEqual({ 'Acme Extra': ['1.1.0', '1.0.0'], [A.product!.name]: ['1.0.0'] });
    // Maintenance ended before 1.1.0 (which requires it) was published.
    expect(versionsOf(byId.get(lapsedLicense)!)).toEqual({ 'Acme Extra': ['1.0.0'] });
    expect(versionsOf((await downloads(samCookie, 'BETA')).get(bundleLicense)!)).toEqual({
      'Acme Extra': ['1.2.0-beta.1', '1.1.0', '1.0.0'],
      [A.product!.name]: ['2.1.0-rc.1', '2.1.0-beta.1', '1.0.0'],
    });
    // Each member as the public API lists it for the bundle's key (named by its name or its id, in either case); not
    // a product outside the bundle.
    const suiteKey = (await t.seedLicense(A.tenantId, suite.id, { customerEmail: 'key-holder@customer.test' })).key;
    const publicList = async (product: string) => (await t.get(`/api/v1/releases?${new URLSearchParams({ product })}`, { authorization: `License ${suiteKey}` })).json;
    for (const member of [extra, A.product!]) {
      for (const named of [member.name, member.id, member.id.toUpperCase()]) {
        expect((await publicList(named)).releases.map((r: { version: string }) => r.version), named).toEqual(versionsOf(bundle)[member.name]);
      }
    }
    expect(await publicList(outside.id)).toMatchObject({ isValid: false, errorCode: 'ProductMismatch' });
    // A member's file downloads with the bundle license.
    const { data, errors } = await portal('acme', DOWNLOAD, { licenseId: bundleLicense, artifactId: extraV1.artifactId }, samCookie);
    expect(errors).toBeUndefined();
    expect(Buffer.from(await (await fetch(local(data.downloadArtifact.url))).arrayBuffer()).equals(extraV1.bytes)).toBe(true);
  });

  it('a bundle’s own releases are listed first, under its name', async () => {
    const own = await release(A, '3.0.0', 'published', [], { productId: suite.id });
    const bundle = (await downloads(samCookie)).get(bundleLicense)!;
    expect(bundle.products.map((product) => product.productName)).toEqual(['Acme Suite', 'Acme Extra', A.product!.name]);
    expect(bundle.products[0].releases.map((r) => r.artifacts[0].id)).toEqual([own.artifactId]);
    expect((await portal('acme', DOWNLOAD, { licenseId: bundleLicense, artifactId: own.artifactId }, samCookie)).errors).toBeUndefined();
    await yankRelease(adminContext(t, A), own.releaseId);
    expect((await downloads(samCookie)).get(bundleLicense)!.products.map((product) => product.productName)).toEqual(['Acme Extra', A.product!.name]);
  });

  it('no id reaches a product the license does not grant, another customer’s license or another company', async () => {
    const code = async (session: string, licenseId: string, artifactId: string) => (await portal('acme', DOWNLOAD, { licenseId, artifactId }, session)).errors?.[0].extensions?.code ?? 'ok';
    const before = await t.prisma.releaseArtifact.findMany({ select: { id: true, downloadCount: true }, orderBy: { id: 'asc' } });
    // A product outside the bundle, of the same company.
    expect(await code(samCookie, bundleLicense, outsideRelease.artifactId)).toBe('NotFound');
    // A bundle member through a plain license of another product.
    expect(await code(samCookie, lapsedLicense, v1.artifactId)).toBe('NotFound');
    expect(await code(cookie, proLicense, extraV1.artifactId)).toBe('NotFound');
    // Another company's file, a draft, a yanked release, through the bundle.
    expect(await code(samCookie, bundleLicense, globexRelease.artifactId)).toBe('NotFound');
    expect(await code(samCookie, bundleLicense, draft.artifactId)).toBe('NotFound');
    expect(await code(samCookie, bundleLicense, yanked.artifactId)).toBe('NotFound');
    // Another customer's license, either way; another company's license.
    expect(await code(cookie, bundleLicense, extraV1.artifactId)).toBe('NotFound');
    expect(await code(samCookie, proLicense, v1.artifactId)).toBe('NotFound');
    expect(await code(samCookie, globexLicense, globexRelease.artifactId)).toBe('NotFound');
    // A member's release needing a feature the bundle license lacks; maintenance ended before the release.
    expect(await code(samCookie, bundleLicense, v2.artifactId)).toBe('Forbidden');
    expect(await code(samCookie, lapsedLicense, extraV11.artifactId)).toBe('Forbidden');
    expect(await t.prisma.releaseArtifact.findMany({ select: { id: true, downloadCount: true }, orderBy: { id: 'asc' } })).toEqual(before);
  });

  it('answers a short-lived link whose bytes are the file, counted as a download', async () => {
    const { data, errors } = await portal('acme', DOWNLOAD, { licenseId: proLicense, artifactId: v2.artifactId }, cookie);
    expect(errors).toBeUndefined();
    const response = await fetch(local(data.downloadArtifact.url));
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(v2.bytes)).toBe(true);
    expect((await t.prisma.releaseArtifact.findUniqueOrThrow({ where: { id: v2.artifactId } })).downloadCount).toBe(1);
    expect((await t.prisma.release.findUniqueOrThrow({ where: { id: v2.releaseId } })).downloadCount).toBe(1);
  });

  it('refuses a license not the customer’s, a missing feature, a draft, a yanked release, another company’s artifact', async () => {
    const code = async (licenseId: string, artifactId: string) => (await portal('acme', DOWNLOAD, { licenseId, artifactId }, cookie)).errors?.[0].extensions?.code;
    expect(await code(othersLicense, v1.artifactId)).toBe('NotFound');
    expect(await code(globexLicense, globexRelease.artifactId)).toBe('NotFound');
    expect(await code(basicLicense, v2.artifactId)).toBe('Forbidden');
    expect(await code(proLicense, draft.artifactId)).toBe('NotFound');
    expect(await code(proLicense, yanked.artifactId)).toBe('NotFound');
    expect(await code(proLicense, globexRelease.artifactId)).toBe('NotFound');
    expect(await code(proLicense, 'not-a-uuid')).toBe('NotFound');
    // Signed out: nothing.
    expect((await portal('acme', DOWNLOAD, { licenseId: proLicense, artifactId: v1.artifactId })).errors?.[0].extensions?.code).toBe('Unauthorized');
    expect((await t.prisma.releaseArtifact.findUniqueOrThrow({ where: { id: v1.artifactId } })).downloadCount).toBe(0);
  });

  it('a suspended license lists nothing and downloads nothing', async () => {
    await t.prisma.license.update({ where: { id: basicLicense }, data: { status: 'suspended' } });
    const basic = (await downloads(cookie, 'DEV')).get(basicLicense)!;
    expect(basic.products).toEqual([]);
    expect(basic.refusal).toMatch(/suspended/i);
    expect((await portal('acme', DOWNLOAD, { licenseId: basicLicense, artifactId: v1.artifactId }, cookie)).errors?.[0].extensions?.code).toBe('Forbidden');
    await t.prisma.license.update({ where: { id: basicLicense }, data: { status: 'active' } });
  });
});
