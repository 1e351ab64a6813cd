import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentDisposition, S3ArtifactStore, wellFormed } from '../server/src/services/releases/s3-store.js';
import { ArtifactTooLargeError } from '../server/src/services/releases/storage.js';
import { S3_CREDENTIALS, startS3 } from './support/s3.js';
import { loadConfig } from '../server/src/config.js';
import { artifactStoreFor } from '../server/src/services/releases/store.js';

const PART = 5 * 1024 * 1024;
const CHUNK = 64 * 1024;

/** `total` bytes of random data in CHUNK-sized pieces, produced only as the reader pulls; `produced` counts them. */
function source(total: number, opts: { failAfter?: number } = {}) {
  const digest256 = createHash('sha256');
  const digest512 = createHash('sha512');
  const state = { produced: 0 };
  const stream = new Readable({
    highWaterMark: CHUNK,
    read() {
      if (opts.failAfter !== undefined && state.produced >= opts.failAfter) {
        this.destroy(new Error('the client went away'));
        return;
      }
      if (state.produced >= total) {
        this.push(null);
        return;
      }
      const chunk = randomBytes(Math.min(CHUNK, total - state.produced));
      state.produced += chunk.length;
      digest256.update(chunk);
      digest512.update(chunk);
      this.push(chunk);
    },
  });
  return { stream, state, sha256: () => digest256.digest('hex'), sha512: () => digest512.digest('hex') };
}

