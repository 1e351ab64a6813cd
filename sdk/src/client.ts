import { decodeJwt } from 'jose';
import { ApiError, KeyforgeError, LicenseRejectedError, NetworkError, VerificationError, isTransient } from './errors.js';
import { FloatingSession, type CheckoutAnswer } from './floating.js';
import { DEFAULT_RETRY, Transport, type RetryOptions } from './http.js';
import { KeyRing, type JSONWebKeySet } from './keys.js';
import { MemoryStore, type TokenStore } from './stores.js';
import { verifyOfflineToken, type Entitlement } from './tokens.js';
import { checkArtifactBytes, currentPlatform, fetchArtifact, verifyArtifactSignature, type Artifact, type ArtifactClaims, type ArtifactSink, type Release, type ReleaseQuery, type UpdateCheck } from './releases.js';
import { UsageQueue, type QueuedUsage, type UsageFlush } from './usage.js';
import { LicenseWatcher, type LicenseState, type WatchProbe, type WatchStatus } from './watch.js';
import type {
  Activation,
  ActivateOptions,
  CheckoutOptions,
  Deactivation,
  DeactivateOptions,
  LicenseStatus,
  MeterOptions,
  MeterResult,
  QueuedMeter,
  QueueingMeterOptions,
  WatchOptions,
  Validation,
  ValidateOfflineOptions,
  ValidateOptions,
  ActivationRequest,
  ActivationRequestOptions,
  LicenseFileOptions,
  OfflineDeactivation,
} from './types.js';
import { normalizeKey, randomToken, sha256Hex } from './util.js';
import {
  LICENSE_FILE_KIND,
  encodeRequest,
  keyHint,
  newDeviceKey,
  openLicenseFile,
  requestMac,
  signDeactivationProof,
  type DeviceKey,
} from './license-files.js';

export interface KeyforgeClientOptions {
  /** The licensing server's origin, without `/api/v1` (e.g. `https://licenses.example.com`). */
  baseUrl: string;
  /**
   * Your application's product name(s) as the vendor named them in Keyforge. A token for another product is
   * refused (`WrongProduct`), unless it is a bundle that contains one of them; `activate` sends them, so the server
   * refuses such a key (`ProductMismatch`) before it takes a seat.
   */
  product: string | readonly string[];
  /** The expected `iss` of offline tokens: the server's `PUBLIC_URL`. Default: `baseUrl`. */
  issuer?: string;
  /**
   * Public keys pinned at build time (the server's `/.well-known/jwks.json`, saved with your app). When given
   * they are the only keys trusted and the JWKS is never fetched. Default: fetched and cached.
   */
  jwks?: JSONWebKeySet;
  /** Where tokens, fetched keys and the installation id are kept. Default: a {@link MemoryStore}. */
  store?: TokenStore;
  /** Per-attempt timeout in milliseconds (default 10000). */
  timeoutMs?: number;
  /** Retry policy on 429/502/503/504 and network failures. */
  retry?: RetryOptions;
  /** Leeway for clock differences when checking token times, in seconds (default 300). */
  clockToleranceSeconds?: number;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
  /** The local wall clock in ms since the epoch (default `Date.now`); for tests. */
  clock?: () => number;
}

/** What the store keeps per license: the last verified token and the clock facts to check it offline. */
interface TokenRecord {
  v: 1;
  token: string;
  /** Server clock minus local clock, measured when the token arrived. */
  skewMs: number;
  /** The latest server-clock time seen for this license (detects a clock set back). */
  lastSeenAt: number;
}

/** What the store keeps of a license's offline activation: the device key pairs (private halves included). */
interface DeviceKeyRecord {
  v: 1;
  /** The key of the activation the installed license file is bound to. */
  active?: DeviceKey & { deviceId: string; activation: string; license: string };
  /** The key of the request written last and not yet answered. */
  pending?: DeviceKey & { deviceId: string; challenge: string };
}

/** Below this, a measured clock difference is noise (whole-second `iat`, network latency). */
const SKEW_NOISE_MS = 2000;
const DEVICE_KEY = 'device';

const optional = <T extends Record<string, unknown>>(fields: T): Partial<T> =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>;

function requireKey(licenseKey: unknown): string {
  if (typeof licenseKey !== 'string' || !licenseKey.trim()) throw new TypeError('licenseKey must be a non-empty string.');
  return licenseKey;
}

/** The watcher's status for a rejection code (others: `rejected`). */
const WATCH_STATUS: Record<string, WatchStatus> = {
  LicenseRevoked: 'revoked',
  Suspended: 'suspended',
  LicenseExpired: 'expired',
  DeviceNotActivated: 'device-freed',
  LicenseNotFound: 'not-found',
};

const rejection = (json: Record<string, unknown>) =>
  new LicenseRejectedError(typeof json.errorCode === 'string' ? json.errorCode : 'Rejected', typeof json.message === 'string' ? json.message : 'The server refused the request.', json);

/**
 * The Keyforge licensing client. One instance per server and application; safe to share.
 *
 * ```ts
 * const keyforge = new KeyforgeClient({ baseUrl: 'https://licenses.example.com', product: 'Acme Studio', jwks });
 * await keyforge.activate({ licenseKey });                      // once per installation
 * const { entitlement } = await keyforge.validate({ licenseKey, offlineFallback: true }); // every launch
 * ```
 */
export class KeyforgeClient {
  readonly baseUrl: string;
  readonly issuer: string;
  readonly products: readonly string[];
  readonly #transport: Transport;
  readonly #keys: KeyRing;
  readonly #store: TokenStore;
  readonly #clock: () => number;
  readonly #toleranceSeconds: number;
  readonly #usage: UsageQueue;
  #deviceId: Promise<string> | null = null;

