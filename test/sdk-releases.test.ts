// The TypeScript SDK's release calls (listReleases, checkForUpdate, downloadArtifact, downloadArtifactToFile,
// verifyArtifact) against a small local HTTP stub of the release API and of a second host serving the file (as a
// presigned object-store link does).
// The scenario against the real server is `releases` in sdks/conformance/scenarios.json.
import { once } from 'node:events';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createReadStream, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KeyforgeClient, KeyforgeError, LicenseRejectedError, currentPlatform, type Artifact } from '../sdk/src/index.js';
import { downloadArtifactToFile } from '../sdk/src/node.js';
import { publishedKey, tokenSigner } from '../server/src/services/signing/signing-keys.js';

const PRODUCT = 'Acme Studio';
const ISSUER = 'https://licenses.acme.test';
const KEY = 'ACME-RELS-TEST-KEY1-0001';
const FILE = Buffer.from('installer bytes\n'.repeat(4096));
const hex = (algorithm: string, bytes: Buffer) => createHash(algorithm).update(bytes).digest('hex');

type Handler = (request: IncomingMessage, response: ServerResponse) => void;
interface Seen {
  url: string;
  authorization: string | undefined;
}

async function listen(handler: Handler): Promise<{ server: Server; origin: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const json = (response: ServerResponse, status: number, body: unknown) => {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
};

let api: { server: Server; origin: string };
let files: { server: Server; origin: string };
let jwks: { keys: unknown[] };
let sign: (claims: Record<string, unknown>) => Promise<string>;
const apiSeen: Seen[] = [];
const fileSeen: Seen[] = [];
/** What the file host does for the next request(s). */
let fileRule: (response: ServerResponse) => boolean = () => false;
let artifact: Artifact;
let upgradeAnswer: unknown;
/** The origin of the download links the stub answers (default: the file host). */
let linkOrigin: string | undefined;

const release = () => ({ id: 'rel-1', product: 'prod-1', version: '2.0.0', channel: 'stable', status: 'published', notes: null, publishedAt: '2026-06-01T12:00:00.000Z', artifacts: [artifact] });

beforeAll(async () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const { kid, publicJwk } = await publishedKey(publicKey);
  jwks = { keys: [publicJwk] };
  const signer = tokenSigner(privateKey, kid, ISSUER);
  sign = (claims) => signer.signPayload({ iss: ISSUER, iat: Math.floor(Date.now() / 1000), ...claims });
  files = await listen((request, response) => {
    fileSeen.push({ url: request.url!, authorization: request.headers.authorization });
    if (fileRule(response)) return;
    response.writeHead(200, { 'content-type': 'application/octet-stream' });
    response.end(FILE);
  });
  api = await listen((request, response) => {
    apiSeen.push({ url: request.url!, authorization: request.headers.authorization });
    const url = new URL(request.url!, 'http://stub');
    if (url.pathname === '/.well-known/jwks.json') return json(response, 200, jwks);
    // The server's own file route, whose token is the credential (a file-store link on its public address).
    if (url.pathname === `/blob/${artifact.id}`) {
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      return response.end(FILE);
    }
    if (request.headers.authorization !== `License ${KEY}`) return json(response, 200, { isValid: false, errorCode: 'LicenseNotFound', message: 'No such license.' });
    if (url.searchParams.get('product') !== PRODUCT) return json(response, 200, { isValid: false, errorCode: 'ProductMismatch', message: 'Another product.' });
    if (url.pathname === '/api/v1/releases') return json(response, 200, { releases: [release()] });
    if (url.pathname === '/api/v1/releases/upgrade') return json(response, 200, upgradeAnswer);
    if (url.pathname === `/api/v1/artifacts/${artifact.id}/download`) return json(response, 200, { url: `${linkOrigin ?? files.origin}/blob/${artifact.id}?token=short-lived`, expiresAt: new Date(Date.now() + 60_000).toISOString() });
    json(response, 404, { error: { code: 'NotFound', message: 'No route.' } });
  });
});

afterAll(async () => {
  await Promise.all([api, files].map(({ server }) => new Promise((resolve) => server.close(resolve))));
});

