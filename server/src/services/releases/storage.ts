/**
 * Where release artifacts' bytes live. The database holds each artifact's row (its digests and `storageKey`); the
 * store holds the bytes under that key. Two implementations: FileArtifactStore (files under `DATA_DIR/releases`, the
 * default, what the embedded start uses) and S3ArtifactStore (an S3-compatible object store, for several servers).
 * `RELEASES_STORE` chooses (releases/store.ts).
 */
export interface ArtifactStore {
  /** Streams `body` into a temporary object, hashing as it goes; bounded memory. Nothing visible until commit. */
  put(key: string, body: NodeJS.ReadableStream, opts: { maxBytes: number }): Promise<{ size: number; sha256: string; sha512: string; commit(): Promise<void>; discard(): Promise<void> }>;
  /** A short-lived URL for a committed object, or null when Keyforge itself must serve it (file store). */
  presignedGetUrl(key: string, opts: { expiresInSeconds: number; filename: string }): Promise<string | null>;
  /** Streams a committed object (file store downloads). */
  get(key: string): Promise<NodeJS.ReadableStream>;
  delete(key: string): Promise<void>;
}

/**
 * Keys are made by the server (`<tenant id>/<release id>/<artifact id>`), never from a client's file name; a store
 * still refuses anything else, so that no key can name a path outside its root.
 */
export const STORAGE_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}(\/[A-Za-z0-9][A-Za-z0-9_-]{0,99}){0,7}$/;

export function assertStorageKey(key: string): void {
  if (!STORAGE_KEY_PATTERN.test(key)) throw new Error(`not a storage key: ${JSON.stringify(key.slice(0, 200))}`);
}

/** Thrown by `put` when the body is larger than `maxBytes` (the temporary object is already gone). */
export class ArtifactTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the upload is larger than ${maxBytes} bytes`);
    this.name = 'ArtifactTooLargeError';
  }
}
