/**
 * Where the client keeps what it needs between launches: the last verified offline token of each license
 * (never the license key itself), the keys fetched from the JWKS, and this installation's random device id.
 * Values are strings; the store need not be secret — the token's signature, not the store, is what is
 * trusted — but see the README on what someone who can write the store can and cannot do.
 */

/** A key/value store of strings. Methods may return promises (an async store) or values. */
export interface TokenStore {
  get(key: string): string | null | undefined | Promise<string | null | undefined>;
  set(key: string, value: string): void | Promise<void>;
  delete(key: string): void | Promise<void>;
}

/** Keeps everything in memory: lost when the process ends (the default). */
export class MemoryStore implements TokenStore {
  readonly #values = new Map<string, string>();

  get(key: string): string | null {
    return this.#values.get(key) ?? null;
  }

  set(key: string, value: string): void {
    this.#values.set(key, value);
  }

  delete(key: string): void {
    this.#values.delete(key);
  }
}

/** The subset of the Web Storage API the {@link LocalStorageStore} uses (`localStorage`, `sessionStorage` or your own). */
export interface WebStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** Keeps values in the browser's `localStorage` (or another {@link WebStorage}), under a prefix. */
export class LocalStorageStore implements TokenStore {
  readonly #storage: WebStorage;
  readonly #prefix: string;

  constructor(options: { storage?: WebStorage; prefix?: string } = {}) {
    const storage = options.storage ?? (globalThis as { localStorage?: WebStorage }).localStorage;
    if (!storage) throw new TypeError('LocalStorageStore: no localStorage here; pass { storage } (or use MemoryStore, or FileStore on Node).');
    this.#storage = storage;
    this.#prefix = options.prefix ?? 'keyforge:';
  }

  get(key: string): string | null {
    return this.#storage.getItem(this.#prefix + key);
  }

  set(key: string, value: string): void {
    this.#storage.setItem(this.#prefix + key, value);
  }

  delete(key: string): void {
    this.#storage.removeItem(this.#prefix + key);
  }
}
