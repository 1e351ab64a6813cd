import { isDatabaseUnavailable } from './database-unavailable.js';

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
  /** An account-security action from a session that has not re-authenticated recently (services/auth/reauth.ts). */
  ReauthenticationRequired: 403,
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
    readonly details: { retryAfterSeconds?: number; fields?: Record<string, string>; rateLimit?: number; rateLimitName?: string } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.status = ERROR_STATUS[code];
  }
}

/** Seconds a client is told to wait when the database is away (it usually returns within seconds). */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

function serviceUnavailable(): AppError {
  return new AppError('ServiceUnavailable', 'The service is temporarily unavailable; retry shortly.', { retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS });
}

// Prisma P2023 (inconsistent column data, e.g. a malformed UUID); PostgreSQL 22P02 (invalid text representation),
// 22021 (NUL byte), 22007/22008 (a date it cannot read or store, e.g. year 0), 22003 (a number out of its column's range).
export const INVALID_INPUT_CODES = new Set(['P2023', '22P02', '22021', '22007', '22008', '22003']);

/** The error's code, and PostgreSQL's own under a Prisma error (P2007, P2010, P2020, P2039 carry it in the driver adapter's cause). */
export function errorCodes(error: unknown): string[] {
  const e = error as { code?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } } } | null;
  return [e?.code, e?.meta?.driverAdapterError?.cause?.originalCode].filter((code): code is string => typeof code === 'string');
}

/** What toAppError logs through (pino's Logger fits). */
export interface ErrorLogger {
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

/**
 * Turns anything thrown into a client-safe AppError: never a stack trace, never a secret. Each transport
 * (REST, GraphQL) maps its own framework errors first, then hands the rest to this.
 */
export function toAppError(error: unknown, logger: ErrorLogger, requestId: string): AppError {
  if (error instanceof AppError) return error;
  const code = (error as { code?: string } | null)?.code;
  // Input PostgreSQL refuses (a malformed UUID, a NUL byte, year 0) is the caller's mistake, never a 500. The
  // services check their input first, with clearer messages; this is the net under a check that is missing.
  if (errorCodes(error).some((candidate) => INVALID_INPUT_CODES.has(candidate))) {
    return new AppError('InvalidRequest', 'The request contains a value that is not valid here (malformed id, unsupported character, or a number or date out of range).');
  }
  // Prisma P2025: the row a write named is gone. Services find a row (scoped to the tenant) before writing it, so
  // this is a concurrent delete (a double click, two admins): the caller's target no longer exists.
  if (code === 'P2025') return new AppError('NotFound', 'Not found: it was removed while this request ran.');
  if (isDatabaseUnavailable(error)) {
    logger.warn({ requestId, code, err: error instanceof Error ? error.message : undefined }, 'database unavailable');
    return serviceUnavailable();
  }
  logger.error({ requestId, err: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack, code } : String(error) }, 'unhandled error');
  return new AppError('InternalError', `Something went wrong on our side. Quote request id ${requestId} when reporting it.`);
}

/**
 * Reasons a license is refused. They travel inside an HTTP 200 body (`isValid: false`), never as an HTTP error
 * (docs/integrate/rest-api.md "Rejection codes (HTTP 200, `isValid: false`)").
 */
export const REJECTION_CODES = [
  'LicenseNotFound',
  'LicenseRevoked',
  // The vendor suspended the license (reversible: reinstating restores it, seats kept).
  'Suspended',
  'LicenseExpired',
  'SeatsExhausted',
  'VersionNotSupported',
  'DeviceIdRequired',
  // Activate with `product`: the license is for another product (and not a bundle containing one of those named).
  'ProductMismatch',
  'ActivationNotFound',
  // Validate with requireActivation: the deviceId holds no active activation of the license (never activated, or
  // deactivated since).
  'DeviceNotActivated',
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
