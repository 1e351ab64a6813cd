/**
 * The one error type of the service. Every error a client can cause has a code, an HTTP status and a
 * clear message; transports turn it into `{ error: { code, message, requestId } }` (REST) or a GraphQL
 * error with `extensions.code`.
 */
export const ERROR_STATUS = {
  InvalidRequest: 400,
  NonceRequired: 400,
  NonceInvalid: 422,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  Conflict: 409,
  AccountLocked: 423,
  RateLimited: 429,
  ServiceUnavailable: 503,
  InternalError: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class AppError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: { retryAfterSeconds?: number; fields?: Record<string, string>; rateLimit?: number } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.status = ERROR_STATUS[code];
  }
}

/**
 * Reasons a license is refused. They travel inside an HTTP 200 body (`isValid: false`), as the spec
 * requires, never as an HTTP error.
 */
export const REJECTION_CODES = [
  'LicenseNotFound',
  'LicenseRevoked',
  'LicenseExpired',
  'SeatsExhausted',
  'VersionNotSupported',
  'DeviceIdRequired',
  'ActivationNotFound',
  // Floating sessions: a session token that is unknown/malformed, or whose lease has ended, is a rejection
  // too (like an unknown license key), not an HTTP 401.
  'FloatingNotEnabled',
  'FloatingSeatsExhausted',
  'SessionInvalid',
  'SessionExpired',
  // Metering.
  'QuotaExceeded',
] as const;

export type RejectionCode = (typeof REJECTION_CODES)[number];