async function bytesOf(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('S3ArtifactStore against an S3-compatible server', () => {
  let s3: Awaited<ReturnType<typeof startS3>>;
  let store: S3ArtifactStore;

  beforeAll(async () => {
    s3 = await startS3();
    store = new S3ArtifactStore({
      bucket: s3.bucket,
      region: 'us-east-1',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      prefix: 'releases/',
      partSize: PART,
      client: { credentials: S3_CREDENTIALS },
    });
  });
  afterAll(async () => {
    await s3?.close();
  });

  const visibleKeys = async () => {
    const listed = await store.client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
    return (listed.Contents ?? []).map((object) => object.Key);
  };
  const openUploads = async () => {
    const listed = await store.client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }));
    return listed.Uploads ?? [];
  };

  it('streams an upload in parts with bounded memory, hashes it, and shows nothing until commit', async () => {
    const total = 2 * PART + 12_345; // three parts, the last one short
    const body = source(total);
    // Each part sent: how far the source had been read by then. Bounded memory means the store never reads more than
    // one part (plus the chunk that completed it) ahead of what it has sent.
    const readAhead: number[] = [];
    let sent = 0;
    store.client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'UploadPartCommand') {
          const length = (args.input as { ContentLength: number }).ContentLength;
          sent += length;
          readAhead.push(body.state.produced - sent);
        }
        return next(args);
      },
      { step: 'initialize', name: 'watchParts' },
    );
    try {
      const upload = await store.put('tenant/release/artifact-1', body.stream, { maxBytes: total });
      expect(upload.size).toBe(total);
      expect(upload.sha256).toBe(body.sha256());
      expect(upload.sha512).toBe(body.sha512());
      expect(readAhead).toHaveLength(3);
      for (const ahead of readAhead) expect(ahead).toBeLessThanOrEqual(PART + 2 * CHUNK);

      // Uploaded but not committed: no object under the key, not even in a listing.
      expect(await visibleKeys()).not.toContain('releases/tenant/release/artifact-1');
      await expect(store.get('tenant/release/artifact-1')).rejects.toThrow();

      await upload.commit();
      expect(await visibleKeys()).toContain('releases/tenant/release/artifact-1');
      const stored = await bytesOf(await store.get('tenant/release/artifact-1'));
      expect(stored.length).toBe(total);
      expect(createHash('sha256').update(stored).digest('hex')).toBe(upload.sha256);
      expect(await openUploads()).toEqual([]);
    } finally {
      store.client.middlewareStack.remove('watchParts');
    }
  });

  it('discard (a checksum the caller refuses) leaves neither an object nor an open multipart upload', async () => {
    const body = source(PART + 1);
    const upload = await store.put('tenant/release/discarded', body.stream, { maxBytes: 10 * PART });
    await upload.discard();
    expect(await visibleKeys()).not.toContain('releases/tenant/release/discarded');
    expect(await openUploads()).toEqual([]);
  });

  it('an upload that stops halfway fails and leaves nothing behind', async () => {
    const body = source(3 * PART, { failAfter: PART + 3 * CHUNK });
    await expect(store.put('tenant/release/halfway', body.stream, { maxBytes: 10 * PART })).rejects.toThrow(/went away/);
    expect(await visibleKeys()).not.toContain('releases/tenant/release/halfway');
    expect(await openUploads()).toEqual([]);
  });

  it('a body larger than maxBytes is refused as it arrives (not read to its end) and leaves nothing behind', async () => {
    const body = source(4 * PART);
    await expect(store.put('tenant/release/too-large', body.stream, { maxBytes: PART + 10 })).rejects.toBeInstanceOf(ArtifactTooLargeError);
    expect(body.state.produced).toBeLessThan(2 * PART);
    expect(await visibleKeys()).not.toContain('releases/tenant/release/too-large');
    expect(await openUploads()).toEqual([]);
  });

  it('an empty file is an object of zero bytes', async () => {
    const upload = await store.put('tenant/release/empty', Readable.from([]), { maxBytes: 10 });
    expect(upload.size).toBe(0);
    expect(upload.sha256).toBe(createHash('sha256').digest('hex'));
    await upload.commit();
    expect((await bytesOf(await store.get('tenant/release/empty'))).length).toBe(0);
  });

  it('refuses a key that is not one the server makes (path traversal)', async () => {
    await expect(store.put('../outside', Readable.from([Buffer.from('x')]), { maxBytes: 10 })).rejects.toThrow(/not a storage key/);
    await expect(store.presignedGetUrl('a/../../b', { expiresInSeconds: 60, filename: 'x' })).rejects.toThrow(/not a storage key/);
  });

  it('a presigned GET downloads the committed bytes under their file name, and stops working once it expires', async () => {
    const content = randomBytes(100_000);
    const upload = await store.put('tenant/release/presigned', Readable.from([content]), { maxBytes: content.length });
    await upload.commit();
    const filename = 'Acme Setup 2.0.0 "beta" é.exe';
    // Five seconds: the first download must arrive in time even when this process stalls under load.
    const url = await store.presignedGetUrl('tenant/release/presigned', { expiresInSeconds: 5, filename });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/keyforge-releases\/releases\/tenant\/release\/presigned\?/);
    expect(url).toContain('X-Amz-Expires=5');

    const answer = await fetch(url!);
    expect(answer.status).toBe(200);
    expect(Buffer.from(await answer.arrayBuffer()).equals(content)).toBe(true);
    expect(answer.headers.get('content-disposition')).toBe(contentDisposition(filename));

    // Wait until the link's lifetime has passed (its X-Amz-Date has second precision), then it is refused.
    const signedAt = Date.parse(new URL(url!).searchParams.get('X-Amz-Date')!.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'));
    while (Date.now() < signedAt + 6_500) await sleep(250);
    const expired = await fetch(url!);
    expect(expired.status).toBe(403);
    expect(await expired.text()).toMatch(/expired/i);
  });

  it('RELEASES_STORE=s3 makes the server keep artifacts in the bucket, with credentials from the AWS environment', async () => {
    const config = loadConfig({ RELEASES_STORE: 's3', RELEASES_S3_BUCKET: s3.bucket, RELEASES_S3_ENDPOINT: s3.endpoint, RELEASES_S3_FORCE_PATH_STYLE: 'true' });
    const configured = artifactStoreFor(config);
    expect(configured).toBeInstanceOf(S3ArtifactStore);
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey });
    try {
      const upload = await configured.put('tenant/release/configured', Readable.from([Buffer.from('from the config')]), { maxBytes: 100 });
      await upload.commit();
    } finally {
      for (const [name, value] of [['AWS_ACCESS_KEY_ID', saved.id], ['AWS_SECRET_ACCESS_KEY', saved.secret]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(await visibleKeys()).toContain('tenant/release/configured'); // no prefix by default
  });

  it('delete removes a committed object', async () => {
    const upload = await store.put('tenant/release/deleted', Readable.from([Buffer.from('bytes')]), { maxBytes: 10 });
    await upload.commit();
    await store.delete('tenant/release/deleted');
    await expect(store.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'releases/tenant/release/deleted' }))).rejects.toThrow();
  });
});

describe('contentDisposition', () => {
  it('is a valid header value for any file name, and its UTF-8 form decodes back to the name', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (name) => {
        const value = contentDisposition(name);
        // Headers accept visible ASCII and spaces only: no controls, no line breaks, nothing beyond ASCII.
        expect(value).toMatch(/^[\x20-\x7e]*$/);
        const plain = /filename="([^"]*)"/.exec(value);
        expect(plain).not.toBeNull();
        const encoded = /filename\*=UTF-8''(\S*)$/.exec(value)![1]!;
        expect(encoded).not.toMatch(/['()*]/);
        expect(decodeURIComponent(encoded)).toBe(wellFormed(name));
        expect(() => new Headers({ 'content-disposition': value })).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });
});
