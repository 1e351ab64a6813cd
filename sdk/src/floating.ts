import { KeyforgeError, LicenseRejectedError, isTransient, ApiError } from './errors.js';
import { backoff, type Transport } from './http.js';
import type { CheckinResult, CheckoutOptions } from './types.js';
import { monotonic, unref } from './util.js';

/** What checkout answered (docs/integrate/rest-api.md "Floating seats: `POST /api/v1/float/checkout`, `/heartbeat`, `/checkin`"). */
export interface CheckoutAnswer {
  sessionToken: string;
  sessionId: string;
  leaseExpiresAt: string;
  leaseSeconds: number;
  heartbeatIntervalSeconds: number;
  floatingSeats: number;
  remainingFloatingSeats: number;
  productName: string;
  expiresAt: string | null;
  features: string[];
  vendorWarning: string | null;
}

/** A positive, finite number from the server, else the documented default (a hostile answer must not make a busy loop). */
const positive = (value: unknown, fallback: number): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback);

/** The parts of the checkout options a session keeps (never the license key). */
export type SessionHooks = Pick<CheckoutOptions, 'heartbeatIntervalSeconds' | 'onLost' | 'onHeartbeatError'>;

/** `active` while the seat is held; `lost` when the server ended it or the lease lapsed; `closed` after checkin. */
export type SessionState = 'active' | 'lost' | 'closed';

/**
 * A floating seat. It heartbeats itself every `heartbeatIntervalSeconds` while active and checks in on
 * {@link FloatingSession.checkin} or disposal (`await using session = await client.checkout(…)`).
 *
 * Transient heartbeat failures (network, 429, 503) are retried with backoff; the seat is reported lost
 * (`onLost`, {@link FloatingSession.signal} aborts) when the server rejects a heartbeat or when no heartbeat
 * got through for a whole lease. The session token stays inside this object.
 */
export class FloatingSession {
  readonly sessionId: string;
  readonly deviceId: string;
  readonly productName: string;
  readonly features: string[];
  readonly expiresAt: string | null;
  readonly floatingSeats: number;
  /** Seats still free right after this checkout. */
  readonly remainingFloatingSeats: number;
  readonly vendorWarning: string | null;
  readonly leaseSeconds: number;
  /** The lease end the server last confirmed. */
  leaseExpiresAt: Date;
  /** How often this session heartbeats, in seconds. */
  heartbeatIntervalSeconds: number;
  /** Why the seat was lost (state `lost`). */
  lostReason: Error | null = null;

  readonly #token: string;
  readonly #transport: Transport;
  readonly #options: SessionHooks;
  readonly #controller = new AbortController();
  #state: SessionState = 'active';
  #timer: ReturnType<typeof setTimeout> | undefined;
  #renewedAt = monotonic();
  #failures = 0;
  #inFlight: Promise<void> | null = null;
  #checkin: Promise<CheckinResult> | null = null;

  declare [Symbol.asyncDispose]: () => Promise<void>;

  /** @internal Created by `KeyforgeClient.checkout`. */
  constructor(answer: CheckoutAnswer, deviceId: string, transport: Transport, options: SessionHooks) {
    this.#token = answer.sessionToken;
    this.#transport = transport;
    this.#options = options;
    this.sessionId = answer.sessionId;
    this.deviceId = deviceId;
    this.productName = answer.productName;
    this.features = answer.features;
    this.expiresAt = answer.expiresAt;
    this.floatingSeats = answer.floatingSeats;
    this.remainingFloatingSeats = answer.remainingFloatingSeats;
    this.vendorWarning = answer.vendorWarning;
    this.leaseSeconds = positive(answer.leaseSeconds, 300);
    this.leaseExpiresAt = new Date(answer.leaseExpiresAt);
    this.heartbeatIntervalSeconds = this.#interval(answer.heartbeatIntervalSeconds);
    // Where the platform has explicit resource management: `await using session = await client.checkout(…)`.
    const asyncDispose = (Symbol as { asyncDispose?: symbol }).asyncDispose;
    if (typeof asyncDispose === 'symbol') {
      Object.defineProperty(this, asyncDispose, { value: () => this.dispose(), enumerable: false });
    }
    this.#schedule(this.heartbeatIntervalSeconds * 1000);
  }

  get state(): SessionState {
    return this.#state;
  }

