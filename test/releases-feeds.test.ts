import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ELECTRON_FEED_FILES, electronFeedArtifacts, electronFeedYaml, tauriArtifact, tauriSignatureProblem, tauriUpdate, type FeedRelease } from '../server/src/services/releases/feeds.js';
import { Readable } from 'node:stream';
import { createRelease, uploadArtifact, type ReleaseStaffContext } from '../server/src/services/releases/releases.js';
import { artifactStoreFor } from '../server/src/services/releases/store.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { adminContext, seedTwoTenants, type SeededTenant } from './support/tenants.js';
import { electronUpdater, tauriSigner, validateTauriUpdate } from './support/updaters.js';

const sha512hex = (bytes: Uint8Array) => createHash('sha512').update(bytes).digest('hex');

describe('feed formats, read by the updaters\' own code', () => {
  const files = new Map<string, Buffer>();
  let server: Server;
  let base: string;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keyforge-feeds-'));
    server = createServer((req, res) => {
      const body = files.get(decodeURIComponent(new URL(req.url!, 'http://x').pathname));
      if (!body) return res.writeHead(404).end();
      res.writeHead(200).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('electron-updater parses latest.yml, resolves the file URLs and accepts the download against the base64 sha512', async () => {
    const exe = randomBytes(3000);
    const release: FeedRelease = {
      version: '2.1.0',
      notes: 'Fixes: "quotes", colons: yes\nsecond line # not a comment',
      publishedAt: '2026-12-01T10:00:00.000Z',
      artifacts: [
        { id: 'a1', filename: 'Acme Setup 2.1.0.exe', platform: 'win32', arch: 'x64', filetype: 'exe', size: exe.length, sha512: sha512hex(exe) },
        { id: 'a2', filename: 'Acme-2.1.0.dmg', platform: 'darwin', arch: 'x64', filetype: 'dmg', size: 1, sha512: sha512hex(Buffer.from('x')) },
      ],
    };
    const urlOf = (artifact: { id: string; filename: string }) => `download/${artifact.id}/${encodeURIComponent(artifact.filename)}`;
    files.set('/feed/latest.yml', Buffer.from(electronFeedYaml(release, electronFeedArtifacts(release, ELECTRON_FEED_FILES['latest.yml']!), urlOf)));
    files.set('/feed/download/a1/Acme Setup 2.1.0.exe', exe);
    const updater = electronUpdater(`${base}/feed`, 'win32', {});
    const info = await updater.provider.getLatestVersion();
    expect(info).toMatchObject({ version: '2.1.0', releaseDate: '2026-12-01T10:00:00.000Z', releaseNotes: release.notes, path: urlOf(release.artifacts[0]!) });
    expect(info.files).toEqual([{ url: urlOf(release.artifacts[0]!), sha512: Buffer.from(release.artifacts[0]!.sha512, 'hex').toString('base64'), size: exe.length }]);
    const [file] = updater.provider.resolveFiles(info);
    expect(file!.url.href).toBe(`${base}/feed/download/a1/Acme%20Setup%202.1.0.exe`);
    const saved = await updater.download(file!, join(dir, 'setup.exe'));
    expect((await readFile(saved)).equals(exe)).toBe(true);
    // The check electron-updater makes is real: other bytes under the same feed fail it.
    files.set('/feed/download/a1/Acme Setup 2.1.0.exe', randomBytes(3000));
    await expect(updater.download(file!, join(dir, 'setup2.exe'))).rejects.toThrow(/sha512 checksum mismatch/);
  });

  it('any version, notes and file name survive the YAML as written', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 40 }), fc.option(fc.string({ maxLength: 200 }), { nil: null }), fc.string({ minLength: 1, maxLength: 40 }), async (version, notes, filename) => {
        const release: FeedRelease = { version, notes, publishedAt: null, artifacts: [{ id: 'x', filename, platform: 'linux', arch: 'x64', filetype: 'AppImage', size: 5, sha512: sha512hex(Buffer.from('hello')) }] };
        files.set('/prop/latest-linux.yml', Buffer.from(electronFeedYaml(release, release.artifacts, (artifact) => `download/${artifact.id}/${encodeURIComponent(artifact.filename)}`)));
        const info = await electronUpdater(`${base}/prop`, 'linux', {}).provider.getLatestVersion();
        expect(String(info.version)).toBe(version);
        expect(info.releaseNotes ?? null).toBe(notes === '' ? null : notes);
        expect(decodeURIComponent(info.files[0]!.url.split('/').pop()!)).toBe(filename);
      }),
      { numRuns: 60 },
    );
  });

  it('Tauri: the artifact with a signature for the target, in the documented schema, its signature verifying the bytes', () => {
    const signer = tauriSigner();
    const bundle = randomBytes(2000);
    const signature = signer.signFile(bundle);
    expect(tauriSignatureProblem(signature)).toBeNull();
    const release: FeedRelease = {
      version: '1.4.0-beta.2',
      notes: null,
      publishedAt: new Date('2026-12-02T08:00:00Z'),
      artifacts: [
        { id: 'dmg', filename: 'Acme.dmg', platform: 'darwin', arch: 'arm64', filetype: 'dmg', size: 1, sha512: '00' },
        { id: 'tgz', filename: 'Acme.app.tar.gz', platform: 'darwin', arch: 'arm64', filetype: 'tar.gz', size: bundle.length, sha512: sha512hex(bundle), tauriSignature: signature },
      ],
    };
    const artifact = tauriArtifact(release, 'darwin', 'arm64');
    expect(artifact?.id).toBe('tgz');
    expect(tauriArtifact(release, 'darwin', 'x64')).toBeNull();
    const body = tauriUpdate(release, artifact!, 'https://keyforge.example/api/v1/feeds/tauri/p/download/tgz/Acme.app.tar.gz');
    expect(validateTauriUpdate(body), JSON.stringify(validateTauriUpdate.errors)).toBe(true);
    expect(body).toEqual({ version: '1.4.0-beta.2', notes: '', pub_date: '2026-12-02T08:00:00.000Z', url: expect.any(String), signature });
    expect(signer.verify(body.signature, bundle)).toBe(true);
    expect(signer.verify(body.signature, randomBytes(2000))).toBe(false);
  });

  it('a Tauri signature that is not a .sig file\'s content is refused with a reason', () => {
    const good = tauriSigner().signFile(Buffer.from('x'));
    expect(tauriSignatureProblem('')).toMatch(/content of the .sig file/);
    expect(tauriSignatureProblem('untrusted comment: x\nRWQ...')).toMatch(/one line of base64/);
    expect(tauriSignatureProblem(Buffer.from('hello').toString('base64'))).toMatch(/not a minisign signature/);
    expect(tauriSignatureProblem(good.slice(0, 40))).not.toBeNull();
    expect(tauriSignatureProblem(`${good}\n`)).toBeNull();
    fc.assert(fc.property(fc.string({ maxLength: 300 }), (text) => {
      expect(() => tauriSignatureProblem(text)).not.toThrow();
    }));
  });
});

