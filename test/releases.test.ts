// Release distribution over real HTTP on real PostgreSQL: staff upload (streamed, checked, all-or-nothing), the public
// release API a license sees (list, upgrade check, download link, the file behind it), the signature checked against
// the JWKS, and the refusals: hostile file names, a cut upload, a checksum mismatch, expired/forged/other-license
// links, other companies' ids, drafts and yanked releases.
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import fc from 'fast-check';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelease, publishRelease, yankRelease } from '../server/src/services/releases/releases.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { adminContext, seedTwoTenants, type SeededTenant } from './support/tenants.js';
import { runCliAsync } from './support/processes.js';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';

let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;
const clock = new TestClock();
const product = () => A.product!;
/** A license of A's product with the feature `pro` and maintenance until 2026-07-01. */
let proKey: string;
/** A license of A's product without features, maintenance ended 2026-05-01. */
let basicKey: string;

const bytesOf = (seed: string, size: number) => {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i += 32) createHash('sha256').update(`${seed}:${i}`).digest().copy(out, i);
  return out;
};
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** PUT with a Buffer body (t.request JSON-encodes objects; a Buffer goes as is through fetch). */
async function put(releaseId: string, query: Record<string, string>, body: Buffer, apiKey = A.adminKey.key) {
  const response = await fetch(`${t.baseUrl}/api/releases/${releaseId}/artifacts?${new URLSearchParams(query)}`, { method: 'PUT', body: new Uint8Array(body), headers: { 'x-api-key': apiKey, 'content-type': 'application/octet-stream' } });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined, text };
}

/** Every UTF-8 byte percent-encoded (a lone surrogate as U+FFFD). */
const percentEncoded = (text: string) => [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
const licenseHeader = (key: string) => ({ authorization: `License ${key}` });
const publicGet = (pathname: string, params: Record<string, string>, key: string) => t.get(`/api/v1${pathname}?${new URLSearchParams(params)}`, licenseHeader(key));
/** A download link of this server, fetched from the test's server (PUBLIC_URL is http://licensing.test). */
const local = (url: string) => url.replace('http://licensing.test', t.baseUrl);

async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)));
}
const releasesDir = () => path.join(t.deps.config.dataDir, 'releases');

let v1: { id: string };
let v2: { id: string };
const winBytes = bytesOf('win', 300_000);
const macBytes = bytesOf('mac', 123_457);

beforeAll(async () => {
  t = await startTestApp({ clock });
  ({ A, B } = await seedTwoTenants(t));
  proKey = (await t.seedLicense(A.tenantId, product().id, { features: ['pro'], maintenanceExpiresAt: new Date('2026-07-01T00:00:00Z') })).key;
  basicKey = (await t.seedLicense(A.tenantId, product().id, { maintenanceExpiresAt: new Date('2026-05-01T00:00:00Z') })).key;

  // 1.0.0: published before either maintenance ended (the clock starts 2026-06-01; moved back for it).
  const ctx = () => adminContext(t, A);
  clock.set('2026-04-01T12:00:00.000Z');
  v1 = await createRelease(ctx(), { productId: product().id, version: 'v1.0.0', notes: 'First.' });
  expect((await put(v1.id, { filename: 'Acme Setup 1.0.0.exe', platform: 'win32', arch: 'x64' }, winBytes)).status).toBe(201);
  await publishRelease(ctx(), v1.id);
  clock.set('2026-06-01T12:00:00.000Z');
  // 2.0.0: requires maintenance (basic's ended) and the feature pro.
  v2 = await createRelease(ctx(), { productId: product().id, version: '2.0.0', requiresMaintenance: true, requiredFeatures: ['pro'] });
});
afterAll(async () => {
  await t?.close();
});

