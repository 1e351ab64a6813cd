// Downloads in the customer portal over real HTTP on real PostgreSQL: each of the signed-in customer's licenses lists
// the published releases it may download (the public API's rules: required features, stable channel), and a
// download answers a short-lived link counted as a download, whose bytes are the file. Refused: another customer's
// or company's license, a feature the license lacks, a draft or yanked release, another company's artifact, a
// suspended license.
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

/** A release of the tenant's product with one artifact, in the status asked. */
async function release(tenant: SeededTenant, version: string, status: 'draft' | 'published' | 'yanked', requiredFeatures: string[] = []) {
  const ctx = () => adminContext(t, tenant);
  const created = await createRelease(ctx(), { productId: tenant.product!.id, version, notes: `Notes of ${version}.`, requiredFeatures });
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

async function signIn(handle: string, tenantId: string) {
  clock.advance(16 * 60_000);
  expect((await portal(handle, 'mutation($email: String!) { requestSignInLink(input: { email: $email }) { email } }', { email: PAT })).errors).toBeUndefined();
  const row = await t.prisma.emailOutbox.findFirstOrThrow({ where: { tenantId, kind: 'portal-sign-in', toAddress: PAT }, orderBy: { createdAt: 'desc' } });
  const response = await t.post(`/portal/${handle}/graphql`, { query: 'mutation($token: String!) { signIn(input: { token: $token }) { customer { email } } }', variables: { token: t.outboxToken(row) } }, {});
  return response.headers.get('set-cookie')!.split(';')[0];
}

const DOWNLOADS = '{ downloads { licenseId keyHint productName refusal releases { version notes publishedAt artifacts { id filename platform arch size } } } }';
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

beforeAll(async () => {
  t = await startTestApp({ clock, env: { RATE_LIMIT_SIGNIN_PER_IP_PER_MINUTE: '1000', RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '1000' } });
  ({ A, B } = await seedTwoTenants(t));
  await t.prisma.tenant.update({ where: { id: A.tenantId }, data: { portalHandle: 'acme' } });
  await t.prisma.tenant.update({ where: { id: B.tenantId }, data: { portalHandle: 'globex' } });
  proLicense = (await t.seedLicense(A.tenantId, A.product!.id, { customerEmail: PAT, features: ['pro'] })).license.id;
  basicLicense = (await t.seedLicense(A.tenantId, A.product!.id, { customerEmail: PAT })).license.id;
  othersLicense = (await t.seedLicense(A.tenantId, A.product!.id, { customerEmail: 'other@customer.test', features: ['pro'] })).license.id;
  globexLicense = (await t.seedLicense(B.tenantId, B.product!.id, { customerEmail: PAT, features: ['pro'] })).license.id;
  v1 = await release(A, '1.0.0', 'published');
  v2 = await release(A, '2.0.0', 'published', ['pro']);
  draft = await release(A, '3.0.0', 'draft');
  yanked = await release(A, '2.5.0', 'yanked');
  globexRelease = await release(B, '9.0.0', 'published');
  cookie = await signIn('acme', A.tenantId);
}, 120_000);
afterAll(() => t?.close());

describe('portal downloads', () => {
  it('lists per license the published releases it may download, newest first', async () => {
    const { data, errors } = await portal('acme', DOWNLOADS, {}, cookie);
    expect(errors).toBeUndefined();
    const byId = new Map((data.downloads as { licenseId: string; refusal: string | null; releases: { version: string; artifacts: { id: string }[] }[] }[]).map((row) => [row.licenseId, row]));
    expect([...byId.keys()].sort()).toEqual([proLicense, basicLicense].sort());
    expect(byId.get(proLicense)!.releases.map((r) => r.version)).toEqual(['2.0.0', '1.0.0']);
    expect(byId.get(basicLicense)!.releases.map((r) => r.version)).toEqual(['1.0.0']);
    expect(byId.get(proLicense)!.releases[1].artifacts.map((a) => a.id)).toEqual([v1.artifactId]);
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
    const { data } = await portal('acme', DOWNLOADS, {}, cookie);
    const basic = (data.downloads as { licenseId: string; refusal: string | null; releases: unknown[] }[]).find((row) => row.licenseId === basicLicense)!;
    expect(basic.releases).toEqual([]);
    expect(basic.refusal).toMatch(/suspended/i);
    expect((await portal('acme', DOWNLOAD, { licenseId: basicLicense, artifactId: v1.artifactId }, cookie)).errors?.[0].extensions?.code).toBe('Forbidden');
    await t.prisma.license.update({ where: { id: basicLicense }, data: { status: 'active' } });
  });
});