  /** Aborts when the seat is lost or checked in: pass it to work that must stop without a seat. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Heartbeats now (the timer does it by itself). Rejects with the reason when the seat is lost. */
  heartbeat(): Promise<void> {
    if (this.#state !== 'active') return Promise.reject(this.lostReason ?? new KeyforgeError('SessionExpired', 'The session is checked in.'));
    this.#inFlight ??= this.#beat().finally(() => (this.#inFlight = null));
    return this.#inFlight.then(() => {
      if (this.#state === 'lost') throw this.lostReason;
    });
  }

  /** Frees the seat now (idempotent, retried on transient failures). Heartbeats stop first. */
  checkin(options: { signal?: AbortSignal } = {}): Promise<CheckinResult> {
    if (this.#state === 'active') this.#end('closed', null);
    this.#checkin ??= this.#transport
      .retrying(() => this.#transport.once('POST', '/api/v1/float/checkin', { bearer: this.#token, body: {}, signal: options.signal }), options.signal)
      .then(({ json }) => {
        if (json.checkedIn !== true) throw new LicenseRejectedError(String(json.errorCode), String(json.message), json);
        return json as unknown as CheckinResult;
      })
      .catch((error: unknown) => {
        this.#checkin = null; // a later call may try again
        throw error;
      });
    return this.#checkin;
  }

  /**
   * Checks in, never throwing: a failed checkin is reported to `onHeartbeatError` (the lease then lapses by
   * itself). What `await using` calls.
   */
  async dispose(): Promise<void> {
    try {
      await this.checkin();
    } catch (error) {
      this.#options.onHeartbeatError?.(error as Error);
    }
  }

  #interval(serverSeconds: unknown): number {
    const server = Math.min(positive(serverSeconds, 60), this.leaseSeconds);
    const wanted = this.#options.heartbeatIntervalSeconds;
    return wanted !== undefined && wanted > 0 ? Math.min(wanted, server) : server;
  }

  #schedule(delayMs: number) {
    clearTimeout(this.#timer);
    if (this.#state !== 'active') return;
    this.#timer = setTimeout(() => {
      this.#inFlight ??= this.#beat().finally(() => (this.#inFlight = null));
    }, delayMs);
    unref(this.#timer);
  }

  async #beat(): Promise<void> {
    if (this.#state !== 'active') return;
    try {
      // One attempt: this loop is the retry (it knows the lease; a 60 s heartbeat must not hang in retries).
      const { json } = await this.#transport.once('POST', '/api/v1/float/heartbeat', { bearer: this.#token, body: {}, signal: this.#controller.signal });
      if (this.#state !== 'active') return;
      if (json.isValid !== true) {
        this.#end('lost', new LicenseRejectedError(String(json.errorCode), String(json.message), json));
        return;
      }
      this.#renewedAt = monotonic();
      this.#failures = 0;
      this.leaseExpiresAt = new Date(String(json.leaseExpiresAt));
      if (json.heartbeatIntervalSeconds !== undefined) this.heartbeatIntervalSeconds = this.#interval(json.heartbeatIntervalSeconds);
      this.#schedule(this.heartbeatIntervalSeconds * 1000);
    } catch (error) {
      if (this.#state !== 'active') return;
      this.#failures += 1;
      this.#options.onHeartbeatError?.(error as Error);
      const leaseMs = this.leaseSeconds * 1000;
      if (monotonic() - this.#renewedAt >= leaseMs) {
        this.#end('lost', new KeyforgeError('LeaseLapsed', `No heartbeat got through for ${this.leaseSeconds} s: the server has freed the seat.`, { cause: error }));
        return;
      }
      const intervalMs = this.heartbeatIntervalSeconds * 1000;
      const retryAfter = error instanceof ApiError && error.retryAfterSeconds !== null ? error.retryAfterSeconds * 1000 : null;
      // Transient: retry soon (bounded by the interval); anything else: at the next regular heartbeat.
      const delay = isTransient(error) ? Math.min(intervalMs, retryAfter ?? backoff(this.#failures, 1000, intervalMs)) : intervalMs;
      // One last try right before the lease would lapse; never a busy loop.
      const untilLapse = leaseMs - (monotonic() - this.#renewedAt);
      this.#schedule(Math.max(100, Math.min(delay, untilLapse)));
    }
  }

  #end(state: 'lost' | 'closed', reason: Error | null) {
    this.#state = state;
    this.lostReason = reason;
    clearTimeout(this.#timer);
    this.#controller.abort(reason ?? new KeyforgeError('SessionExpired', 'The session was checked in.'));
    if (state === 'lost' && reason) this.#options.onLost?.(reason);
  }
}