describe('upload (PUT /api/releases/{id}/artifacts)', () => {
  it('streams two platforms into a draft, hashed and signed; the answer names the digests', async () => {
    const win = await put(v2.id, { filename: 'Acme Setup 2.0.0.exe', platform: 'win32', arch: 'x64', sha256: sha256(winBytes) }, winBytes);
    expect(win.status).toBe(201);
    expect(win.json).toMatchObject({ filename: 'Acme Setup 2.0.0.exe', platform: 'win32', arch: 'x64', filetype: 'exe', size: winBytes.length, sha256: sha256(winBytes) });
    const mac = await put(v2.id, { filename: 'Acme-2.0.0-universal.dmg', platform: 'darwin', arch: 'universal' }, macBytes);
    expect(mac.status).toBe(201);
    expect(mac.json.sha512).toBe(createHash('sha512').update(macBytes).digest('hex'));
    // The same name twice: Conflict, nothing added.
    expect((await put(v2.id, { filename: 'Acme-2.0.0-universal.dmg', platform: 'darwin', arch: 'universal' }, macBytes)).status).toBe(409);
  });

  it('refuses hostile file names before reading the body, and leaves nothing', async () => {
    const before = await filesUnder(releasesDir());
    for (const filename of ['../../etc/passwd', '..', 'a/b.exe', 'a\\b.exe', 'C:setup.exe', 'evil\u0000.exe', 'line\nbreak.exe', 'bell\u0007.exe', 'rtl\u202Eexe.txt', '.hidden', ' spaced.exe', 'x'.repeat(256), '']) {
      const response = await put(v2.id, { filename, platform: 'win32', arch: 'x64', filetype: 'exe' }, Buffer.from('MZ'));
      expect(response.status, JSON.stringify(filename)).toBe(400);
      expect(response.json.error.code).toBe('InvalidRequest');
      expect(response.json.error.fields.filename).toBeTruthy();
    }
    expect(await filesUnder(releasesDir())).toEqual(before);
    expect(await t.prisma.releaseArtifact.count({ where: { releaseId: v2.id } })).toBe(2);
  });

  it('a checksum mismatch stores nothing: no row, no file', async () => {
    const before = await filesUnder(releasesDir());
    const response = await put(v2.id, { filename: 'linux.AppImage', platform: 'linux', arch: 'x64', sha256: sha256(Buffer.from('something else')) }, bytesOf('linux', 50_000));
    expect(response.status).toBe(400);
    expect(response.json.error.message).toContain('Checksum mismatch');
    expect(await t.prisma.releaseArtifact.count({ where: { releaseId: v2.id } })).toBe(2);
    expect(await filesUnder(releasesDir())).toEqual(before);
  });

  it('an upload cut halfway stores nothing: no row, no file (temporary file removed)', async () => {
    const before = await filesUnder(releasesDir());
    const url = new URL(`${t.baseUrl}/api/releases/${v2.id}/artifacts?${new URLSearchParams({ filename: 'cut.AppImage', platform: 'linux', arch: 'x64' })}`);
    await new Promise<void>((resolve) => {
      const req = httpRequest(url, { method: 'PUT', headers: { 'x-api-key': A.adminKey.key, 'content-length': String(4 * 1024 * 1024) } });
      req.on('error', () => resolve());
      req.on('response', () => resolve());
      req.write(Buffer.alloc(1024 * 1024, 7), () => setTimeout(() => req.destroy(), 200));
      req.on('close', () => resolve());
    });
    // The server notices the reset and removes the temporary file: wait for it (no timing assumption: poll).
    for (let i = 0; i < 600 && (await filesUnder(releasesDir())).length !== before.length; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await filesUnder(releasesDir())).toEqual(before);
    expect(await t.prisma.releaseArtifact.count({ where: { releaseId: v2.id } })).toBe(2);
  });

  it('over RELEASES_MAX_UPLOAD_MB, a read-only key, another company, a published release: refused', async () => {
    const small = await startTestApp({ env: { RELEASES_MAX_UPLOAD_MB: '1' } });
    try {
      const { A: a } = await seedTwoTenants(small);
      const draft = await createRelease(adminContext(small, a), { productId: a.product!.id, version: '1.0.0' });
      const big = await fetch(`${small.baseUrl}/api/releases/${draft.id}/artifacts?filename=big.exe&platform=win32&arch=x64`, { method: 'PUT', body: new Uint8Array(1024 * 1024 + 1), headers: { 'x-api-key': a.adminKey.key } });
      expect(big.status).toBe(400);
      expect(await filesUnder(path.join(small.deps.config.dataDir, 'releases'))).toEqual([]);
    } finally {
      await small.close();
    }
    expect((await put(v2.id, { filename: 'ro.exe', platform: 'win32', arch: 'x64' }, Buffer.from('MZ'), A.readOnlyKey.key)).status).toBe(403);
    expect((await put(v2.id, { filename: 'b.exe', platform: 'win32', arch: 'x64' }, Buffer.from('MZ'), B.adminKey.key)).status).toBe(404);
    expect((await put(v1.id, { filename: 'late.exe', platform: 'win32', arch: 'x64' }, Buffer.from('MZ'))).status).toBe(409);
    expect((await put(v2.id, { filename: 'nokey.exe', platform: 'win32', arch: 'x64' }, Buffer.from('MZ'), 'kf_not_a_key')).status).toBe(401);
  });
});

