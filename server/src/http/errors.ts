import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { AppError, toAppError, type ErrorCode, type ErrorLogger } from '../domain/errors.js';
import type { AppEnv } from './env.js';

export interface ErrorBody {
  error: { code: ErrorCode; message: string; requestId: string; fields?: Record<string, string> };
}

/** The HTTP error body of docs/integrate/rest-api.md "HTTP errors": `{ error: { code, message, requestId, fields? } }`. */
export function errorBody(error: AppError, requestId: string): ErrorBody {
  const body: ErrorBody = { error: { code: error.code, message: error.message, requestId } };
  if (error.details.fields) body.error.fields = error.details.fields;
  return body;
}

/** The headers an error answer carries: Retry-After, and for a rate limit the RateLimit-* headers at zero. */
export function errorHeaders(error: AppError): Record<string, string> {
  const headers: Record<string, string> = {};
  if (error.details.retryAfterSeconds !== undefined) headers['Retry-After'] = String(error.details.retryAfterSeconds);
  if (error.details.rateLimit !== undefined) {
    // IETF draft-ietf-httpapi-ratelimit-headers names, so clients can pace themselves.
    headers['RateLimit-Limit'] = String(error.details.rateLimit);
    headers['RateLimit-Remaining'] = '0';
    headers['RateLimit-Reset'] = String(error.details.retryAfterSeconds ?? 60);
  }
  return headers;
}

export function errorResponse(c: Context<AppEnv>, error: AppError): Response {
  c.set('appError', error);
  for (const [name, value] of Object.entries(errorHeaders(error))) c.header(name, value);
  return c.json(errorBody(error, c.get('requestId')), error.status as 400);
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