async function signedArtifact(changes: Record<string, unknown> = {}, file: { size: number; sha256: string; sha512: string } = { size: FILE.length, sha256: hex('sha256', FILE), sha512: hex('sha512', FILE) }): Promise<Artifact> {
  const facts = { id: 'art-1', filename: 'acme-2.0.0-linux-x64.tar.gz', platform: 'linux', arch: 'x64', filetype: 'tar.gz', ...file };
  const signature = await sign({ typ: 'keyforge.artifact', product: 'prod-1', productName: PRODUCT, release: 'rel-1', version: '2.0.0', artifact: facts.id, filename: facts.filename, platform: facts.platform, arch: facts.arch, size: facts.size, sha256: facts.sha256, sha512: facts.sha512, ...changes });
  return { ...facts, signature };
}

const client = () => new KeyforgeClient({ baseUrl: api.origin, product: PRODUCT, issuer: ISSUER, retry: { baseDelayMs: 1, maxDelayMs: 2 } });

async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
  } catch (error) {
    if (error instanceof KeyforgeError) return error.code;
    throw error;
  }
  throw new Error('the call succeeded');
}

beforeEach(async () => {
  apiSeen.length = 0;
  fileSeen.length = 0;
  fileRule = () => false;
  artifact = await signedArtifact();
  upgradeAnswer = { available: true, release: release() };
  linkOrigin = undefined;
});