describe('an artifact\'s Tauri signature (setArtifactTauriSignature, GraphQL)', () => {
  let t: TestApp;
  let A: SeededTenant;
  let B: SeededTenant;
  let artifactId: string;
  const signer = tauriSigner();
  const bundle = randomBytes(5000);
  const mutation = 'mutation($input: SetArtifactTauriSignatureInput!) { setArtifactTauriSignature(input: $input) { artifactId tauriSignature } }';

  beforeAll(async () => {
    t = await startTestApp();
    ({ A, B } = await seedTwoTenants(t));
    const release = await createRelease(adminContext(t, A), { productId: A.product!.id, version: '1.0.0' });
    const staff: ReleaseStaffContext = { ...adminContext(t, A), store: artifactStoreFor(t.deps.config), signer: t.deps.signer, issuer: t.deps.config.publicUrl, maxUploadBytes: 1_000_000 };
    artifactId = (await uploadArtifact(staff, release.id, { filename: 'Acme.app.tar.gz', platform: 'darwin', arch: 'arm64' }, Readable.from([bundle]))).id;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a CompanyAdmin sets the .sig content (stored as given, audited) and removes it; anything else is refused', async () => {
    const signature = signer.signFile(bundle);
    const set = await t.gqlData(mutation, { input: { artifactId, tauriSignature: `${signature}\n` } }, { apiKey: A.adminKey.key });
    expect(set.setArtifactTauriSignature).toEqual({ artifactId, tauriSignature: signature });
    expect((await t.prisma.releaseArtifact.findUniqueOrThrow({ where: { id: artifactId } })).tauriSignature).toBe(signature);
    expect(await t.prisma.auditLogEntry.count({ where: { tenantId: A.tenantId, action: 'SetArtifactTauriSignature' } })).toBe(1);

    const wrong = await t.gql(mutation, { input: { artifactId, tauriSignature: 'untrusted comment: pasted the wrong thing' } }, { apiKey: A.adminKey.key });
    expect(wrong.errors?.[0]?.extensions).toMatchObject({ code: 'InvalidRequest', fields: { tauriSignature: expect.stringMatching(/base64/) } });
    const readOnly = await t.gql(mutation, { input: { artifactId, tauriSignature: signature } }, { apiKey: A.readOnlyKey.key });
    expect(readOnly.errors?.[0]?.extensions?.code).toBe('Forbidden');
    // Another company's artifact id answers as one that does not exist.
    const other = await t.gql(mutation, { input: { artifactId, tauriSignature: signature } }, { apiKey: B.adminKey.key });
    expect(other.errors?.[0]?.extensions?.code).toBe('NotFound');
    expect((await t.gql(mutation, { input: { artifactId: 'not-an-id', tauriSignature: signature } }, { apiKey: A.adminKey.key })).errors?.[0]?.extensions?.code).toBe('NotFound');

    const removed = await t.gqlData(mutation, { input: { artifactId, tauriSignature: null } }, { apiKey: A.adminKey.key });
    expect(removed.setArtifactTauriSignature.tauriSignature).toBeNull();
  });
});