describe('public release API', () => {
  it('a draft is never listed nor downloadable', async () => {
    const list = await publicGet('/releases', { product: product().name }, proKey);
    expect(list.status).toBe(200);
    expect(list.json.releases.map((r: { version: string }) => r.version)).toEqual(['1.0.0']);
    const draftArtifact = await t.prisma.releaseArtifact.findFirstOrThrow({ where: { releaseId: v2.id } });
    const link = await publicGet(`/artifacts/${draftArtifact.id}/download`, { product: product().name }, proKey);
    expect(link.status).toBe(404);
  });

  it('lists, checks for upgrades and serves a verified download once published', async () => {
    await publishRelease(adminContext(t, A), v2.id);
    const list = await publicGet('/releases', { product: product().id, platform: 'darwin' }, proKey);
    expect(list.json.releases.map((r: { version: string }) => r.version)).toEqual(['2.0.0']);
    const release = list.json.releases[0];
    expect(release).toMatchObject({ product: product().id, productName: product().name, channel: 'stable', status: 'published', notes: null });
    expect(release.artifacts).toHaveLength(1);

    const upgrade = await publicGet('/releases/upgrade', { product: product().name, version: '1.0.0', platform: 'win32', arch: 'x64' }, proKey);
    expect(upgrade.json).toMatchObject({ available: true, release: { version: '2.0.0' } });
    const artifact = upgrade.json.release.artifacts[0];
    expect(artifact.filename).toBe('Acme Setup 2.0.0.exe');

    const link = await publicGet(`/artifacts/${artifact.id}/download`, { product: product().name }, proKey);
    expect(link.status).toBe(200);
    expect(link.json.url).toMatch(/^http:\/\/licensing\.test\/api\/v1\/artifacts\/[0-9a-f-]+\/file\?token=/);
    expect(Date.parse(link.json.expiresAt)).toBe(clock.now().getTime() + 300_000);
    const file = await fetch(local(link.json.url));
    expect(file.status).toBe(200);
    expect(file.headers.get('content-disposition')).toContain("filename*=UTF-8''Acme%20Setup%202.0.0.exe");
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(bytes.length).toBe(artifact.size);
    expect(sha256(bytes)).toBe(artifact.sha256);

    // The signature: the JWKS's key (EdDSA), the issuer, and digests equal to the bytes'.
    const jwks = createLocalJWKSet((await t.get('/.well-known/jwks.json')).json);
    expect(decodeProtectedHeader(artifact.signature).alg).toBe('EdDSA');
    const { payload } = await compactVerify(artifact.signature, jwks);
    const statement = JSON.parse(new TextDecoder().decode(payload));
    expect(statement).toMatchObject({ typ: 'keyforge.artifact', iss: 'http://licensing.test', product: product().id, productName: product().name, release: v2.id, version: '2.0.0', artifact: artifact.id, filename: artifact.filename, platform: 'win32', arch: 'x64', size: bytes.length, sha256: sha256(bytes), sha512: createHash('sha512').update(bytes).digest('hex') });

    // Counted per release and per artifact.
    expect((await t.prisma.release.findUniqueOrThrow({ where: { id: v2.id } })).downloadCount).toBe(1);
    expect((await t.prisma.releaseArtifact.findUniqueOrThrow({ where: { id: artifact.id } })).downloadCount).toBe(1);
  });

  it('refuses what the license may not install: maintenance lapsed, feature missing', async () => {
    const basic = await publicGet('/releases/upgrade', { product: product().name, version: '1.0.0' }, basicKey);
    expect(basic.json).toMatchObject({ available: false, reason: 'FeatureMissing', release: { version: '2.0.0' } });
    expect((await publicGet('/releases', { product: product().name }, basicKey)).json.releases.map((r: { version: string }) => r.version)).toEqual(['1.0.0']);
    const artifactId = (await t.prisma.releaseArtifact.findFirstOrThrow({ where: { releaseId: v2.id } })).id;
    const refused = await publicGet(`/artifacts/${artifactId}/download`, { product: product().name }, basicKey);
    expect(refused.status).toBe(403);
    expect(refused.json.error.fields.reason).toBe('FeatureMissing');

    // The feature given, maintenance still lapsed (it ended before 2.0.0 was published).
    const lapsed = (await t.seedLicense(A.tenantId, product().id, { features: ['pro'], maintenanceExpiresAt: new Date('2026-05-15T00:00:00Z') })).key;
    expect((await publicGet('/releases/upgrade', { product: product().name, version: '1.0.0' }, lapsed)).json).toMatchObject({ available: false, reason: 'MaintenanceExpired', release: { version: '2.0.0' } });
    expect((await publicGet(`/artifacts/${artifactId}/download`, { product: product().name }, lapsed)).json.error.fields.reason).toBe('MaintenanceExpired');

    expect((await publicGet('/releases/upgrade', { product: product().name, version: '2.0.0' }, proKey)).json).toEqual({ available: false, reason: 'NoNewerRelease', release: null });
    expect((await publicGet('/releases/upgrade', { product: product().name, version: 'not-a-version' }, proKey)).status).toBe(400);
  });

  it('channels include the more stable ones', async () => {
    const ctx = adminContext(t, A);
    const beta = await createRelease(ctx, { productId: product().id, version: '2.1.0-beta.1', channel: 'beta' });
    await put(beta.id, { filename: 'beta.exe', platform: 'win32', arch: 'x64' }, bytesOf('beta', 1000));
    await publishRelease(ctx, beta.id);
    const versions = async (channel?: string) => (await publicGet('/releases', { product: product().name, ...(channel && { channel }) }, proKey)).json.releases.map((r: { version: string }) => r.version);
    expect(await versions()).toEqual(['2.0.0', '1.0.0']);
    expect(await versions('rc')).toEqual(['2.0.0', '1.0.0']);
    expect(await versions('beta')).toEqual(['2.1.0-beta.1', '2.0.0', '1.0.0']);
    expect(await versions('dev')).toEqual(['2.1.0-beta.1', '2.0.0', '1.0.0']);
    expect((await publicGet('/releases/upgrade', { product: product().name, version: '2.0.0', channel: 'beta' }, proKey)).json.release.version).toBe('2.1.0-beta.1');
  });

  it('refuses expired, forged and other-license links', async () => {
    const artifactId = (await t.prisma.releaseArtifact.findFirstOrThrow({ where: { releaseId: v1.id } })).id;
    const link = (await publicGet(`/artifacts/${artifactId}/download`, { product: product().name }, proKey)).json.url as string;
    const token = new URL(link).searchParams.get('token')!;
    const [licenseId, expiry, mac] = token.split('.');
    const file = (id: string, tokenValue: string) => t.get(`/api/v1/artifacts/${id}/file?token=${encodeURIComponent(tokenValue)}`);

    expect((await file(artifactId, token)).status).toBe(200);
    // Another license's id with this link's MAC, another expiry, another artifact, a flipped MAC: forged.
    const other = A.licenses[0].id;
    for (const forged of [`${other}.${expiry}.${mac}`, `${licenseId}.${Number(expiry) + 3600}.${mac}`, `${licenseId}.${expiry}.${mac.replace(/^./, (c) => (c === '0' ? '1' : '0'))}`, 'garbage', `${licenseId}.${expiry}`]) {
      const response = await file(artifactId, forged);
      expect(response.status, forged).toBe(403);
      expect(response.json.error.code).toBe('Forbidden');
    }
    const v2Artifact = (await t.prisma.releaseArtifact.findFirstOrThrow({ where: { releaseId: v2.id } })).id;
    expect((await file(v2Artifact, token)).status).toBe(403);
    // Expired: after RELEASES_DOWNLOAD_LINK_SECONDS.
    clock.advance(301_000);
    const expired = await file(artifactId, token);
    expect(expired.status).toBe(403);
    expect(expired.json.error.message).toContain('expired');
  });

  it('refuses another product\'s key, another company\'s artifact, a missing header, and a device without activation', async () => {
    const artifactId = (await t.prisma.releaseArtifact.findFirstOrThrow({ where: { releaseId: v1.id } })).id;
    // B's key asking for A's product: ProductMismatch, as activate/validate answer it.
    const mismatch = await publicGet('/releases', { product: product().name }, B.licenses[0].key);
    expect(mismatch.json).toMatchObject({ isValid: false, errorCode: 'ProductMismatch' });
    // B's key for B's product, with A's artifact id: NotFound.
    expect((await publicGet(`/artifacts/${artifactId}/download`, { product: B.product!.name }, B.licenses[0].key)).status).toBe(404);
    expect((await publicGet('/releases', { product: product().name }, 'ACME-0000-0000-0000-0000')).json).toMatchObject({ isValid: false, errorCode: 'LicenseNotFound' });
    expect((await t.get(`/api/v1/releases?product=${product().id}`)).status).toBe(400);
    expect((await publicGet('/releases', { product: product().name, deviceId: 'never-activated' }, proKey)).json).toMatchObject({ isValid: false, errorCode: 'DeviceNotActivated' });
    // A key in the URL is refused outright.
    expect((await t.get(`/api/v1/releases?product=x&licenseKey=${proKey}`)).status).toBe(400);
  });

  it('a yanked release is no longer offered, and its links stop working', async () => {
    const artifactId = (await t.prisma.releaseArtifact.findFirstOrThrow({ where: { releaseId: v2.id } })).id;
    const link = (await publicGet(`/artifacts/${artifactId}/download`, { product: product().name }, proKey)).json.url as string;
    await yankRelease(adminContext(t, A), v2.id);
    expect((await publicGet('/releases', { product: product().name }, proKey)).json.releases.map((r: { version: string }) => r.version)).toEqual(['1.0.0']);
    expect((await publicGet('/releases/upgrade', { product: product().name, version: '1.0.0' }, proKey)).json).toEqual({ available: false, reason: 'NoNewerRelease', release: null });
    expect((await publicGet(`/artifacts/${artifactId}/download`, { product: product().name }, proKey)).status).toBe(404);
    expect((await fetch(local(link))).status).toBe(404);
  });
});

