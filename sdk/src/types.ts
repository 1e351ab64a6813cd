import type { Entitlement } from './tokens.js';
import type { LicenseState } from './watch.js';
import type { UsageFlush } from './usage.js';

/** Options every call takes. */
export interface CallOptions {
  /** Cancels the call (and its retries); the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** `activate`: register this installation and take a seat (docs/integrate/rest-api.md "POST /api/v1/activate"). */
export interface ActivateOptions extends CallOptions {
  licenseKey: string;
  /**
   * This machine's id (e.g. `machineFingerprint()` from `@keyforge/client/node`); required by node-locked
   * licenses. Default: this installation's random id, created once and kept in the store — the same device on
   * every retry and every later activation, so a seat is never taken twice.
   */
  deviceId?: string;
  /** Label the vendor sees. */
  deviceName?: string;
  /** The running application version, checked against the license's `minVersion`/`maxVersion`. */
  version?: string;
  /** The end user's email (named-user audit trail; customer expiry notices when the license has none). */
  userEmail?: string;
}

/** A successful activation. */
export interface Activation {
  isValid: true;
  productName: string;
  remainingActivations: number;
  expiresAt: string | null;
  features: string[];
  isTrial: boolean;
  /** Present for trials. */
  trialDaysRemaining?: number | null;
  nodeLocked: boolean;
  offlineGraceDays: number | null;
  /** Show it to the user when set: the vendor's own subscription is ending. */
  vendorWarning: string | null;
  /** The device that holds the seat (the one sent, or the installation id). */
  deviceId: string;
}

/**
 * `validate`: check the license on every launch. An options object on purpose: future server opt-ins become
 * new optional fields here without breaking callers.
 */
export interface ValidateOptions extends CallOptions {
  licenseKey: string;
  /** The running application version; omitted: no version check. */
  version?: string;
  /**
   * Binds the offline token to this device: `validateOffline` with the same `deviceId` then refuses a token
   * copied from another machine.
   */
  deviceId?: string;
  /**
   * Also ask the server whether this device still holds an activation (default false: the license only). A device
   * that was never activated, or was deactivated (by `deactivate` or by the vendor), is then refused with
   * `DeviceNotActivated`; the token must attest the device (`entitlement.deviceActivated`). Without `deviceId`, the
   * installation id is sent, as `activate` does.
   */
  requireActivation?: boolean;
  /**
   * When the server cannot be reached (network failure, timeouts, 429/503 after the retries), answer from the
   * stored token instead, as `validateOffline` does. Never after a definite answer: a revoked license is
   * refused and its stored token deleted.
   */
  offlineFallback?: boolean;
}

/** `validateOffline`: the last verified token, checked again without a network. */
export interface ValidateOfflineOptions {
  licenseKey: string;
  /** Refuse a token that is not bound to this device. */
  deviceId?: string;
  /** Refuse a token that does not attest this device's activation (one from a validate without `requireActivation`). */
  requireActivation?: boolean;
}

/** What the validate endpoint answers for a valid license (docs/integrate/rest-api.md "POST /api/v1/validate"). Fields are not signed: trust {@link Validation.entitlement}. */
export interface LicenseStatus {
  isValid: true;
  errorCode: null;
  productName: string;
  remainingActivations: number;
  expiresAt: string | null;
  customFields: Record<string, string> | null;
  features: string[];
  isTrial: boolean;
  trialDaysRemaining?: number | null;
  nodeLocked: boolean;
  offlineGraceDays: number | null;
  vendorWarning: string | null;
  minVersion: string | null;
  maxVersion: string | null;
  bundleProducts: string[] | null;
  isInGracePeriod: boolean | null;
  maintenanceExpiresAt: string | null;
  offlineCacheToken: string;
  /** Fields a newer server adds. */
  [field: string]: unknown;
}

/** A granted validation. */
export interface Validation {
  /** `online`: the server answered now; `offline`: from the stored token, within its grace period. */
  source: 'online' | 'offline';
  /** The signed entitlement: use it, not the unsigned fields, to unlock features. */
  entitlement: Entitlement;
  /** The server's whole answer (online only; null offline). */
  license: LicenseStatus | null;
  /** The signed token (a compact JWS) the entitlement came from. */
  offlineToken: string;
  /** The offline grace period ends then (the token's expiry). */
  offlineUntil: Date;
  /** How far the local clock is behind (+) or ahead (−) of the server's, as measured at the last online validation. */
  clockSkewSeconds: number;
  /** Offline answers only: why the online call failed when `offlineFallback` was used. */
  onlineError?: unknown;
}

/** `deactivate`: free the seat of a device. */
export interface DeactivateOptions extends CallOptions {
  licenseKey: string;
  /** Default: this installation's id (as `activate`). */
  deviceId?: string;
}

export interface Deactivation {
  deactivated: true;
  /** Seats left; null when a retry found the seat already freed by the first, unanswered attempt. */
  remainingActivations: number | null;
}

/** `meter`: record usage (docs/integrate/rest-api.md "POST /api/v1/meter"). */
export interface MeterOptions extends CallOptions {
  licenseKey: string;
  /** Event name, e.g. `api.calls` (lower-case words separated by dots). */
  event: string;
  /** Default 1. */
  quantity?: number;
  /** When the usage happened (default: now, on the server). */
  timestamp?: Date | string;
  /**
   * Makes the record count once however often it is sent. Default: a random key per `meter` call, kept across
   * its retries — pass your own (e.g. the id of the usage record) to deduplicate across calls and restarts.
   */
  idempotencyKey?: string;
}

export interface MeterResult {
  isValid: true;
  event: string;
  quantity: number;
  occurredAt: string;
  period: 'day' | 'month' | 'year' | 'lifetime';
  periodStart: string | null;
  periodEnd: string | null;
  /** Running total of the event in the period, this record included. */
  total: number;
  limit: number | null;
  remaining: number | null;
  /** The key the record was sent with. */
  idempotencyKey: string;
  /** True when the server had already recorded this key: nothing was added (the first answer is repeated). */
  replayed: boolean;
  /** False: the server recorded it (see {@link QueuedMeter} for `meter` with `queueOffline`). */
  queued: false;
}

/** `meter` with `queueOffline: true`: when the server cannot be reached, the record waits in the store. */
export interface QueueingMeterOptions extends MeterOptions {
  queueOffline: true;
}

/** A usage record kept in the store to be sent when the server can be reached (`meter` with `queueOffline`). */
export interface QueuedMeter {
  queued: true;
  event: string;
  quantity: number;
  /** When the usage happened, as it will be sent (ISO 8601). */
  timestamp: string;
  idempotencyKey: string;
  /** Why it was not sent now (a {@link NetworkError}, a 429/503 `ApiError`). */
  reason: unknown;
}

/** `watch`: revalidate a license in the background. */
export interface WatchOptions {
  licenseKey: string;
  /**
   * This machine's id (as given to `activate`): binds the checks to it and, by default, makes them device-scoped
   * (`requireActivation`), so a device freed meanwhile (by the vendor or the customer) shows as `device-freed`.
   */
  deviceId?: string;
  /** Device-scoped checks (default: true when `deviceId` is given; without one, the installation id is checked). */
  requireActivation?: boolean;
  /** The running application version, checked against the license's bounds. */
  version?: string;
  /** Seconds between checks (default 900, at least 1), each spread by ±10 %. */
  intervalSeconds?: number;
  /** Called with the first finding, then whenever the status, its source, the features or the expiry change. */
  onChange: (state: LicenseState, previous: LicenseState | null) => void;
  /** Failed checks (the server out of reach: the stored token answers meanwhile), queued usage that could not be sent, a throwing `onChange`. */
  onError?: (error: unknown) => void;
  /** Queued usage was sent (or dropped) after an online check. */
  onUsageFlushed?: (report: UsageFlush) => void;
  /** Stops the watcher when it aborts. */
  signal?: AbortSignal;
}

/** `checkout`: take a floating seat (docs/integrate/rest-api.md "Floating seats: `POST /api/v1/float/checkout`, `/heartbeat`, `/checkin`"). */
export interface CheckoutOptions extends CallOptions {
  licenseKey: string;
  /**
   * One seat per device: a checkout with the device of an active session replaces it. Default: a random id per
   * `checkout` call (so a retry after a lost answer replaces its own first session instead of taking a second
   * seat, and several instances on one machine each get a seat).
   */
  deviceId?: string;
  deviceName?: string;
  version?: string;
  /**
   * Heartbeat more often than the server asks (`heartbeatIntervalSeconds`, 60 s); never less often.
   */
  heartbeatIntervalSeconds?: number;
  /** The seat is gone (a rejection from the server, or a whole lease without a heartbeat getting through). */
  onLost?: (error: Error) => void;
  /** A heartbeat failed for a transient reason and will be retried. */
  onHeartbeatError?: (error: Error) => void;
}

export interface CheckinResult {
  checkedIn: true;
  sessionId: string;
  endedAt: string;
  /** `checkin`, or how the session had already ended (`expired`, `replaced`, `revoked` …). */
  endReason: string;
}

/** `verifyLicenseFile` / `installLicenseFile`: how to open and check a signed license file. */
export interface LicenseFileOptions {
  /** The license key: opens an encrypted file, and names the license in the store (rollback check, `installLicenseFile`). */
  licenseKey?: string;
  /** This machine's id: a device file must be bound to it (an encrypted device file opens only with it). */
  deviceId?: string;
  /** Refuse a file that does not attest this device's activation (`deviceActivated`). */
  requireActivation?: boolean;
  /** Fetch the server's JWKS when the file's key is not pinned or cached (default false: fully offline). */
  fetchKeys?: boolean;
}

/** `createActivationRequest`: what the air-gapped machine asks for. */
export interface ActivationRequestOptions {
  licenseKey: string;
  /** Default: this installation's id (as `activate`). */
  deviceId?: string;
  /** Label the vendor (and the customer) sees. */
  deviceName?: string;
  /** The running application version, checked against the license's `minVersion`/`maxVersion`. */
  version?: string;
}

/** An activation request, to carry to a machine that reaches the server (the customer portal, or the vendor). */
export interface ActivationRequest {
  /** The armored request (`-----BEGIN KEYFORGE ACTIVATION REQUEST-----`): for a file, an email, copy-paste. */
  request: string;
  /** The same request on one line (`KFREQ1:…`, about 500 characters): for a QR code. */
  compact: string;
  deviceId: string;
  /** The request's challenge: the response must echo it. */
  challenge: string;
}

/** `deactivateOffline`: the proof to carry to the server, which frees the seat. */
export interface OfflineDeactivation {
  /** The armored proof (`-----BEGIN KEYFORGE DEACTIVATION PROOF-----`), signed by this device's key. */
  proof: string;
  activationId: string;
  deviceId: string;
}
