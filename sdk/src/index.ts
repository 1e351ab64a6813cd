/**
 * `@keyforge/client` — the client SDK of the Keyforge licensing API, for Node ≥ 20, Electron, Deno, Bun and
 * browsers (it needs only `fetch` and WebCrypto). Node-only helpers (a file store, a machine fingerprint)
 * live in `@keyforge/client/node`, so browser bundles never pull in `node:` modules.
 *
 * @module @keyforge/client
 */
export { KeyforgeClient, type KeyforgeClientOptions } from './client.js';
export { FloatingSession, type SessionState } from './floating.js';
export type { RetryOptions } from './http.js';
export type { JSONWebKeySet } from './keys.js';
export { LocalStorageStore, MemoryStore, type TokenStore, type WebStorage } from './stores.js';
export type { QueuedUsage, UsageFlush } from './usage.js';
export { LicenseWatcher, type LicenseState, type WatchStatus } from './watch.js';
export type { Entitlement } from './tokens.js';
export { currentPlatform, type Artifact, type ArtifactClaims, type Release, type ReleaseQuery, type UpdateCheck, type UpdateUnavailableReason } from './releases.js';
export type {
  Activation,
  ActivateOptions,
  ActivationRequest,
  ActivationRequestOptions,
  LicenseFileOptions,
  OfflineDeactivation,
  CallOptions,
  CheckinResult,
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
} from './types.js';
export {
  ApiError,
  KeyforgeError,
  LicenseRejectedError,
  NetworkError,
  VerificationError,
  isTransient,
  type ApiErrorCode,
  type KeyforgeErrorCode,
  type NetworkErrorCode,
  type RejectionCode,
  type SessionErrorCode,
  type VerificationErrorCode,
} from './errors.js';