describe('the build pipeline: CLI with an API key against the running server', () => {
  it('release:create, release:upload (two platforms), release:publish; then the application lists, upgrades and downloads it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'kf-ci-'));
    const linuxBytes = bytesOf('ci-linux', 200_000);
    const armBytes = bytesOf('ci-arm', 90_000);
    await writeFile(path.join(dir, 'acme-3.0.0.AppImage'), linuxBytes);
    await writeFile(path.join(dir, 'acme-3.0.0-arm64.tar.gz'), armBytes);
    // No DATA_DIR, no database: the key from the environment, the server by --url.
    const env = { KEYFORGE_API_KEY: A.adminKey.key, DATA_DIR: path.join(dir, 'no-data-dir-here'), DATABASE_URL: '' };
    const created = await runCliAsync(['release:create', '--url', t.baseUrl, '--product', product().id, '--version', '3.0.0', '--notes', 'From CI.', '--json'], env);
    expect(created.status, created.stderr).toBe(0);
    const releaseId = created.json.id as string;
    for (const [file, platform, arch] of [['acme-3.0.0.AppImage', 'linux', 'x64'], ['acme-3.0.0-arm64.tar.gz', 'linux', 'arm64']]) {
      const uploaded = await runCliAsync(['release:upload', '--url', t.baseUrl, '--release', releaseId, '--file', path.join(dir, file), '--platform', platform, '--arch', arch, '--json'], env);
      expect(uploaded.status, uploaded.stderr).toBe(0);
      expect(uploaded.json).toMatchObject({ filename: file, platform, arch });
    }
    const published = await runCliAsync(['release:publish', '--url', t.baseUrl, '--release', releaseId, '--json'], env);
    expect(published.status, published.stderr).toBe(0);
    expect(published.json).toMatchObject({ status: 'PUBLISHED', version: '3.0.0' });
    // The key never in argv: without the variable the command refuses.
    const keyless = await runCliAsync(['release:publish', '--url', t.baseUrl, '--release', releaseId, '--json'], { ...env, KEYFORGE_API_KEY: '' });
    expect(keyless.status).toBe(1);
    expect(keyless.json.error.message).toContain('KEYFORGE_API_KEY');

    const upgrade = await publicGet('/releases/upgrade', { product: product().name, version: '1.0.0', platform: 'linux', arch: 'arm64' }, proKey);
    expect(upgrade.json).toMatchObject({ available: true, release: { version: '3.0.0', notes: 'From CI.' } });
    const [artifact] = upgrade.json.release.artifacts;
    expect(artifact).toMatchObject({ filename: 'acme-3.0.0-arm64.tar.gz', filetype: 'tar.gz', size: armBytes.length, sha256: sha256(armBytes) });
    const link = await publicGet(`/artifacts/${artifact.id}/download`, { product: product().name }, proKey);
    const bytes = Buffer.from(await (await fetch(local(link.json.url))).arrayBuffer());
    expect(bytes.equals(armBytes)).toBe(true);
    await compactVerify(artifact.signature, createLocalJWKSet((await t.get('/.well-known/jwks.json')).json));

    const yanked = await runCliAsync(['release:yank', '--url', t.baseUrl, '--release', releaseId, '--json'], env);
    expect(yanked.json).toMatchObject({ status: 'YANKED' });
    expect((await publicGet('/releases', { product: product().name }, proKey)).json.releases.map((r: { version: string }) => r.version)).not.toContain('3.0.0');
  });
});

