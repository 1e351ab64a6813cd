import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { AppError, toAppError, type ErrorCode, type ErrorLogger } from '../domain/errors.js';
import type { AppEnv } from './env.js';

export interface ErrorBody {
  error: { code: ErrorCode; message: string; requestId: string; fields?: Record<string, string> };
}

export function errorResponse(c: Context<AppEnv>, error: AppError): Response {
  c.set('appError', error);
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

/** The same error as a GraphQL response: `errors[].extensions.code`, the status and Retry-After kept. */
export function graphqlErrorResponse(c: Context<AppEnv>, error: AppError): Response {
  const { retryAfterSeconds } = error.details;
  if (retryAfterSeconds !== undefined) c.header('Retry-After', String(retryAfterSeconds));
  const extensions = { code: error.code, requestId: c.get('requestId'), ...(retryAfterSeconds !== undefined && { retryAfterSeconds }) };
  return c.json({ errors: [{ message: error.message, extensions }] }, error.status as 500);
}

/** Hono's own client errors (an unreadable body, …) are a 400; everything else goes through the domain's mapping. */
export function httpErrorToAppError(error: unknown, logger: ErrorLogger, requestId: string): AppError {
  if (error instanceof HTTPException && error.status < 500) return new AppError('InvalidRequest', error.message || 'The request could not be read.');
  return toAppError(error, logger, requestId);
}
