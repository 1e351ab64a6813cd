// The file artifact store (services/releases/file-store.ts): streamed uploads hashed on the way, invisible until
// committed, and nothing left behind by an upload that fails, is too large or is discarded.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { FileArtifactStore } from '../server/src/services/releases/file-store.js';
import { ArtifactTooLargeError } from '../server/src/services/releases/storage.js';

const roots: string[] = [];
async function freshStore() {
  const root = await mkdtemp(path.join(tmpdir(), 'kf-artifacts-'));
  roots.push(root);
  return { root, store: new FileArtifactStore(root) };
}
afterAll(() => Promise.all(roots.map((root) => rm(root, { recursive: true, force: true }))));

/** Every file under `root` (relative paths), temporary ones included. */
async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.relative(root, path.join(entry.parentPath, entry.name))).sort();
}

const chunks = (count: number, size: number) => Readable.from((function* () { for (let i = 0; i < count; i++) yield Buffer.alloc(size, i % 251); })());

describe('FileArtifactStore', () => {
  it('hashes while streaming, keeps the object invisible until commit, then serves it', async () => {
    const { root, store } = await freshStore();
    const expected = Buffer.concat(Array.from({ length: 64 }, (_, i) => Buffer.alloc(65536, i % 251)));
    const put = await store.put('t/r/a1', chunks(64, 65536), { maxBytes: 10 * 1024 * 1024 });
    expect(put.size).toBe(expected.length);
    expect(put.sha256).toBe(createHash('sha256').update(expected).digest('hex'));
    expect(put.sha512).toBe(createHash('sha512').update(expected).digest('hex'));
    await expect(store.get('t/r/a1')).rejects.toThrow();
    await put.commit();
    const read: Buffer[] = [];
    for await (const chunk of (await store.get('t/r/a1')) as AsyncIterable<Buffer>) read.push(chunk);
    expect(Buffer.concat(read).equals(expected)).toBe(true);
    expect(await filesUnder(root)).toEqual(['t/r/a1']);
    await store.delete('t/r/a1');
    expect(await filesUnder(root)).toEqual([]);
  });

  it('leaves nothing behind when discarded, over the limit, or when the body breaks off', async () => {
    const { root, store } = await freshStore();
    const discarded = await store.put('t/r/a2', chunks(2, 1000), { maxBytes: 10_000 });
    await discarded.discard();
    await expect(store.put('t/r/a3', chunks(20, 1000), { maxBytes: 10_000 })).rejects.toBeInstanceOf(ArtifactTooLargeError);
    const broken = new Readable({ read() {} });
    broken.push(Buffer.alloc(5000));
    setImmediate(() => broken.destroy(new Error('connection reset')));
    await expect(store.put('t/r/a4', broken, { maxBytes: 10_000 })).rejects.toThrow('connection reset');
    expect(await filesUnder(root)).toEqual([]);
  });

  it('refuses keys that could leave its root', async () => {
    const { store } = await freshStore();
    for (const key of ['../x', 't/../../x', '/etc/passwd', 't//x', 't/.x', 'a\\b', 't/x\u0000']) {
      await expect(store.put(key, chunks(1, 1), { maxBytes: 10 })).rejects.toThrow('not a storage key');
      await expect(store.get(key)).rejects.toThrow('not a storage key');
    }
  });
});
