import type { Entitlement } from './tokens.js';
import type { UsageFlush } from './usage.js';
import { ApiError } from './errors.js';
import { backoff } from './http.js';
import { unref } from './util.js';

/**
 * What a {@link LicenseWatcher} last found:
 * - `valid`: the license may be used — checked online now (`source: 'online'`), or, with the server out of reach,
 *   vouched for by the stored offline token within its grace period (`source: 'offline'`);
 * - `suspended`, `revoked`, `expired`: the server said so (`Suspended`, `LicenseRevoked`, `LicenseExpired`);
 * - `device-freed`: this device no longer holds an activation (deactivated by the vendor, the customer or another
 *   installation: `DeviceNotActivated`); only watched device-scoped (`requireActivation`);
 * - `not-found`: the key is no longer known (deleted, or reissued and past its overlap);
 * - `rejected`: another rejection (`code` says which, e.g. `VersionNotSupported`);
 * - `unverified`: the server answered, but the answer did not check out (a token that does not verify, an HTTP error
 *   that is not transient): `code` and `error` say why;
 * - `unreachable`: no answer, and no stored token vouches for the license (none stored, past its grace period, a
 *   clock set back, no offline grace).
 */
export type WatchStatus = 'valid' | 'suspended' | 'revoked' | 'expired' | 'device-freed' | 'not-found' | 'rejected' | 'unverified' | 'unreachable';

/** One finding of a {@link LicenseWatcher}. */
export interface LicenseState {
  status: WatchStatus;
  /** Where a `valid` status came from: the server now, or the stored token; null otherwise. */
  source: 'online' | 'offline' | null;
  /** The signed entitlement when `valid`; null otherwise. */
  entitlement: Entitlement | null;
  /** The entitlement's features (empty unless `valid`). */
  features: string[];
  /** The rejection, verification, HTTP or network code behind a status other than an online `valid`; else null. */
  code: string | null;
  /** The error behind `code` (for `valid` from the stored token: why the server could not be reached). */
  error: unknown;
  /** When this check ended (the local clock). */
  checkedAt: Date;
}

/** What a check found, and whether it failed for want of an answer (then the next check backs off). */
export interface WatchProbe {
  state: LicenseState;
  /** The transient failure (no answer, 429, 502-504) the check met, if any. */
  transient: unknown;
  /** Queued usage sent after an online check. */
  usage?: UsageFlush;
  /** Other failures to report (e.g. queued usage that could not be sent). */
  errors?: unknown[];
}

export interface WatchHooks {
  intervalSeconds?: number;
  onChange: (state: LicenseState, previous: LicenseState | null) => void;
  onError?: (error: unknown) => void;
  onUsageFlushed?: (report: UsageFlush) => void;
  signal?: AbortSignal;
}

/** Default time between checks: 15 minutes. */
export const DEFAULT_WATCH_INTERVAL_SECONDS = 900;
/** Never checks more often than this, whatever `intervalSeconds` says (a typo must not hammer the server). */
export const MIN_WATCH_INTERVAL_SECONDS = 1;
const MAX_TIMER_MS = 2 ** 31 - 1;
/** The first retry after a failed check comes after about this long (at most the interval); then it doubles. */
const FIRST_RETRY_MS = 2000;

/** What makes two findings "the same" for onChange: the status, where it came from, the features, the expiry. */
const signature = (state: LicenseState): string =>
  JSON.stringify([state.status, state.source, [...state.features].sort(), state.entitlement?.licenseExpiresAt ?? null, state.status === 'rejected' || state.status === 'unverified' ? state.code : null]);

/**
 * Revalidates a license in the background (from {@link KeyforgeClient.watch}). It checks at once, then every
 * `intervalSeconds` with ±10 % jitter (so a fleet started together spreads out); a check that gets no answer is
 * retried sooner with exponential backoff — about 2 s, 4 s, 8 s … never longer than the interval, and at least the
 * server's `Retry-After` — while the stored token answers. `onChange` is called with the first finding and then
 * whenever the status, its source, the features or the license's expiry change. It stops on
 * {@link LicenseWatcher.stop} or when the `signal` aborts; its timer never keeps a Node, Bun or Deno process alive.
 */