describe('listReleases and checkForUpdate', () => {
  it('send the key in Authorization: License, never in the URL; product, channel, platform, arch and device in the query', async () => {
    const releases = await client().listReleases({ licenseKey: KEY, channel: 'beta', platform: 'darwin', arch: 'arm64', deviceId: 'dev-1' });
    expect(releases).toEqual([release()]);
    const call = apiSeen.find((seen) => seen.url.startsWith('/api/v1/releases'))!;
    expect(call.authorization).toBe(`License ${KEY}`);
    expect(call.url).not.toContain(KEY);
    expect(Object.fromEntries(new URL(call.url, 'http://stub').searchParams)).toEqual({ product: PRODUCT, channel: 'beta', platform: 'darwin', arch: 'arm64', deviceId: 'dev-1' });
  });

  it('default the platform and architecture to this process\'s, in the API\'s terms', async () => {
    await client().listReleases({ licenseKey: KEY });
    const query = new URL(apiSeen.at(-1)!.url, 'http://stub').searchParams;
    const here = currentPlatform();
    expect(here.platform).toBe({ linux: 'linux', darwin: 'darwin', win32: 'win32' }[process.platform as string]);
    expect(query.get('platform')).toBe(here.platform ?? null);
    expect(query.get('arch')).toBe(here.arch ?? null);
    expect(query.has('channel')).toBe(false);
  });

  it('answer available with the release, or the reason it is not', async () => {
    const sdk = client();
    expect(await sdk.checkForUpdate({ licenseKey: KEY, currentVersion: '1.0.0' })).toEqual({ available: true, release: release() });
    expect(new URL(apiSeen.at(-1)!.url, 'http://stub').searchParams.get('version')).toBe('1.0.0');
    upgradeAnswer = { available: false, reason: 'MaintenanceExpired', release: release() };
    expect(await sdk.checkForUpdate({ licenseKey: KEY, currentVersion: '1.0.0' })).toEqual({ available: false, reason: 'MaintenanceExpired', release: release() });
  });

  it('raise a refusal as the SDK error of its code', async () => {
    const error = await client().listReleases({ licenseKey: 'ACME-UNKN-OWN0' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LicenseRejectedError);
    expect((error as LicenseRejectedError).code).toBe('LicenseNotFound');
    const other = new KeyforgeClient({ baseUrl: api.origin, product: 'Other App', issuer: ISSUER });
    expect(await codeOf(other.checkForUpdate({ licenseKey: KEY, currentVersion: '1.0.0' }))).toBe('ProductMismatch');
  });
});

describe('downloadArtifact', () => {
  it('returns the verified bytes, fetched from the link with no license header', async () => {
    const bytes = await client().downloadArtifact(artifact, { licenseKey: KEY });
    expect(Buffer.from(bytes).equals(FILE)).toBe(true);
    expect(apiSeen.some((seen) => seen.url.startsWith(`/api/v1/artifacts/${artifact.id}/download`) && seen.authorization === `License ${KEY}`)).toBe(true);
    expect(fileSeen).toEqual([{ url: `/blob/${artifact.id}?token=short-lived`, authorization: undefined }]);
  });

  it('refuses bytes that do not match the signed digests (ArtifactIntegrity)', async () => {
    fileRule = (response) => {
      const altered = Buffer.from(FILE);
      altered[100] ^= 1;
      response.end(altered);
      return true;
    };
    expect(await codeOf(client().downloadArtifact(artifact, { licenseKey: KEY }))).toBe('ArtifactIntegrity');
  });

  it('stops reading at the signed size: a longer file is refused', async () => {
    fileRule = (response) => {
      response.writeHead(200);
      response.write(FILE);
      response.end(FILE);
      return true;
    };
    expect(await codeOf(client().downloadArtifact(artifact, { licenseKey: KEY }))).toBe('ArtifactIntegrity');
  });

  it('checks the signature before fetching anything: another product\'s, an edited listing, an unknown key', async () => {
    const sdk = client();
    for (const candidate of [await signedArtifact({ productName: 'Other App' }), { ...artifact, size: artifact.size + 1 }, { ...artifact, signature: `${artifact.signature[0] === 'A' ? 'B' : 'A'}${artifact.signature.slice(1)}` }]) {
      expect(await codeOf(sdk.downloadArtifact(candidate, { licenseKey: KEY }))).toBe('ArtifactIntegrity');
    }
    expect(fileSeen).toEqual([]);
    expect(apiSeen.some((seen) => seen.url.includes('/download'))).toBe(false);
  });

  it('does not follow a redirect from the link (InvalidResponse)', async () => {
    fileRule = (response) => {
      response.writeHead(302, { location: `${files.origin}/elsewhere` });
      response.end();
      return true;
    };
    expect(await codeOf(client().downloadArtifact(artifact, { licenseKey: KEY }))).toBe('InvalidResponse');
    expect(fileSeen.map((seen) => seen.url)).toEqual([`/blob/${artifact.id}?token=short-lived`]);
  });

  it('fetches a link on the server\'s public address (the issuer) through baseUrl', async () => {
    linkOrigin = ISSUER;
    const bytes = await client().downloadArtifact(artifact, { licenseKey: KEY });
    expect(Buffer.from(bytes).equals(FILE)).toBe(true);
    expect(apiSeen.find((seen) => seen.url.startsWith('/blob/'))).toEqual({ url: `/blob/${artifact.id}?token=short-lived`, authorization: undefined });
  });

  it('retries a transient failure of the file host', async () => {
    let failures = 1;
    fileRule = (response) => {
      if (failures-- <= 0) return false;
      response.writeHead(503);
      response.end('<Error>SlowDown</Error>');
      return true;
    };
    const bytes = await client().downloadArtifact(artifact, { licenseKey: KEY });
    expect(bytes.length).toBe(FILE.length);
    expect(fileSeen.length).toBe(2);
  });
});

describe('downloadArtifactToFile (Node)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'kf-artifact-'));
    return () => rmSync(dir, { recursive: true, force: true });
  });

  it('writes the verified file at the path (mode 0600), fetched as downloadArtifact fetches it', async () => {
    const target = path.join(dir, 'acme.tar.gz');
    expect(await downloadArtifactToFile(client(), artifact, target, { licenseKey: KEY })).toBe(target);
    expect(readFileSync(target).equals(FILE)).toBe(true);
    expect(readdirSync(dir)).toEqual(['acme.tar.gz']);
    if (process.platform !== 'win32') expect(statSync(target).mode & 0o777).toBe(0o600);
    expect(fileSeen).toEqual([{ url: `/blob/${artifact.id}?token=short-lived`, authorization: undefined }]);
  });

  it('refuses tampered, longer and cut bytes and an edited listing (ArtifactIntegrity), leaving no file and an existing one as it was', async () => {
    const target = path.join(dir, 'acme.tar.gz');
    writeFileSync(target, 'the previous version');
    const altered = Buffer.from(FILE);
    altered[FILE.length - 1] ^= 1;
    for (const body of [altered, Buffer.concat([FILE, FILE]), FILE.subarray(0, FILE.length - 1)]) {
      fileRule = (response) => {
        response.end(body);
        return true;
      };
      expect(await codeOf(downloadArtifactToFile(client(), artifact, target, { licenseKey: KEY }))).toBe('ArtifactIntegrity');
      expect(readdirSync(dir)).toEqual(['acme.tar.gz']);
      expect(readFileSync(target, 'utf8')).toBe('the previous version');
    }
    fileRule = () => false;
    expect(await codeOf(downloadArtifactToFile(client(), { ...artifact, size: artifact.size + 1 }, target, { licenseKey: KEY }))).toBe('ArtifactIntegrity');
    expect(readdirSync(dir)).toEqual(['acme.tar.gz']);
  });

  it('starts the file over on a retry after a transient failure mid-download', async () => {
    let failures = 1;
    fileRule = (response) => {
      if (failures-- <= 0) return false;
      response.writeHead(200, { 'content-length': String(FILE.length) });
      response.write(FILE.subarray(0, 1000));
      setTimeout(() => response.destroy(), 20);
      return true;
    };
    const target = path.join(dir, 'acme.tar.gz');
    await downloadArtifactToFile(client(), artifact, target, { licenseKey: KEY });
    expect(readFileSync(target).equals(FILE)).toBe(true);
    expect(fileSeen.length).toBe(2);
    expect(readdirSync(dir)).toEqual(['acme.tar.gz']);
  });

  it('reports a file it cannot write as FileWriteFailed, not retried and not a network error', async () => {
    // A folder that is a file: refused to every user, root included (a read-only folder is not).
    const notAFolder = path.join(dir, 'plain-file');
    writeFileSync(notAFolder, '');
    const error = await downloadArtifactToFile(client(), artifact, path.join(notAFolder, 'acme.tar.gz'), { licenseKey: KEY }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(KeyforgeError);
    expect((error as KeyforgeError).code).toBe('FileWriteFailed');
    expect((error as KeyforgeError).name).toBe('KeyforgeError');
    expect(apiSeen.filter((seen) => seen.url.includes('/download')).length).toBe(1);
    expect(fileSeen).toEqual([]);
    expect(readdirSync(dir)).toEqual(['plain-file']);
  });

  it('passes a failure before the file (a refusal, a bad signature) through as downloadArtifact does, creating nothing', async () => {
    const target = path.join(dir, 'acme.tar.gz');
    expect(await codeOf(downloadArtifactToFile(client(), artifact, target, { licenseKey: 'ACME-UNKN-OWN0' }))).toBe('LicenseNotFound');
    expect(await codeOf(downloadArtifactToFile(client(), await signedArtifact({ productName: 'Other App' }), target, { licenseKey: KEY }))).toBe('ArtifactIntegrity');
    expect(readdirSync(dir)).toEqual([]);
    expect(fileSeen).toEqual([]);
  });

  describe('a large file', () => {
    const BLOCK = randomBytes(1 << 20);
    const BLOCKS = 64;
    const SIZE = BLOCK.length * BLOCKS;
    const digest = (algorithm: string) => {
      const hash = createHash(algorithm);
      for (let n = 0; n < BLOCKS; n += 1) hash.update(BLOCK);
      return hash.digest('hex');
    };
    const big = { size: SIZE, sha256: digest('sha256'), sha512: digest('sha512') };
    /** Serves the 64 MiB file block by block (never held whole), the last byte flipped when `tampered`. */
    const serveBig = (tampered = false) => (response: ServerResponse) => {
      void (async () => {
        response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(SIZE) });
        for (let n = 0; n < BLOCKS; n += 1) {
          let block = BLOCK;
          if (tampered && n === BLOCKS - 1) (block = Buffer.from(BLOCK)), (block[block.length - 1] ^= 1);
          if (!response.write(block)) await once(response, 'drain');
        }
        response.end();
      })().catch(() => response.destroy());
      return true;
    };
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    /** The highest growth of retained memory (heap and array buffers, after a collection) and of RSS while `work` runs. */
    async function peakGrowth(work: () => Promise<unknown>): Promise<{ retained: number; rss: number }> {
      const retained = () => {
        const usage = process.memoryUsage();
        return usage.heapUsed + usage.arrayBuffers;
      };
      // Array buffers are freed a little after the collection that finds them dead: the baseline waits for that.
      gc();
      await new Promise((resolve) => setTimeout(resolve, 200));
      gc();
      const before = { retained: retained(), rss: process.memoryUsage().rss };
      const peak = { ...before };
      const sample = () => {
        gc();
        peak.retained = Math.max(peak.retained, retained());
        peak.rss = Math.max(peak.rss, process.memoryUsage().rss);
      };
      // A full collection takes a while on this process's heap: sampled every 250 ms, and once more at the end with
      // the work's result still referenced (a download held in memory is seen even if it ends between two samples).
      const timer = setInterval(sample, 250);
      try {
        const result = await work();
        sample();
        void result;
      } finally {
        clearInterval(timer);
      }
      return { retained: peak.retained - before.retained, rss: peak.rss - before.rss };
    }

    it('streams 64 MiB to disk in memory that does not grow with the file', async () => {
      // Warmed up first (a small file through the same code), so what the first run compiles is not counted.
      await downloadArtifactToFile(client(), artifact, path.join(dir, 'small.bin'), { licenseKey: KEY });
      rmSync(path.join(dir, 'small.bin'));
      artifact = await signedArtifact({ size: big.size, sha256: big.sha256, sha512: big.sha512 }, big);
      fileRule = serveBig();
      const target = path.join(dir, 'big.bin');
      const growth = await peakGrowth(() => downloadArtifactToFile(client(), artifact, target, { licenseKey: KEY }));
      expect(statSync(target).size).toBe(SIZE);
      const written = createHash('sha256');
      for await (const chunk of createReadStream(target)) written.update(chunk as Buffer);
      expect(written.digest('hex')).toBe(big.sha256);
      // Half the file at most, whatever the garbage collector has not yet freed of the chunks that went by. RSS also
      // carries this process's serving side and allocator slack (26–28 MB seen), so it is held only below the file.
      expect(growth.retained).toBeLessThan(SIZE / 2);
      expect(growth.rss).toBeLessThan(SIZE * 0.9);
      // The measure sees a download held in memory: about the file's size, far above the bound above. Not the
      // whole size exactly, because the baseline may still hold buffers of the previous run that are freed meanwhile.
      const held = await peakGrowth(() => client().downloadArtifact(artifact, { licenseKey: KEY }));
      expect(held.retained).toBeGreaterThanOrEqual(SIZE * 0.9);
    }, 240_000);

    it('refuses a tampered 64 MiB file (ArtifactIntegrity) and leaves nothing behind', async () => {
      artifact = await signedArtifact({ size: big.size, sha256: big.sha256, sha512: big.sha512 }, big);
      fileRule = serveBig(true);
      expect(await codeOf(downloadArtifactToFile(client(), artifact, path.join(dir, 'big.bin'), { licenseKey: KEY }))).toBe('ArtifactIntegrity');
      expect(readdirSync(dir)).toEqual([]);
    }, 240_000);
  });
});