describe('hostile input (fast-check)', () => {
  it('file names and query parameters never give a server error', async () => {
    const draft = await createRelease(adminContext(t, A), { productId: product().id, version: '9.9.9' });
    const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('..', '../x', 'a/b', '\u0000', '%00', 'x'.repeat(300), '\u202E', '\uD800'));
    await fc.assert(
      fc.asyncProperty(text, text, text, async (filename, platform, arch) => {
        const response = await put(draft.id, { filename, platform, arch }, Buffer.from('x'));
        expect(response.status, response.text).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
    const routes = ['/releases', '/releases/upgrade', `/artifacts/${(await t.prisma.releaseArtifact.findFirstOrThrow({ where: { releaseId: v1.id } })).id}/download`];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), fc.dictionary(fc.constantFrom('product', 'channel', 'platform', 'arch', 'version', 'deviceId', 'limit', 'x'), text), async (route, params) => {
        const response = await publicGet(route, params, proKey);
        expect(response.status, response.text).toBeLessThan(500);
      }),
      { numRuns: 200 },
    );
    await fc.assert(
      fc.asyncProperty(text, text, async (id, token) => {
        const response = await t.get(`/api/v1/artifacts/${percentEncoded(id) || '%ED%A0%80'}/file?token=${percentEncoded(token)}`);
        expect(response.status, response.text).toBeLessThan(500);
      }),
      { numRuns: 100 },
    );
  });
});

