// jose's own CryptoKey type, not the DOM's: the emitted declarations must compile where no DOM lib is loaded (Node).
import { importJWK, type CryptoKey, type JWK } from 'jose';
import { VerificationError } from './errors.js';
import type { Transport } from './http.js';
import type { TokenStore } from './stores.js';

/** A JSON Web Key Set, as served at `/.well-known/jwks.json`. */
export interface JSONWebKeySet {
  keys: JWK[];
}

/** The server's JWKS may be cached this long (it sends `Cache-Control: max-age=300`). */
const MAX_AGE_MS = 5 * 60_000;
/** A `kid` the JWKS did not list refetches it at most this often (the first sight of a new key, after a rotation, refetches at once). */
const REFETCH_COOLDOWN_MS = 10_000;

const usable = (jwk: JWK): boolean => jwk.kty === 'OKP' && jwk.crv === 'Ed25519' && typeof jwk.x === 'string' && (jwk.alg === undefined || jwk.alg === 'EdDSA' || jwk.alg === 'Ed25519');

/**
 * The public keys that verify offline tokens. Pinned keys (shipped with the application) are the only ones
 * trusted when given; otherwise the server's JWKS is fetched, cached in memory and in the store (for
 * verification after an offline restart), and fetched again when a token names an unknown `kid`.
 */
export class KeyRing {
  #keys: JWK[] | null = null;
  #fetchedAt = -Infinity;
  /** When each unknown `kid` last made us refetch. */
  readonly #misses = new Map<string, number>();
  #fetching: Promise<JWK[]> | null = null;
  readonly #imported = new Map<string, Promise<CryptoKey | Uint8Array>>();

  constructor(
    private readonly pinned: JSONWebKeySet | undefined,
    private readonly transport: Transport,
    private readonly store: TokenStore,
    private readonly storeKey: string,
    private readonly clock: () => number,
  ) {
    if (pinned) {
      if (!Array.isArray(pinned.keys) || !pinned.keys.some(usable)) throw new TypeError('jwks: pinned keys must be a JWKS ({ keys: [...] }) with at least one Ed25519 key.');
      this.#keys = pinned.keys.filter(usable);
    }
  }

  /** The key that verifies a token with this `kid`; `online` allows fetching the JWKS. */
  async keyFor(kid: string | undefined, options: { online: boolean; signal?: AbortSignal }): Promise<CryptoKey | Uint8Array> {
    if (kid === undefined) throw new VerificationError('TokenInvalid', 'The token names no signing key (kid).');
    let jwk = (await this.current(options)).find((key) => key.kid === kid);
    if (!jwk && !this.pinned && options.online && this.clock() - (this.#misses.get(kid) ?? -Infinity) >= REFETCH_COOLDOWN_MS) {
      if (this.#misses.size > 100) this.#misses.clear();
      this.#misses.set(kid, this.clock());
      jwk = (await this.fetch(options.signal)).find((key) => key.kid === kid);
    }
    if (!jwk) {
      throw new VerificationError(
        'KeyUnknown',
        this.pinned
          ? `The token is signed by key ${kid}, which is not among the pinned keys (after a key rotation, ship the new JWKS).`
          : `The token is signed by key ${kid}, which the server's JWKS does not list.`,
      );
    }
    const cacheKey = `${jwk.kid}:${jwk.x}`;
    let imported = this.#imported.get(cacheKey);
    if (!imported) {
      imported = importJWK({ kty: jwk.kty, crv: jwk.crv, x: jwk.x }, 'EdDSA') as Promise<CryptoKey | Uint8Array>;
      this.#imported.set(cacheKey, imported);
      imported.catch(() => this.#imported.delete(cacheKey));
    }
    return imported;
  }

  /** The keys to try first: pinned, else fresh ones in memory, else (online) fetched, else the stored copy. */
  private async current(options: { online: boolean; signal?: AbortSignal }): Promise<JWK[]> {
    if (this.pinned) return this.#keys!;
    if (this.#keys && (!options.online || this.clock() - this.#fetchedAt < MAX_AGE_MS)) return this.#keys;
    if (options.online) {
      try {
        return await this.fetch(options.signal);
      } catch (error) {
        if (options.signal?.aborted) throw error;
        // The JWKS endpoint is away: a copy we have still verifies tokens of the keys it lists.
        if (this.#keys) return this.#keys;
        const stored = await this.stored();
        if (stored.length) return stored;
        throw new VerificationError('KeyUnknown', `The server's keys (JWKS) could not be fetched: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
    }
    return this.#keys ?? (await this.stored());
  }

  /** Fetches the JWKS (one request at a time), keeps it in memory and in the store. */
  fetch(signal?: AbortSignal): Promise<JWK[]> {
    if (this.pinned) return Promise.resolve(this.#keys!);
    this.#fetching ??= (async () => {
      try {
        const { json } = await this.transport.retrying(() => this.transport.once('GET', '/.well-known/jwks.json', { signal }), signal);
        const keys = Array.isArray(json.keys) ? (json.keys as JWK[]).filter(usable) : [];
        this.#keys = keys;
        this.#fetchedAt = this.clock();
        // Best effort: a store that cannot be written only costs the offline copy.
        await Promise.resolve(this.store.set(this.storeKey, JSON.stringify({ keys }))).catch(() => undefined);
        return keys;
      } finally {
        this.#fetching = null;
      }
    })();
    return this.#fetching;
  }

  private async stored(): Promise<JWK[]> {
    try {
      const raw = await this.store.get(this.storeKey);
      const parsed = raw ? (JSON.parse(raw) as JSONWebKeySet) : null;
      const keys = Array.isArray(parsed?.keys) ? parsed.keys.filter(usable) : [];
      if (keys.length) this.#keys = keys;
      return keys;
    } catch {
      return [];
    }
  }
}