describe('verifyArtifact against hostile input', () => {
  it('refuses any other bytes, any edited listing and any signature text with ArtifactIntegrity, never another error', async () => {
    const sdk = new KeyforgeClient({ baseUrl: api.origin, product: PRODUCT, issuer: ISSUER, jwks: jwks as never, fetch: (() => Promise.reject(new Error('offline'))) as typeof fetch });
    const refused = async (candidate: Artifact, bytes: Uint8Array) => {
      const error = await sdk.verifyArtifact(candidate, bytes).then(() => null, (caught: unknown) => caught);
      return error instanceof KeyforgeError && error.code === 'ArtifactIntegrity';
    };
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          // Other bytes: a random file, or the genuine one with one byte changed, cut or extended.
          fc.uint8Array({ maxLength: 256 }).map((bytes) => ({ artifact, bytes })),
          fc.tuple(fc.nat(FILE.length - 1), fc.integer({ min: 1, max: 255 })).map(([at, xor]) => {
            const bytes = Buffer.from(FILE);
            bytes[at] ^= xor;
            return { artifact, bytes };
          }),
          fc.nat(FILE.length - 1).map((length) => ({ artifact, bytes: FILE.subarray(0, length) })),
          // An edited listing or signature with the genuine bytes.
          fc.string({ maxLength: 300 }).map((signature) => ({ artifact: { ...artifact, signature }, bytes: FILE })),
          // One character of the signed payload changed (not its last, whose low bits base64url may ignore).
          fc
            .tuple(fc.nat(), fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'))
            .map(([n, char]) => {
              const [header, payload, signature] = artifact.signature.split('.');
              const at = n % (payload.length - 1);
              return { artifact: { ...artifact, signature: `${header}.${payload.slice(0, at)}${char}${payload.slice(at + 1)}.${signature}` }, bytes: FILE, same: payload[at] === char };
            })
            .filter((candidate) => !candidate.same),
          fc.record({ size: fc.integer(), sha256: fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }), id: fc.string() }, { requiredKeys: [] }).filter((edit) => Object.entries(edit).some(([name, value]) => (artifact as unknown as Record<string, unknown>)[name] !== value)).map((edit) => ({ artifact: { ...artifact, ...edit }, bytes: FILE })),
        ),
        async ({ artifact: candidate, bytes }) => {
          expect(await refused(candidate, bytes)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
    expect((await sdk.verifyArtifact(artifact, FILE)).artifact).toBe(artifact.id);
  });
});