  constructor(options: KeyforgeClientOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new TypeError('baseUrl must be an absolute http(s) URL, e.g. https://licenses.example.com');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TypeError('baseUrl must be an http(s) URL.');
    if (url.search || url.hash || url.username || url.password) throw new TypeError('baseUrl must not carry a query, fragment or credentials.');
    this.baseUrl = `${url.origin}${url.pathname}`.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
    this.issuer = options.issuer ?? this.baseUrl;
    this.products = typeof options.product === 'string' ? [options.product] : [...options.product];
    if (!this.products.length || this.products.some((name) => typeof name !== 'string' || !name)) throw new TypeError('product must name your application\'s product (or products).');
    this.#clock = options.clock ?? Date.now;
    this.#store = options.store ?? new MemoryStore();
    this.#usage = new UsageQueue(this.#store);
    this.#toleranceSeconds = options.clockToleranceSeconds ?? 300;
    const fetchImpl = options.fetch ?? globalThis.fetch?.bind(globalThis);
    if (!fetchImpl) throw new TypeError('No fetch on this platform: pass options.fetch.');
    this.#transport = new Transport(this.baseUrl, fetchImpl, options.timeoutMs ?? 10_000, { ...DEFAULT_RETRY, ...options.retry }, this.#clock);
    this.#keys = new KeyRing(options.jwks, this.#transport, this.#store, `jwks:${this.issuer}`, this.#clock);
  }

