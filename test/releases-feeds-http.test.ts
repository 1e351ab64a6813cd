// The update feeds over real HTTP on real PostgreSQL, read by electron-updater's own provider and download code, and
// checked against Tauri's documented answer: what each license is offered (maintenance, features, channels,
// platforms), the license-gated redirect to the file (the key never reaches the store), refusals, a yank.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelease, publishRelease, uploadArtifact, yankRelease, type ReleaseStaffContext } from '../server/src/services/releases/releases.js';
import { artifactStoreFor } from '../server/src/services/releases/store.js';
import { setArtifactTauriSignature } from '../server/src/services/releases/tauri-signature.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { adminContext, seedTwoTenants, type SeededTenant } from './support/tenants.js';
import { S3_CREDENTIALS, startS3 } from './support/s3.js';
import { electronUpdater, tauriSigner, validateTauriUpdate } from './support/updaters.js';

describe('the feeds over HTTP, gated by the license (file store, then S3)', () => {
  const clock = new TestClock();
  let t: TestApp;
  let A: SeededTenant;
  let B: SeededTenant;
  let proKey: string;
  let basicKey: string;
  let otherCompanyKey: string;
  let dir: string;
  const signer = tauriSigner();
  const bytes = {
    win1: randomBytes(40_000),
    mac1zip: randomBytes(30_000),
    mac1dmg: randomBytes(31_000),
    linux1: randomBytes(20_000),
    win2: randomBytes(41_000),
    mac2zip: randomBytes(32_000),
    mac2tar: randomBytes(25_000),
  };
  const ids: Record<string, string> = {};
  let v2: { id: string };

  const staff = (): ReleaseStaffContext => ({ ...adminContext(t, A), store: artifactStoreFor(t.deps.config), signer: t.deps.signer, issuer: t.deps.config.publicUrl, maxUploadBytes: 10_000_000 });
  async function upload(releaseId: string, name: keyof typeof bytes, filename: string, platform: string, arch: string) {
    const artifact = await uploadArtifact(staff(), releaseId, { filename, platform, arch }, Readable.from([bytes[name]]));
    ids[name] = artifact.id;
  }
  const feedUrl = () => `http://licensing.test/api/v1/feeds/electron/${A.product!.id}`;
  const hosts = () => ({ 'licensing.test': new URL(t.baseUrl).host });
  const license = (key: string) => ({ Authorization: `License ${key}` });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keyforge-feeds-http-'));
    t = await startTestApp({ clock });
    ({ A, B } = await seedTwoTenants(t));
    proKey = (await t.seedLicense(A.tenantId, A.product!.id, { features: ['pro'], maintenanceExpiresAt: new Date('2026-07-01T00:00:00Z') })).key;
    basicKey = (await t.seedLicense(A.tenantId, A.product!.id, { maintenanceExpiresAt: new Date('2026-05-01T00:00:00Z') })).key;
    otherCompanyKey = B.licenses[0]!.key;
    clock.set('2026-04-01T12:00:00.000Z');
    const v1 = await createRelease(adminContext(t, A), { productId: A.product!.id, version: '1.0.0', notes: 'First.' });
    await upload(v1.id, 'win1', 'Acme Setup 1.0.0.exe', 'win32', 'x64');
    await upload(v1.id, 'mac1dmg', 'Acme-1.0.0.dmg', 'darwin', 'universal');
    await upload(v1.id, 'mac1zip', 'Acme-1.0.0-mac.zip', 'darwin', 'universal');
    await upload(v1.id, 'linux1', 'Acme-1.0.0.AppImage', 'linux', 'x64');
    await publishRelease(adminContext(t, A), v1.id);
    clock.set('2026-06-01T12:00:00.000Z');
    // 2.0.0 requires maintenance (basic's ended before it) and the feature pro.
    v2 = await createRelease(adminContext(t, A), { productId: A.product!.id, version: '2.0.0', notes: 'Second: "faster".', requiresMaintenance: true, requiredFeatures: ['pro'] });
    await upload(v2.id, 'win2', 'Acme Setup 2.0.0.exe', 'win32', 'x64');
    await upload(v2.id, 'mac2zip', 'Acme-2.0.0-mac.zip', 'darwin', 'arm64');
    await upload(v2.id, 'mac2tar', 'Acme.app.tar.gz', 'darwin', 'arm64');
    await setArtifactTauriSignature(adminContext(t, A), ids.mac2tar!, signer.signFile(bytes.mac2tar));
    await publishRelease(adminContext(t, A), v2.id);
  });
  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('electron-updater on Windows gets the newest release the license may install, and downloads it through the gated redirect', async () => {
    const updater = electronUpdater(feedUrl(), 'win32', license(proKey), hosts());
    const info = await updater.provider.getLatestVersion();
    expect(info).toMatchObject({ version: '2.0.0', releaseNotes: 'Second: "faster".', releaseDate: '2026-06-01T12:00:00.000Z' });
    const files = updater.provider.resolveFiles(info);
    expect(files.map((file) => file.url.pathname)).toEqual([`/api/v1/feeds/download/${A.product!.id}/${ids.win2}/Acme%20Setup%202.0.0.exe`]);
    const before = await t.deps.db.prisma.releaseArtifact.findUniqueOrThrow({ where: { id: ids.win2! } });
    const saved = await updater.download(files[0]!, join(dir, 'win2.exe'));
    expect((await readFile(saved)).equals(bytes.win2)).toBe(true);
    expect((await t.deps.db.prisma.releaseArtifact.findUniqueOrThrow({ where: { id: ids.win2! } })).downloadCount).toBe(before.downloadCount + 1);
    // Through the redirect to the file store's signed link: the key was sent to Keyforge only.
    expect(updater.seen.map((request) => request.path.split('?')[0])).toEqual([
      '/api/v1/feeds/electron/' + A.product!.id + '/latest.yml',
      `/api/v1/feeds/download/${A.product!.id}/${ids.win2}/Acme%20Setup%202.0.0.exe`,
      `/api/v1/artifacts/${ids.win2}/file`,
    ]);
  });

  it('a license whose maintenance ended before 2.0.0 is offered 1.0.0; macOS gets the zip first, Linux its AppImage', async () => {
    expect((await electronUpdater(feedUrl(), 'win32', license(basicKey), hosts()).provider.getLatestVersion()).version).toBe('1.0.0');
    const mac = electronUpdater(feedUrl(), 'darwin', license(basicKey), hosts());
    const macInfo = await mac.provider.getLatestVersion();
    expect(macInfo.files.map((file) => decodeURIComponent(file.url.split('/').pop()!))).toEqual(['Acme-1.0.0-mac.zip', 'Acme-1.0.0.dmg']);
    expect((await mac.download(mac.provider.resolveFiles(macInfo)[0]!, join(dir, 'mac.zip')))).toBeTruthy();
    const linux = await electronUpdater(feedUrl(), 'linux', license(proKey), hosts()).provider.getLatestVersion();
    expect(linux).toMatchObject({ version: '1.0.0', path: expect.stringContaining('Acme-1.0.0.AppImage') });
    // The beta channel file includes stable releases.
    const beta = await t.get(`/api/v1/feeds/electron/${A.product!.id}/beta-mac.yml`, license(proKey));
    expect(beta.status).toBe(200);
    expect(beta.text).toContain('version: "2.0.0"');
  });

  it('refuses: no key, another company\'s key, a revoked license, an unknown feed file, a yanked release\'s download', async () => {
    const latest = `/api/v1/feeds/electron/${A.product!.id}/latest.yml`;
    expect((await t.get(latest)).status).toBe(400);
    const other = await t.get(latest, license(otherCompanyKey));
    expect(other.status).toBe(403);
    expect(other.json.error.message).toMatch(/ProductMismatch/);
    const revoked = await t.seedLicense(A.tenantId, A.product!.id, {});
    await t.deps.db.prisma.license.update({ where: { id: revoked.license.id }, data: { status: 'revoked' } });
    const refused = await t.get(latest, license(revoked.key));
    expect(refused.status).toBe(403);
    expect(refused.json.error.message).toMatch(/LicenseRevoked/);
    expect((await t.get(`/api/v1/feeds/electron/${A.product!.id}/latest-solaris.yml`, license(proKey))).status).toBe(404);
    expect((await t.get(`/api/v1/feeds/electron/${A.product!.id}/latest.json`, license(proKey))).status).toBe(404);
    // A download of another company's artifact id: NotFound, as if it did not exist.
    expect((await t.get(`/api/v1/feeds/download/${B.product!.id}/${ids.win2}/x.exe`, license(otherCompanyKey))).status).toBe(404);
  });

  it('Tauri: 200 with the signed bundle for a newer version, 204 otherwise, in the documented schema; the signature verifies the bytes', async () => {
    const tauri = (key: string, target: string, arch: string, version: string, query = '') => t.get(`/api/v1/feeds/tauri/${A.product!.id}/${target}/${arch}/${version}${query}`, license(key));
    const update = await tauri(proKey, 'darwin', 'aarch64', '1.0.0');
    expect(update.status).toBe(200);
    expect(validateTauriUpdate(update.json), JSON.stringify(validateTauriUpdate.errors)).toBe(true);
    expect(update.json).toEqual({ version: '2.0.0', notes: 'Second: "faster".', pub_date: '2026-06-01T12:00:00.000Z', url: `http://licensing.test/api/v1/feeds/download/${A.product!.id}/${ids.mac2tar}/Acme.app.tar.gz`, signature: expect.any(String) });
    // Tauri downloads the url with the same header, follows the redirect, and checks the signature with its public key.
    const redirect = await fetch(update.json.url.replace('http://licensing.test', t.baseUrl), { headers: license(proKey), redirect: 'manual' });
    expect(redirect.status).toBe(302);
    const file = Buffer.from(await (await fetch(redirect.headers.get('location')!.replace('http://licensing.test', t.baseUrl))).arrayBuffer());
    expect(file.equals(bytes.mac2tar)).toBe(true);
    expect(signer.verify(update.json.signature, file)).toBe(true);

    expect((await tauri(proKey, 'darwin', 'aarch64', '2.0.0')).status).toBe(204); // nothing newer
    expect((await tauri(basicKey, 'darwin', 'aarch64', '1.0.0')).status).toBe(204); // maintenance ended before 2.0.0
    expect((await tauri(proKey, 'windows', 'x86_64', '1.0.0')).status).toBe(204); // no Tauri-signed bundle for Windows
    expect((await tauri(proKey, 'darwin', 'aarch64', '1.0.0', '?channel=dev')).status).toBe(200);
    expect((await tauri(proKey, 'beos', 'aarch64', '1.0.0')).status).toBe(400);
    expect((await tauri(proKey, 'darwin', 'aarch64', 'not-a-version')).status).toBe(400);
    expect((await tauri(otherCompanyKey, 'darwin', 'aarch64', '1.0.0')).status).toBe(403);
  });

  it('a Tauri signature must look like a .sig file, and removing it takes the bundle out of the Tauri feed', async () => {
    await expect(setArtifactTauriSignature(adminContext(t, A), ids.mac2tar!, 'not a signature')).rejects.toMatchObject({ code: 'InvalidRequest' });
    await expect(setArtifactTauriSignature(adminContext(t, B), ids.mac2tar!, signer.signFile(bytes.mac2tar))).rejects.toMatchObject({ code: 'NotFound' });
    await setArtifactTauriSignature(adminContext(t, A), ids.mac2tar!, null);
    expect((await t.get(`/api/v1/feeds/tauri/${A.product!.id}/darwin/aarch64/1.0.0`, license(proKey))).status).toBe(204);
    await setArtifactTauriSignature(adminContext(t, A), ids.mac2tar!, signer.signFile(bytes.mac2tar));
  });

  it('a yanked release leaves the feeds, and its files cannot be downloaded through them', async () => {
    await yankRelease(adminContext(t, A), v2.id);
    expect((await electronUpdater(feedUrl(), 'win32', license(proKey), hosts()).provider.getLatestVersion()).version).toBe('1.0.0');
    expect((await t.get(`/api/v1/feeds/download/${A.product!.id}/${ids.win2}/Acme%20Setup%202.0.0.exe`, license(proKey))).status).toBe(404);
    expect((await t.get(`/api/v1/feeds/tauri/${A.product!.id}/darwin/aarch64/1.0.0`, license(proKey))).status).toBe(204);
  });

  it('the OpenAPI document lists the feed routes', async () => {
    const document = (await t.get('/api/v1/openapi.json')).json;
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/feeds/electron/{product}/{file}', '/feeds/tauri/{product}/{target}/{arch}/{currentVersion}', '/feeds/download/{product}/{artifactId}/{filename}']));
  });
});