export class LicenseWatcher {
  readonly intervalSeconds: number;
  readonly #probe: (signal: AbortSignal) => Promise<WatchProbe>;
  readonly #hooks: WatchHooks;
  readonly #controller = new AbortController();
  #state: LicenseState | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #failures = 0;
  #running: Promise<LicenseState> | null = null;

  /** @internal Created by `KeyforgeClient.watch`. */
  constructor(probe: (signal: AbortSignal) => Promise<WatchProbe>, hooks: WatchHooks) {
    const wanted = hooks.intervalSeconds ?? DEFAULT_WATCH_INTERVAL_SECONDS;
    if (typeof wanted !== 'number' || !Number.isFinite(wanted) || wanted <= 0) throw new TypeError('intervalSeconds must be a positive number of seconds.');
    this.intervalSeconds = Math.max(MIN_WATCH_INTERVAL_SECONDS, wanted);
    this.#probe = probe;
    this.#hooks = hooks;
    const { signal } = hooks;
    if (signal?.aborted) {
      this.#controller.abort(signal.reason);
      return;
    }
    signal?.addEventListener('abort', () => this.stop(), { once: true, signal: this.#controller.signal });
    this.#schedule(0);
  }

  /** The last finding (null before the first check ends). */
  get state(): LicenseState | null {
    return this.#state;
  }

  /** False once stopped. */
  get active(): boolean {
    return !this.#controller.signal.aborted;
  }

  /** Checks now (a check already under way is joined) and resolves with the finding; the schedule restarts from it. */
  check(): Promise<LicenseState> {
    if (!this.active) return Promise.reject(new Error('The watcher is stopped.'));
    this.#running ??= this.#run().finally(() => (this.#running = null));
    return this.#running;
  }

  /** Stops checking (a check under way is abandoned). Idempotent. */
  stop(): void {
    clearTimeout(this.#timer);
    if (this.active) this.#controller.abort(new Error('The watcher is stopped.'));
  }

  async #run(): Promise<LicenseState> {
    clearTimeout(this.#timer);
    const probe = await this.#probe(this.#controller.signal);
    const { state, transient } = probe;
    if (!this.active) return state;
    const previous = this.#state;
    this.#state = state;
    if (transient) {
      this.#failures += 1;
      this.#report(transient);
    } else {
      this.#failures = 0;
    }
    for (const error of probe.errors ?? []) this.#report(error);
    if (probe.usage && (probe.usage.sent.length || probe.usage.dropped.length)) {
      try {
        this.#hooks.onUsageFlushed?.(probe.usage);
      } catch (error) {
        this.#report(error);
      }
    }
    if (previous === null || signature(previous) !== signature(state)) {
      try {
        this.#hooks.onChange(state, previous);
      } catch (error) {
        this.#report(error);
      }
    }
    this.#schedule(this.#delay(transient));
    return state;
  }

  #delay(transient: unknown): number {
    const intervalMs = this.intervalSeconds * 1000;
    if (!transient) return intervalMs * (0.9 + Math.random() * 0.2);
    const retryAfterMs = transient instanceof ApiError && transient.retryAfterSeconds !== null ? transient.retryAfterSeconds * 1000 : 0;
    return Math.max(retryAfterMs, backoff(this.#failures, Math.min(FIRST_RETRY_MS, intervalMs), intervalMs));
  }

  #schedule(delayMs: number) {
    clearTimeout(this.#timer);
    if (!this.active) return;
    // Timers fire at once beyond 2³¹ − 1 ms (24.8 days): a huge interval or Retry-After must not become a busy loop.
    this.#timer = setTimeout(() => {
      this.check().catch((error: unknown) => {
        // The probe reports its own failures; this is a bug or an abandoned check.
        if (this.active) {
          this.#report(error);
          this.#schedule(this.intervalSeconds * 1000);
        }
      });
    }, Math.min(delayMs, MAX_TIMER_MS));
    unref(this.#timer);
  }

  #report(error: unknown) {
    try {
      this.#hooks.onError?.(error);
    } catch {
      // A throwing error hook must not stop the watcher.
    }
  }
}
