import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { AppError, type ErrorCode } from '../domain/errors.js';
import { isDatabaseUnavailable } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { AppEnv } from './env.js';

export interface ErrorBody {
  error: { code: ErrorCode; message: string; requestId: string; fields?: Record<string, string> };
}

export function errorResponse(c: Context<AppEnv>, error: AppError): Response {
  const body: ErrorBody = { error: { code: error.code, message: error.message, requestId: c.get('requestId') } };
  if (error.details.fields) body.error.fields = error.details.fields;
  if (error.details.retryAfterSeconds !== undefined) c.header('Retry-After', String(error.details.retryAfterSeconds));
  if (error.details.rateLimit !== undefined) {
    // IETF draft-ietf-httpapi-ratelimit-headers names, so clients can pace themselves.
    c.header('RateLimit-Limit', String(error.details.rateLimit));
    c.header('RateLimit-Remaining', '0');
    c.header('RateLimit-Reset', String(error.details.retryAfterSeconds ?? 60));
  }
  return c.json(body, error.status as 400);
}

/** Seconds a client is told to wait when the database is away (it usually returns within seconds). */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

function serviceUnavailable(): AppError {
  return new AppError('ServiceUnavailable', 'The service is temporarily unavailable; retry shortly.', { retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS });
}

// Prisma P2023 (inconsistent column data, e.g. a malformed UUID); PostgreSQL 22P02 (invalid text representation), 22021 (NUL byte).
const INVALID_INPUT_CODES = new Set(['P2023', '22P02', '22021']);

/** Turns anything thrown into a client-safe response: never a stack trace, never a secret. */
export function toAppError(error: unknown, logger: Logger, requestId: string): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof HTTPException && error.status < 500) {
    return new AppError('InvalidRequest', error.message || 'The request could not be read.');
  }
  const code = (error as { code?: string } | null)?.code;
  // Input PostgreSQL refuses (a malformed UUID, a NUL byte) is the caller's mistake, never a 500.
  if (code && INVALID_INPUT_CODES.has(code)) return new AppError('InvalidRequest', 'The request contains a value that is not valid here (malformed id or unsupported character).');
  if (isDatabaseUnavailable(error)) {
    logger.warn({ requestId, code, err: error instanceof Error ? error.message : undefined }, 'database unavailable');
    return serviceUnavailable();
  }
  logger.error({ requestId, err: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack, code } : String(error) }, 'unhandled error');
  return new AppError('InternalError', `Something went wrong on our side. Quote request id ${requestId} when reporting it.`);
}
