/**
 * The errors of the SDK. Every call resolves only with a granted result: anything else is thrown as a
 * {@link KeyforgeError} whose `code` says why, so an HTTP 200 rejection (`isValid: false`) can never be
 * mistaken for a success.
 *
 * - {@link LicenseRejectedError}: the server answered and said no (its rejection code, e.g. `SeatsExhausted`).
 * - {@link ApiError}: an HTTP error answer (`InvalidRequest`, `RateLimited`, `ServiceUnavailable` …).
 * - {@link NetworkError}: no answer (connection failed, `Timeout`).
 * - {@link VerificationError}: the signed offline token did not check out (tampered, expired, other product …), or a
 *   downloaded release artifact did not (`ArtifactIntegrity`).
 */

/** Rejection codes the server sends inside an HTTP 200 answer (the server README's "Rejection codes"). */
export type RejectionCode =
  | 'LicenseNotFound'
  | 'LicenseRevoked'
  | 'Suspended'
  | 'LicenseExpired'
  | 'SeatsExhausted'
  | 'VersionNotSupported'
  | 'DeviceIdRequired'
  /** activate: the license is for another product than the client's `product` (and not a bundle containing it); no seat was taken. */
  | 'ProductMismatch'
  | 'ActivationNotFound'
  /** validate with `requireActivation`: this device holds no activation of the license (never activated, or deactivated). */
  | 'DeviceNotActivated'
  | 'FloatingNotEnabled'
  | 'FloatingSeatsExhausted'
  | 'SessionInvalid'
  | 'SessionExpired'
  | 'QuotaExceeded';

/** Codes of HTTP error answers (`{ "error": { "code" } }`), plus `InvalidResponse` for an answer that is not the API's JSON. */
export type ApiErrorCode = 'InvalidRequest' | 'NonceRequired' | 'NonceInvalid' | 'RateLimited' | 'ServiceUnavailable' | 'InternalError' | 'InvalidResponse';

/** Why no answer arrived. */
export type NetworkErrorCode = 'NetworkError' | 'Timeout';

/** Why a signed offline token was refused. */
export type VerificationErrorCode =
  /** No token: validate answered without one, or nothing is stored for this license (validateOffline). */
  | 'TokenMissing'
  /** The signature, the algorithm or the token's format is wrong: tampered, or not from this server. */
  | 'TokenInvalid'
  /** Past the token's `exp`: the offline grace period is over; go online and validate. */
  | 'TokenExpired'
  /** Signed by a key the client does not trust (not pinned, not in the JWKS). */
  | 'KeyUnknown'
  /** The token's `iss` is not the expected issuer. */
  | 'WrongIssuer'
  /** The token is for another product (and not a bundle containing this one). */
  | 'WrongProduct'
  /** The token is bound to another device, or to none while a device was asked for. */
  | 'WrongDevice'
  /** The token does not echo this request's challenge: a replayed answer. */
  | 'ChallengeMismatch'
  /** The local clock is earlier than a time already seen (set back to stretch the grace period). */
  | 'ClockRollback'
  /** The license has no offline grace period (`offlineGraceDays` null or 0). */
  | 'OfflineNotAllowed'
  /**
   * A downloaded release artifact did not check out: its signature is not the server's (tampered, unknown key,
   * another issuer or product), or the bytes do not match the signed size, SHA-256 and SHA-512. Nothing is returned.
   */
  | 'ArtifactIntegrity';

/** Codes of the floating session's own failures. */
export type SessionErrorCode =
  /** No heartbeat got through for a whole lease: the server has freed the seat. */
  'LeaseLapsed';

/** Any code a {@link KeyforgeError} can carry. Open to codes a newer server may add. */
export type KeyforgeErrorCode = RejectionCode | ApiErrorCode | NetworkErrorCode | VerificationErrorCode | SessionErrorCode | (string & {});

/** The base class of every error the SDK throws (except the caller's own `AbortSignal` reason, rethrown as is). */
export class KeyforgeError extends Error {
  /** Machine-readable reason. */
  readonly code: KeyforgeErrorCode;

  constructor(code: KeyforgeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KeyforgeError';
    this.code = code;
  }
}

/**
 * The server answered and refused: HTTP 200 with `isValid: false` (or `deactivated`/`checkedIn: false`).
 * A definite answer: the SDK never retries it.
 */
export class LicenseRejectedError extends KeyforgeError {
  declare readonly code: RejectionCode | (string & {});
  /** The server's whole answer (for `QuotaExceeded`: `total`, `limit`, `remaining`, `period` …; for validate: `isInGracePeriod` …). */
  readonly response: Readonly<Record<string, unknown>>;

  constructor(code: RejectionCode | (string & {}), message: string, response: Record<string, unknown>) {
    super(code, message);
    this.name = 'LicenseRejectedError';
    this.response = response;
  }
}

/** An HTTP error answer. `RateLimited` (429) and `ServiceUnavailable` (503) are retried before this is thrown. */
export class ApiError extends KeyforgeError {
  declare readonly code: ApiErrorCode | (string & {});
  /** HTTP status. */
  readonly status: number;
  /** The server's `X-Request-Id` (quote it in a support request). */
  readonly requestId: string | null;
  /** Per-field problems of an `InvalidRequest`. */
  readonly fields: Readonly<Record<string, string>> | null;
  /** The `Retry-After` the server sent, in seconds. */
  readonly retryAfterSeconds: number | null;

  constructor(init: { code: string; message: string; status: number; requestId?: string | null; fields?: Record<string, string> | null; retryAfterSeconds?: number | null }) {
    super(init.code, init.message);
    this.name = 'ApiError';
    this.status = init.status;
    this.requestId = init.requestId ?? null;
    this.fields = init.fields ?? null;
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
  }
}

/** No answer: the connection failed or the per-attempt timeout passed (`Timeout`). Retried before this is thrown. */
export class NetworkError extends KeyforgeError {
  declare readonly code: NetworkErrorCode;

  constructor(code: NetworkErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'NetworkError';
  }
}

/** The offline token was refused (see {@link VerificationErrorCode}). */
export class VerificationError extends KeyforgeError {
  declare readonly code: VerificationErrorCode;

  constructor(code: VerificationErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'VerificationError';
  }
}

const TRANSIENT_STATUS = new Set([429, 502, 503, 504]);

/**
 * True for failures worth retrying later — no answer, 429, 502, 503, 504 — and false for definite answers
 * (a rejection, a refused token, a malformed request).
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof NetworkError) return true;
  return error instanceof ApiError && TRANSIENT_STATUS.has(error.status);
}