describe('the Electron feed with RELEASES_STORE=s3', () => {
  let s3: Awaited<ReturnType<typeof startS3>>;
  let t: TestApp;
  let A: SeededTenant;
  let key: string;
  const exe = randomBytes(50_000);
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };

  beforeAll(async () => {
    s3 = await startS3();
    // The AWS SDK reads its credentials from the process environment, as in a deployment.
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey });
    t = await startTestApp({ env: { RELEASES_STORE: 's3', RELEASES_S3_BUCKET: s3.bucket, RELEASES_S3_ENDPOINT: s3.endpoint, RELEASES_S3_FORCE_PATH_STYLE: 'true' } });
    ({ A } = await seedTwoTenants(t));
    key = A.licenses[0]!.key;
    const release = await createRelease(adminContext(t, A), { productId: A.product!.id, version: '3.0.0' });
    const staff: ReleaseStaffContext = { ...adminContext(t, A), store: artifactStoreFor(t.deps.config), signer: t.deps.signer, issuer: t.deps.config.publicUrl, maxUploadBytes: 1_000_000 };
    await uploadArtifact(staff, release.id, { filename: 'Acme Setup 3.0.0.exe', platform: 'win32', arch: 'x64' }, Readable.from([exe]));
    await publishRelease(adminContext(t, A), release.id);
  });
  afterAll(async () => {
    await t?.close();
    await s3?.close();
    for (const [name, value] of [['AWS_ACCESS_KEY_ID', saved.id], ['AWS_SECRET_ACCESS_KEY', saved.secret]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('electron-updater follows the redirect to the presigned URL, without the license key, and the sha512 matches', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keyforge-feeds-s3-'));
    try {
      const updater = electronUpdater(`http://licensing.test/api/v1/feeds/electron/${A.product!.id}`, 'win32', { Authorization: `License ${key}` }, { 'licensing.test': new URL(t.baseUrl).host });
      const info = await updater.provider.getLatestVersion();
      expect(info.version).toBe('3.0.0');
      const saved = await updater.download(updater.provider.resolveFiles(info)[0]!, join(dir, 'setup.exe'));
      expect((await readFile(saved)).equals(exe)).toBe(true);
      const toBucket = updater.seen.filter((request) => request.host === new URL(s3.endpoint).host);
      expect(toBucket).toHaveLength(1);
      expect(toBucket[0]!.path).toMatch(/X-Amz-Signature=/);
      // Cross-origin redirect: electron-updater dropped Authorization, so the key never reached the bucket.
      expect(toBucket[0]!.authorization).toBe(false);
      expect(updater.seen.filter((request) => request.host === 'licensing.test').every((request) => request.authorization)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
