import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ArtifactTooLargeError, assertStorageKey, type ArtifactStore } from './storage.js';

/**
 * Artifacts as files under `<root>` (`DATA_DIR/releases`): `<root>/<key>` once committed, `<root>/.uploads/<random>`
 * while an upload streams in. A temporary file is renamed into place on commit (atomic on one file system), removed
 * on discard or on any failure while streaming, so an upload that stops halfway leaves nothing behind; leftovers of a
 * process that died mid-upload (older than a day: another process may be uploading now) are removed before the
 * store's first upload.
 */
export class FileArtifactStore implements ArtifactStore {
  private readonly uploads: string;
  private swept?: Promise<void>;

  constructor(private readonly root: string) {
    this.root = path.resolve(root);
    this.uploads = path.join(this.root, '.uploads');
  }

  /** Removes temporary files a process that stopped during an upload left (once per store, before its first put). */
  private sweep(): Promise<void> {
    return (this.swept ??= (async () => {
      await mkdir(this.uploads, { recursive: true, mode: 0o700 });
      const dayAgo = Date.now() - 24 * 3600_000;
      for (const name of await readdir(this.uploads)) {
        const file = path.join(this.uploads, name);
        const info = await stat(file).catch(() => undefined);
        if (info && info.mtimeMs < dayAgo) await rm(file, { force: true, recursive: true });
      }
    })());
  }

  private pathOf(key: string): string {
    assertStorageKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  async put(key: string, body: NodeJS.ReadableStream, opts: { maxBytes: number }) {
    const target = this.pathOf(key);
    await this.sweep();
    const temporary = path.join(this.uploads, randomUUID());
    const sha256 = createHash('sha256');
    const sha512 = createHash('sha512');
    let size = 0;
    const hashing = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        if (size > opts.maxBytes) {
          done(new ArtifactTooLargeError(opts.maxBytes));
          return;
        }
        sha256.update(chunk);
        sha512.update(chunk);
        done(null, chunk);
      },
    });
    try {
      // pipeline applies backpressure end to end: memory stays at a few stream buffers whatever the size.
      await pipeline(body, hashing, createWriteStream(temporary, { flags: 'wx', mode: 0o600 }));
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    let settled = false;
    return {
      size,
      sha256: sha256.digest('hex'),
      sha512: sha512.digest('hex'),
      commit: async () => {
        if (settled) throw new Error('upload already committed or discarded');
        settled = true;
        await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
        await rename(temporary, target);
      },
      discard: async () => {
        if (settled) return;
        settled = true;
        await rm(temporary, { force: true });
      },
    };
  }

  /** Always null: the server streams file-store downloads itself (the download route's signed link). */
  async presignedGetUrl(): Promise<string | null> {
    return null;
  }

  async get(key: string): Promise<NodeJS.ReadableStream> {
    const file = this.pathOf(key);
    await stat(file); // a missing object is an error here, not a stream that fails later
    return createReadStream(file);
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }
}