  /**
   * This installation's device id: 64 random hex characters created on first use and kept in the store.
   * Used by `activate` and `deactivate` when no `deviceId` is given. With a {@link MemoryStore} it lasts only
   * as long as the process: use a persistent store (or your own `deviceId`) for real installations.
   */
  deviceId(): Promise<string> {
    this.#deviceId ??= (async () => {
      const stored = await this.#store.get(DEVICE_KEY);
      if (stored && /^[0-9a-f]{64}$/.test(stored)) return stored;
      const created = Array.from(crypto.getRandomValues(new Uint8Array(32)), (byte) => byte.toString(16).padStart(2, '0')).join('');
      await this.#store.set(DEVICE_KEY, created);
      return created;
    })().catch((error: unknown) => {
      this.#deviceId = null;
      throw error;
    });
    return this.#deviceId;
  }

  /**
   * Registers this installation and takes a seat. Each attempt fetches its own fresh nonce; an attempt whose
   * answer is lost is retried with the same device, which the server answers with the same seat. The client's
   * `product` is sent along: a key of another product (not a bundle containing one of them) is refused with
   * `ProductMismatch` without taking a seat.
   *
   * @throws {@link LicenseRejectedError} `SeatsExhausted`, `ProductMismatch`, `DeviceIdRequired`, `LicenseExpired` …
   */
  async activate(options: ActivateOptions): Promise<Activation> {
    const licenseKey = requireKey(options.licenseKey);
    const deviceId = options.deviceId ?? (await this.deviceId());
    // The client's product(s): the server refuses a key of another product (ProductMismatch) before it takes a seat.
    const product = this.products.length === 1 ? this.products[0] : [...this.products];
    const body = { licenseKey, deviceId, product, ...optional({ deviceName: options.deviceName, version: options.version, userEmail: options.userEmail }) };
    const { json } = await this.#transport.retrying(async () => {
      const issued = await this.#transport.once('GET', '/api/v1/nonce', { signal: options.signal });
      if (typeof issued.json.nonce !== 'string') throw new ApiError({ code: 'InvalidResponse', message: 'GET /api/v1/nonce answered without a nonce.', status: issued.status });
      return this.#transport.once('POST', '/api/v1/activate', { body: { ...body, nonce: issued.json.nonce }, signal: options.signal });
    }, options.signal);
    if (json.isValid !== true) throw rejection(json);
    return { ...(json as unknown as Activation), deviceId };
  }

  /**
   * Checks the license with the server (on every launch) and verifies the signed entitlement: EdDSA only,
   * a trusted key, the issuer, this request's challenge, the product and (when given) the device. The token
   * is then stored for {@link KeyforgeClient.validateOffline}.
   *
   * @throws {@link LicenseRejectedError} when the license is not valid (the stored token is deleted);
   *   {@link VerificationError} when the token does not check out; {@link NetworkError} / {@link ApiError}
   *   when the server could not answer (unless `offlineFallback` answers from the stored token).
   */
  validate(options: ValidateOptions): Promise<Validation> {
    return this.#validate(options, true);
  }

  /** validate, with the transport's retries (`retry`) or one attempt (a watcher: its schedule is the retry). */
  async #validate(options: ValidateOptions, retry: boolean): Promise<Validation> {
    const licenseKey = requireKey(options.licenseKey);
    const challenge = randomToken(24);
    const { requireActivation } = options;
    // The device-scoped check needs a device: the installation id, as activate uses, unless one is given.
    const deviceId = requireActivation ? (options.deviceId ?? (await this.deviceId())) : options.deviceId;
    const body = { licenseKey, challenge, ...optional({ version: options.version, deviceId, requireActivation: requireActivation || undefined }) };
    let json: Record<string, unknown>;
    try {
      const attempt = () => this.#transport.once('POST', '/api/v1/validate', { body, signal: options.signal });
      ({ json } = retry ? await this.#transport.retrying(attempt, options.signal) : await attempt());
    } catch (error) {
      if (!options.offlineFallback || !isTransient(error) || options.signal?.aborted) throw error;
      try {
        return { ...(await this.validateOffline({ licenseKey, deviceId, requireActivation })), onlineError: error };
      } catch (offlineError) {
        // Nothing stored: the network failure is the news. Otherwise why the stored token does not do.
        throw offlineError instanceof VerificationError && offlineError.code === 'TokenMissing' ? error : offlineError;
      }
    }
    const receivedAt = this.#clock();
    if (json.isValid !== true) {
      // A definite "no": the stored token must not keep the application running offline. (The rejection is the
      // news even if the store fails.)
      await this.forget(licenseKey).catch(() => undefined);
      throw rejection(json);
    }
    const token = json.offlineCacheToken;
    if (typeof token !== 'string') throw new VerificationError('TokenMissing', 'The server answered without an offline token.');
    const skewMs = this.#skew(token, receivedAt);
    const entitlement = await this.#verify(token, { online: true, now: receivedAt + skewMs, challenge, deviceId, requireActivation, signal: options.signal });
    await this.#save(licenseKey, { v: 1, token, skewMs, lastSeenAt: receivedAt + skewMs });
    return { source: 'online', entitlement, license: json as LicenseStatus, offlineToken: token, offlineUntil: entitlement.expiresAt, clockSkewSeconds: Math.round(skewMs / 1000) };
  }

  /**
   * Answers from the last token `validate` stored, without a network: it must verify against the pinned
   * or cached keys, be within its grace period (`exp`, with the clock difference measured online), be for
   * this product and (when given) this device, and the clock must not have been set back.
   *
   * @throws {@link VerificationError} `TokenMissing`, `TokenInvalid` (tampered), `TokenExpired`, `WrongProduct`,
   *   `WrongDevice`, `ClockRollback`, `OfflineNotAllowed`, `KeyUnknown`.
   */
  async validateOffline(options: ValidateOfflineOptions): Promise<Validation> {
    const licenseKey = requireKey(options.licenseKey);
    const record = await this.#load(licenseKey);
    const now = this.#clock() + record.skewMs;
    const toleranceMs = this.#toleranceSeconds * 1000;
    if (now < record.lastSeenAt - toleranceMs) {
      throw new VerificationError('ClockRollback', 'The clock is earlier than a time already seen for this license: it has been set back.');
    }
    const entitlement = await this.#verify(record.token, { online: false, now, deviceId: options.deviceId, requireActivation: options.requireActivation });
    if (now < entitlement.issuedAt.getTime() - toleranceMs) {
      throw new VerificationError('ClockRollback', 'The clock is earlier than the time the token was issued: it has been set back.');
    }
    // A license file is the vendor's own grant of offline use, until its ttl.
    if (!entitlement.offlineGraceDays && entitlement.claims.kind !== LICENSE_FILE_KIND) {
      throw new VerificationError('OfflineNotAllowed', 'This license has no offline grace period: it must be validated online.');
    }
    // Best effort: a read-only store still answers offline (it only loses the rollback high-water mark).
    if (now > record.lastSeenAt) await this.#save(licenseKey, { ...record, lastSeenAt: now }).catch(() => undefined);
    return { source: 'offline', entitlement, license: null, offlineToken: record.token, offlineUntil: entitlement.expiresAt, clockSkewSeconds: Math.round(record.skewMs / 1000) };
  }

  /**
   * Verifies a signed license file offline (`-----BEGIN KEYFORGE LICENSE FILE-----`, from the console, the customer
   * portal, `POST /api/v1/license-file` or an offline activation): opened with the license key when encrypted, signed
   * by a pinned or cached key (EdDSA), not expired, for this product and (when given) bound to this device, and the
   * clock not set back (before the file's issue time, or before a time already seen for this license).
   *
   * @throws {@link VerificationError} `TokenInvalid` (tampered, or not a license file), `TokenExpired`, `WrongDevice`,
   *   `WrongProduct`, `ClockRollback`, `KeyUnknown` — the errors of {@link KeyforgeClient.validateOffline}.
   */
  async verifyLicenseFile(text: string, options: LicenseFileOptions = {}): Promise<Entitlement> {
    const token = await openLicenseFile(text, options);
    const highWater = options.licenseKey ? (await this.#load(options.licenseKey).catch(() => null))?.lastSeenAt : undefined;
    return this.#verifyFileToken(token, { ...options, highWater });
  }

  /**
   * Verifies a license file (as {@link KeyforgeClient.verifyLicenseFile}) and stores it for the license, so
   * `validateOffline` answers from it until it expires: for a file the vendor or the customer portal handed out.
   */
  async installLicenseFile(text: string, options: LicenseFileOptions & { licenseKey: string }): Promise<Validation> {
    const licenseKey = requireKey(options.licenseKey);
    const token = await openLicenseFile(text, options);
    const recordKey = await this.#recordKey(licenseKey);
    return this.#storeFile(recordKey, token, options);
  }

  /**
   * Fetches a signed license file while online (`POST /api/v1/license-file`) and installs it (as
   * {@link KeyforgeClient.installLicenseFile}), so the application keeps working offline until the file expires,
   * whatever the license's offline grace period. With `deviceId` the file is bound to this device, which must hold an
   * activation; `encrypt` asks for a file that reveals nothing without the key (and device).
   *
   * @throws {@link LicenseRejectedError} `LicenseNotFound`, `LicenseRevoked`, `Suspended`, `LicenseExpired`,
   *   `DeviceNotActivated`; {@link VerificationError} when the file does not check out.
   */
  async fetchLicenseFile(options: { licenseKey: string; deviceId?: string; encrypt?: boolean; signal?: AbortSignal }): Promise<Validation & { licenseFile: string }> {
    const licenseKey = requireKey(options.licenseKey);
    const body = { licenseKey, ...optional({ deviceId: options.deviceId, encrypt: options.encrypt }) };
    const { json } = await this.#transport.retrying(() => this.#transport.once('POST', '/api/v1/license-file', { body, signal: options.signal }), options.signal);
    if (json.isValid !== true) throw rejection(json);
    if (typeof json.licenseFile !== 'string') throw new ApiError({ code: 'InvalidResponse', message: 'POST /api/v1/license-file answered without a file.', status: 200 });
    const validation = await this.installLicenseFile(json.licenseFile, { licenseKey, deviceId: options.deviceId, requireActivation: options.deviceId !== undefined });
    return { ...validation, licenseFile: json.licenseFile };
  }

  /**
   * Writes an activation request for a machine that cannot reach the server. It carries this device's id and name, a
   * fresh Ed25519 public key (the private half stays in the store), a random challenge, the key's public hint (which
   * license) and a MAC under the license key (proof the key was at hand, without the key). Carry `request` (or the
   * one-line `compact` form, for a QR code) to the customer portal or to the vendor; pass what they give back to
   * {@link KeyforgeClient.applyActivationResponse}. A newer request replaces an unanswered one.
   */
  async createActivationRequest(options: ActivationRequestOptions): Promise<ActivationRequest> {
    const licenseKey = requireKey(options.licenseKey);
    const deviceId = options.deviceId ?? (await this.deviceId());
    const key = await newDeviceKey();
    const challenge = randomToken(32);
    const fields = {
      v: 1 as const,
      hint: keyHint(licenseKey),
      device: deviceId,
      name: options.deviceName ?? null,
      pub: key.pub,
      challenge,
      iat: Math.floor(this.#clock() / 1000),
      product: [...this.products],
      version: options.version ?? null,
    };
    const mac = await requestMac(licenseKey, fields);
    const digest = await this.#digest(licenseKey);
    const record = await this.#deviceKeys(digest);
    await this.#store.set(`device-key:${digest}`, JSON.stringify({ ...record, pending: { ...key, deviceId, challenge } }));
    await this.#store.set(`offline-request:${challenge}`, digest);
    return { ...encodeRequest({ ...fields, mac }), deviceId, challenge };
  }

  /**
   * Installs the answer to this installation's activation request: a device license file that must echo the
   * request's challenge, be bound to its device and device key, attest the activation and verify as
   * {@link KeyforgeClient.verifyLicenseFile} does. From then on `validateOffline` answers from it until it expires.
   * `licenseKey` is needed only when the response was encrypted.
   *
   * @throws {@link VerificationError} `ChallengeMismatch` (not the answer to this installation's last request, or
   *   used already), `WrongDevice`, `TokenInvalid` (altered) …
   */
  async applyActivationResponse(text: string, options: { licenseKey?: string } = {}): Promise<Validation> {
    const pendingOf = async (challenge: unknown) => {
      const digest = typeof challenge === 'string' ? await this.#store.get(`offline-request:${challenge}`) : null;
      const pending = digest ? (await this.#deviceKeys(digest)).pending : undefined;
      return digest && pending && pending.challenge === challenge ? { digest, pending } : null;
    };
    // The request this answers: named by the challenge the (signed) file echoes, checked again after verification.
    let token: string;
    let found: Awaited<ReturnType<typeof pendingOf>> = null;
    if (options.licenseKey) {
      const record = await this.#deviceKeys(await this.#digest(options.licenseKey));
      token = await openLicenseFile(text, { licenseKey: options.licenseKey, deviceId: record.pending?.deviceId });
    } else {
      token = await openLicenseFile(text, {});
    }
    try {
      found = await pendingOf(decodeJwt(token).nonce);
    } catch (error) {
      throw new VerificationError('TokenInvalid', 'The activation response is damaged: its token is not readable.', { cause: error });
    }
    if (!found) throw new VerificationError('ChallengeMismatch', 'This is not the answer to the last activation request of this installation (or it was applied already).');
    const { digest, pending } = found;
    const validation = await this.#storeFile(`license:${digest}`, token, { deviceId: pending.deviceId, requireActivation: true, challenge: pending.challenge });
    const claims = validation.entitlement.claims;
    if (claims.deviceKey !== pending.pub || typeof claims.activation !== 'string') {
      await this.#store.delete(`license:${digest}`);
      throw new VerificationError('WrongDevice', 'The response is bound to another device key: not the answer to this installation\'s request.');
    }
    const active = { jwk: pending.jwk, pub: pending.pub, deviceId: pending.deviceId, activation: claims.activation, license: validation.entitlement.licenseId };
    await this.#store.set(`device-key:${digest}`, JSON.stringify({ v: 1, active } satisfies DeviceKeyRecord));
    await this.#store.delete(`offline-request:${pending.challenge}`);
    return validation;
  }

  /**
   * Offline deactivation: deletes the license file (and token) stored for the license and returns a proof, signed
   * with this device's private key, that the customer portal or the vendor uploads to free the seat. The proof frees
   * this one device only, once. Keep it until it has been uploaded: the file it replaces is gone.
   *
   * @throws {@link VerificationError} `TokenMissing` when this installation holds no offline activation of the license.
   */
  async deactivateOffline(options: { licenseKey: string }): Promise<OfflineDeactivation> {
    const licenseKey = requireKey(options.licenseKey);
    const digest = await this.#digest(licenseKey);
    const { active } = await this.#deviceKeys(digest);
    if (!active) throw new VerificationError('TokenMissing', 'This installation holds no offline activation of this license (apply an activation response first).');
    const proof = await signDeactivationProof(active.jwk, { activation: active.activation, license: active.license, device: active.deviceId, iat: Math.floor(this.#clock() / 1000) });
    await this.forget(licenseKey);
    await this.#store.delete(`device-key:${digest}`);
    return { proof, activationId: active.activation, deviceId: active.deviceId };
  }

  /** Verifies a license file's token: a signed file (`kind`), then the clock checks of validateOffline. */
  async #verifyFileToken(token: string, options: LicenseFileOptions & { highWater?: number; challenge?: string }): Promise<Entitlement> {
    const now = this.#clock();
    const toleranceMs = this.#toleranceSeconds * 1000;
    if (options.highWater !== undefined && now < options.highWater - toleranceMs) {
      throw new VerificationError('ClockRollback', 'The clock is earlier than a time already seen for this license: it has been set back.');
    }
    const entitlement = await this.#verify(token, { online: options.fetchKeys === true, now, deviceId: options.deviceId, requireActivation: options.requireActivation, challenge: options.challenge });
    if (entitlement.claims.kind !== LICENSE_FILE_KIND) throw new VerificationError('TokenInvalid', 'This is not a license file (an online token, or something else).');
    if (now < entitlement.issuedAt.getTime() - toleranceMs) {
      throw new VerificationError('ClockRollback', 'The clock is earlier than the time the license file was issued: it has been set back.');
    }
    return entitlement;
  }

  /** Verifies a license file's token and stores it as the license's record (validateOffline then answers from it). */
  async #storeFile(recordKey: string, token: string, options: LicenseFileOptions & { challenge?: string }): Promise<Validation> {
    const raw = await this.#store.get(recordKey);
    const previous = raw ? (JSON.parse(raw) as Partial<TokenRecord>) : null;
    const highWater = Number.isFinite(previous?.lastSeenAt) ? previous!.lastSeenAt : undefined;
    const entitlement = await this.#verifyFileToken(token, { ...options, highWater });
    const now = this.#clock();
    // A file is verified with the local clock (an air-gapped machine has no other): no clock difference is assumed.
    await this.#store.set(recordKey, JSON.stringify({ v: 1, token, skewMs: 0, lastSeenAt: Math.max(now, highWater ?? 0) } satisfies TokenRecord));
    return { source: 'offline', entitlement, license: null, offlineToken: token, offlineUntil: entitlement.expiresAt, clockSkewSeconds: 0 };
  }

  async #deviceKeys(digest: string): Promise<DeviceKeyRecord> {
    try {
      const raw = await this.#store.get(`device-key:${digest}`);
      const parsed = raw ? (JSON.parse(raw) as DeviceKeyRecord) : null;
      return parsed?.v === 1 ? parsed : { v: 1 };
    } catch {
      return { v: 1 };
    }
  }

  /**
   * Frees the seat of a device (default: this installation) and deletes the stored token. Safe to retry: when
   * an attempt's answer was lost and the retry finds the seat already free, it resolves with
   * `remainingActivations: null`.
   *
   * @throws {@link LicenseRejectedError} `ActivationNotFound`, `LicenseNotFound`.
   */
  async deactivate(options: DeactivateOptions): Promise<Deactivation> {
    const licenseKey = requireKey(options.licenseKey);
    const deviceId = options.deviceId ?? (await this.deviceId());
    let unanswered = false;
    const { json } = await this.#transport.retrying(
      () => this.#transport.once('POST', '/api/v1/deactivate', { body: { licenseKey, deviceId }, signal: options.signal }),
      options.signal,
      (error) => (unanswered ||= error instanceof NetworkError),
    );
    if (json.deactivated !== true) {
      if (!(unanswered && json.errorCode === 'ActivationNotFound')) throw rejection(json);
    }
    await this.forget(licenseKey);
    return { deactivated: true, remainingActivations: typeof json.remainingActivations === 'number' ? json.remainingActivations : null };
  }

  /**
   * Takes a floating seat and returns the session, which heartbeats itself until
   * {@link FloatingSession.checkin} (or `await using`). Retries replace their own unanswered checkout (same
   * device), so a lost answer never holds a second seat.
   *
   * @throws {@link LicenseRejectedError} `FloatingSeatsExhausted` (retry later), `FloatingNotEnabled` …
   */
  async checkout(options: CheckoutOptions): Promise<FloatingSession> {
    const licenseKey = requireKey(options.licenseKey);
    const deviceId = options.deviceId ?? randomToken(24);
    const product = this.products.length === 1 ? this.products[0] : [...this.products];
    const body = { licenseKey, deviceId, product, ...optional({ deviceName: options.deviceName, version: options.version }) };
    const { json } = await this.#transport.retrying(() => this.#transport.once('POST', '/api/v1/float/checkout', { body, signal: options.signal }), options.signal);
    if (json.isValid !== true) throw rejection(json);
    if (typeof json.sessionToken !== 'string' || typeof json.sessionId !== 'string') {
      throw new ApiError({ code: 'InvalidResponse', message: 'POST /api/v1/float/checkout answered without a session.', status: 200 });
    }
    return new FloatingSession(json as unknown as CheckoutAnswer, deviceId, this.#transport, {
      heartbeatIntervalSeconds: options.heartbeatIntervalSeconds,
      onLost: options.onLost,
      onHeartbeatError: options.onHeartbeatError,
    });
  }

  /**
   * Records usage. Every attempt carries the same idempotency key, so a retry after a lost answer is counted
   * once (`replayed: true` on the answer that found it recorded).
   *
   * With `queueOffline: true`, usage that cannot reach the server (no answer, 429, 502-504 after the retries) is
   * kept in the store with its idempotency key and the time of this call, and the call resolves with
   * `{ queued: true }`; while records wait, later calls queue behind them, so usage is sent in the order it
   * happened. The queue is sent by the next `meter` call that gets through, by {@link KeyforgeClient.flushUsage}
   * and by a {@link KeyforgeClient.watch} of the license after each online check.
   *
   * @throws {@link LicenseRejectedError} `QuotaExceeded` (with `total`, `limit`, `remaining` in `response`) …
   */
  meter(options: QueueingMeterOptions): Promise<MeterResult | QueuedMeter>;
  meter(options: MeterOptions): Promise<MeterResult>;
  async meter(options: MeterOptions | QueueingMeterOptions): Promise<MeterResult | QueuedMeter> {
    const licenseKey = requireKey(options.licenseKey);
    const idempotencyKey = options.idempotencyKey ?? randomToken(16);
    const timestamp = options.timestamp instanceof Date ? options.timestamp.toISOString() : options.timestamp;
    const body = { event: options.event, quantity: options.quantity ?? 1, idempotencyKey, ...optional({ timestamp }) };
    if (!('queueOffline' in options) || !options.queueOffline) return this.#sendUsage(licenseKey, body, options.signal);

    // The time of the usage as the server's clock would say (the difference measured at the last online validate).
    const record: QueuedUsage = { event: body.event, quantity: body.quantity, idempotencyKey, timestamp: timestamp ?? new Date(await this.#serverNow(licenseKey)).toISOString() };
    const name = await this.#usageName(licenseKey);
    const queued = (reason: unknown): QueuedMeter => ({ queued: true, ...record, reason });
    if ((await this.#usage.list(name)).length) {
      // Behind what is waiting, so the server gets usage in the order it happened.
      await this.#usage.append(name, record);
      const flushed = await this.flushUsage({ licenseKey, signal: options.signal });
      const sent = flushed.sent.find((result) => result.idempotencyKey === idempotencyKey);
      if (sent) return sent;
      const dropped = flushed.dropped.find((entry) => entry.record.idempotencyKey === idempotencyKey);
      if (dropped) throw dropped.error;
      return queued(flushed.stoppedBy);
    }
    try {
      return await this.#sendUsage(licenseKey, body, options.signal);
    } catch (error) {
      if (!isTransient(error) || options.signal?.aborted) throw error;
      await this.#usage.append(name, record);
      return queued(error);
    }
  }

  /**
   * Sends the usage queued for a license while the server could not be reached (`meter` with `queueOffline`), one
   * record at a time in the order recorded, each with its idempotency key and original timestamp, so a record sent
   * twice (an answer lost, a flush repeated after a crash) is counted once. A record the server refuses for good
   * (a rejection such as `QuotaExceeded`, or an invalid record such as a timestamp older than the server's 30 days)
   * is removed and listed in `dropped`; the first that gets no answer stops the flush, and it and the rest stay queued.
   */
  async flushUsage(options: { licenseKey: string; signal?: AbortSignal }): Promise<UsageFlush> {
    const licenseKey = requireKey(options.licenseKey);
    const name = await this.#usageName(licenseKey);
    return this.#usage.exclusive(name, async () => {
      const report: UsageFlush = { sent: [], dropped: [], remaining: 0, stoppedBy: null };
      for (const record of await this.#usage.list(name)) {
        try {
          report.sent.push(await this.#sendUsage(licenseKey, record, options.signal));
        } catch (error) {
          if (options.signal?.aborted) throw error;
          const definite = error instanceof LicenseRejectedError || (error instanceof ApiError && error.status >= 400 && error.status < 500 && !isTransient(error));
          if (!definite) {
            report.stoppedBy = error;
            break;
          }
          report.dropped.push({ record, error: error as KeyforgeError });
        }
        await this.#usage.remove(name, record.idempotencyKey);
      }
      report.remaining = (await this.#usage.list(name)).length;
      return report;
    });
  }

  /** The usage records of a license waiting to be sent, oldest first. */
  async pendingUsage(options: { licenseKey: string }): Promise<QueuedUsage[]> {
    return this.#usage.list(await this.#usageName(requireKey(options.licenseKey)));
  }

  /**
   * Revalidates a license in the background and reports what changes: the returned {@link LicenseWatcher} checks
   * at once, then every `intervalSeconds` (±10 % jitter), and calls `onChange` with the first finding and whenever
   * the status (`valid`, `suspended`, `revoked`, `expired`, `device-freed` …), its source (online, or the stored
   * token while the server is out of reach), the features or the license's expiry change. A check that gets no
   * answer falls back to the stored token (within its offline grace period) and is retried with exponential
   * backoff; after each online check the license's queued usage is sent. Stops on `signal` or `stop()`.
   *
   * With a `deviceId` the watch is device-scoped (`requireActivation`, default true then): a device freed in the
   * console (or by the customer) is reported as `device-freed`.
   */
  watch(options: WatchOptions): LicenseWatcher {
    const licenseKey = requireKey(options.licenseKey);
    if (typeof options.onChange !== 'function') throw new TypeError('watch needs an onChange callback.');
    const requireActivation = options.requireActivation ?? options.deviceId !== undefined;
    const target = { licenseKey, deviceId: options.deviceId, requireActivation, version: options.version };
    return new LicenseWatcher((signal) => this.#probe(target, signal), options);
  }

  /** One check of a watcher: online, else the stored token. */
  async #probe(target: { licenseKey: string; deviceId?: string; requireActivation: boolean; version?: string }, signal: AbortSignal): Promise<WatchProbe> {
    const { licenseKey, requireActivation, version } = target;
    const deviceId = target.deviceId ?? (requireActivation ? await this.deviceId() : undefined);
    const state = (status: WatchStatus, fields: Partial<LicenseState> = {}): LicenseState => ({ status, source: null, entitlement: null, features: [], code: null, error: null, checkedAt: new Date(this.#clock()), ...fields });
    let online: Validation;
    try {
      online = await this.#validate({ licenseKey, deviceId, requireActivation, version, signal }, false);
    } catch (error) {
      if (signal.aborted) throw error;
      const code = error instanceof KeyforgeError ? error.code : null;
      if (error instanceof LicenseRejectedError) return { state: state(Object.hasOwn(WATCH_STATUS, error.code) ? WATCH_STATUS[error.code] : 'rejected', { code, error }), transient: null };
      if (!isTransient(error)) return { state: state('unverified', { code, error }), transient: null };
      try {
        const offline = await this.validateOffline({ licenseKey, deviceId, requireActivation });
        return { state: state('valid', { source: 'offline', entitlement: offline.entitlement, features: offline.entitlement.features, code, error }), transient: error };
      } catch (offlineError) {
        const missing = offlineError instanceof VerificationError && offlineError.code === 'TokenMissing';
        return { state: state('unreachable', missing ? { code, error } : { code: offlineError instanceof KeyforgeError ? offlineError.code : null, error: offlineError }), transient: error };
      }
    }
    const probe: WatchProbe = { state: state('valid', { source: 'online', entitlement: online.entitlement, features: online.entitlement.features }), transient: null };
    // Back online: what was recorded meanwhile goes now.
    try {
      probe.usage = await this.flushUsage({ licenseKey, signal });
      if (probe.usage.stoppedBy) probe.errors = [probe.usage.stoppedBy];
    } catch (error) {
      if (signal.aborted) throw error;
      probe.errors = [error];
    }
    return probe;
  }

  async #sendUsage(licenseKey: string, body: { event: string; quantity: number; idempotencyKey: string; timestamp?: string }, signal: AbortSignal | undefined): Promise<MeterResult> {
    const { json, headers } = await this.#transport.retrying(() => this.#transport.once('POST', '/api/v1/meter', { body: { licenseKey, ...body }, signal }), signal);
    if (json.isValid !== true) throw rejection(json);
    return { ...(json as unknown as MeterResult), idempotencyKey: body.idempotencyKey, replayed: headers.get('idempotent-replayed') === 'true', queued: false };
  }

  /** Now on the server's clock as this client estimates it (the local clock when no license token tells the difference). */
  async #serverNow(licenseKey: string): Promise<number> {
    const record = await this.#load(licenseKey).catch(() => null);
    return this.#clock() + (record?.skewMs ?? 0);
  }

  /** Deletes the stored token of a license (e.g. when the user removes the key). */
  async forget(licenseKey: string): Promise<void> {
    await this.#store.delete(await this.#recordKey(requireKey(licenseKey)));
  }

  /**
   * Fetches the server's JWKS now (also useful at build time, to save the keys you then pin with `jwks`).
   * With pinned keys, returns them without a request.
   */
  async fetchKeys(options: { signal?: AbortSignal } = {}): Promise<JSONWebKeySet> {
    return { keys: await this.#keys.fetch(options.signal) };
  }

  #verify(token: string, options: { online: boolean; now: number; challenge?: string; deviceId?: string; requireActivation?: boolean; signal?: AbortSignal }): Promise<Entitlement> {
    return verifyOfflineToken(token, {
      keys: this.#keys,
      online: options.online,
      issuer: this.issuer,
      products: this.products,
      now: new Date(options.now),
      clockToleranceSeconds: this.#toleranceSeconds,
      deviceId: options.deviceId,
      requireActivation: options.requireActivation,
      challenge: options.challenge,
      signal: options.signal,
    });
  }

  /**
   * The published releases this license may download (its features and maintenance period allow), newest first, of
   * `channel` and the more stable ones, with only the artifacts of `platform`/`arch` (default: this process's, see
   * {@link ReleaseQuery}). The key is sent in the `Authorization` header, never in the URL; with `deviceId` the
   * device must hold an activation of the license.
   *
   * @throws {@link LicenseRejectedError} / {@link ApiError} `ProductMismatch`, `LicenseNotFound`, `DeviceNotActivated` …
   */
  async listReleases(options: ReleaseQuery & { licenseKey: string; deviceId?: string; limit?: number; signal?: AbortSignal }): Promise<Release[]> {
    const json = await this.#releaseCall('/api/v1/releases', options, { ...this.#releaseQuery(options), limit: options.limit });
    if (!Array.isArray(json.releases)) throw new ApiError({ code: 'InvalidResponse', message: 'GET /api/v1/releases answered without releases.', status: 200 });
    return json.releases as Release[];
  }

  /**
   * Asks whether a newer release than `currentVersion` (semver) is available to this license on `channel` (default
   * stable) for `platform`/`arch` (default: this process's). Not available answers `reason`: `NoNewerRelease`, or
   * `MaintenanceExpired` / `FeatureMissing` with the newest release this license may not install.
   *
   * @throws {@link ApiError} `InvalidRequest` (not a semantic version); the errors of {@link KeyforgeClient.listReleases}.
   */
  async checkForUpdate(options: ReleaseQuery & { licenseKey: string; currentVersion: string; deviceId?: string; signal?: AbortSignal }): Promise<UpdateCheck> {
    if (typeof options.currentVersion !== 'string' || !options.currentVersion) throw new TypeError('currentVersion must be the running version (semver).');
    const json = await this.#releaseCall('/api/v1/releases/upgrade', options, { version: options.currentVersion, ...this.#releaseQuery(options) });
    if (typeof json.available !== 'boolean') throw new ApiError({ code: 'InvalidResponse', message: 'GET /api/v1/releases/upgrade answered without `available`.', status: 200 });
    const release = (json.release ?? null) as Release | null;
    return json.available ? { available: true, release } : { available: false, reason: typeof json.reason === 'string' ? json.reason : 'NoNewerRelease', release };
  }

  /**
   * Downloads an artifact and returns its bytes only once they check out: the signature is verified first (as an
   * offline token: EdDSA, a trusted `kid`, the issuer; then that it is this artifact of this product), the file is
   * read with a cap of the signed size, then its size, SHA-256 and SHA-512 must be the signed ones. The link comes from
   * `GET /api/v1/artifacts/{id}/download` (the license key in the header); the file is fetched from that link alone —
   * possibly another host (a presigned object-store URL) — with no credentials and no redirect followed. A link on the
   * server's public address (the `issuer`) is fetched through `baseUrl`.
   * `timeoutMs` bounds each wait for data, not the whole download. Retries as every call.
   *
   * The file is held in memory (and returned). In Node, `downloadArtifactToFile` of `@keyforge/client/node` streams it
   * to a file instead, with the same checks, in memory that does not grow with the file.
   *
   * @throws {@link VerificationError} `ArtifactIntegrity` when anything does not match (nothing is returned);
   *   the errors of {@link KeyforgeClient.listReleases}.
   */
  async downloadArtifact(artifact: Artifact, options: { licenseKey: string; deviceId?: string; signal?: AbortSignal }): Promise<Uint8Array> {
    let bytes = new Uint8Array(0);
    let length = 0;
    const claims = await this[fetchArtifact](artifact, options, {
      begin: (signed) => {
        if (bytes.length !== signed.size) bytes = new Uint8Array(signed.size);
        length = 0;
      },
      write: (chunk) => {
        bytes.set(chunk, length);
        length += chunk.length;
      },
    });
    const file = bytes.subarray(0, length);
    await checkArtifactBytes(claims, file);
    return file;
  }

  /**
   * The download of {@link KeyforgeClient.downloadArtifact} up to the bytes: the signature checked, the link asked
   * for, the file streamed into `sink` (capped at the signed size, started over on each retry). The caller checks the
   * bytes against the returned claims.
   *
   * @internal
   */
  async [fetchArtifact](artifact: Artifact, options: { licenseKey: string; deviceId?: string; signal?: AbortSignal }, sink: ArtifactSink): Promise<ArtifactClaims> {
    const claims = await this.#artifactSignature(artifact, options);
    const json = await this.#releaseCall(`/api/v1/artifacts/${encodeURIComponent(artifact.id)}/download`, options, {});
    const url = json.url;
    if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) throw new ApiError({ code: 'InvalidResponse', message: 'The download answer carries no http(s) link.', status: 200 });
    const link = this.#onServer(url);
    await this.#transport.retrying(async () => {
      await sink.begin(claims);
      await this.#transport.download(link, claims.size, (chunk) => sink.write(chunk), options.signal);
    }, options.signal);
    return claims;
  }

  /**
   * Checks a file obtained another way (an updater's own download) against an artifact's signature: the checks of
   * {@link KeyforgeClient.downloadArtifact}. Returns the signed claims.
   *
   * @throws {@link VerificationError} `ArtifactIntegrity`.
   */
  async verifyArtifact(artifact: Artifact, bytes: Uint8Array, options: { signal?: AbortSignal } = {}): Promise<ArtifactClaims> {
    const claims = await this.#artifactSignature(artifact, options);
    await checkArtifactBytes(claims, bytes);
    return claims;
  }

  /** The signature check alone (before any byte is fetched). */
  #artifactSignature(artifact: Artifact, options: { signal?: AbortSignal }): Promise<ArtifactClaims> {
    return verifyArtifactSignature(artifact, { keys: this.#keys, issuer: this.issuer, products: this.products, online: true, signal: options.signal });
  }

  /**
   * A link on the server's own public address (the issuer, its PUBLIC_URL) is fetched through `baseUrl`, the address
   * this client reaches the same server at (they differ behind a proxy or on an internal network); any other link
   * (an object store's) as it is.
   */
  #onServer(link: string): string {
    const issuer = this.issuer.replace(/\/+$/, '');
    return issuer !== this.baseUrl && link.startsWith(`${issuer}/`) ? this.baseUrl + link.slice(issuer.length) : link;
  }

  #releaseQuery(query: ReleaseQuery): Record<string, string | undefined> {
    const here = currentPlatform();
    return { channel: query.channel, platform: query.platform ?? here.platform, arch: query.arch ?? here.arch };
  }

  /** A GET of the release API: the key in `Authorization: License`, the client's product and the device in the query. */
  async #releaseCall(path: string, options: { licenseKey: string; deviceId?: string; signal?: AbortSignal }, query: Record<string, string | number | undefined>): Promise<Record<string, unknown>> {
    const licenseKey = requireKey(options.licenseKey);
    const params = new URLSearchParams();
    params.set('product', this.products[0]);
    for (const [name, value] of Object.entries({ ...query, deviceId: options.deviceId })) if (value !== undefined) params.set(name, String(value));
    const { json } = await this.#transport.retrying(() => this.#transport.once('GET', `${path}?${params}`, { license: licenseKey, signal: options.signal }), options.signal);
    if (json.isValid === false) throw rejection(json);
    return json;
  }

  /** Server clock minus local clock, from the fresh token's `iat`; 0 when within the noise. */
  #skew(token: string, receivedAt: number): number {
    let iat: unknown;
    try {
      iat = decodeJwt(token).iat;
    } catch (error) {
      throw new VerificationError('TokenInvalid', 'The offline token is not a JWT.', { cause: error });
    }
    if (typeof iat !== 'number') return 0;
    const skew = iat * 1000 - receivedAt;
    return Math.abs(skew) <= SKEW_NOISE_MS ? 0 : skew;
  }

  /** A digest naming a license in the store, so the store never holds the key itself. */
  async #digest(licenseKey: string): Promise<string> {
    return (await sha256Hex(`${this.issuer}\n${normalizeKey(licenseKey)}`)).slice(0, 32);
  }

  async #recordKey(licenseKey: string): Promise<string> {
    return `license:${await this.#digest(licenseKey)}`;
  }

  async #usageName(licenseKey: string): Promise<string> {
    return `usage:${await this.#digest(licenseKey)}`;
  }

  async #save(licenseKey: string, record: TokenRecord): Promise<void> {
    await this.#store.set(await this.#recordKey(licenseKey), JSON.stringify(record));
  }

  async #load(licenseKey: string): Promise<TokenRecord> {
    const raw = await this.#store.get(await this.#recordKey(licenseKey));
    if (!raw) throw new VerificationError('TokenMissing', 'No verified token is stored for this license: validate online first.');
    let record: Partial<TokenRecord>;
    try {
      record = JSON.parse(raw) as Partial<TokenRecord>;
    } catch (error) {
      throw new VerificationError('TokenInvalid', 'The stored token record is not valid JSON: tampered or corrupted.', { cause: error });
    }
    if (record?.v !== 1 || typeof record.token !== 'string' || !Number.isFinite(record.skewMs) || !Number.isFinite(record.lastSeenAt)) {
      throw new VerificationError('TokenInvalid', 'The stored token record is malformed: tampered or corrupted.');
    }
    return record as TokenRecord;
  }
}

