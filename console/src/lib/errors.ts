import type { CombinedError } from 'urql';
import { formatDateTimeWithZone } from './format';

/** Error codes the management API puts in `extensions.code` (docs/reference/errors.md). */
export type ApiErrorCode =
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'Conflict'
  | 'InvalidRequest'
  | 'AccountLocked'
  | 'ReauthenticationRequired'
  | 'RateLimited'
  | 'ServiceUnavailable'
  | 'InternalError'
  | 'NetworkError';

const FALLBACK: Record<ApiErrorCode, string> = {
  Unauthorized: 'Your session has ended. Sign in again.',
  Forbidden: 'Your role does not allow this. Ask a company admin.',
  NotFound: 'This item does not exist (or belongs to another company).',
  Conflict: 'This conflicts with existing data.',
  InvalidRequest: 'Some values are not valid.',
  AccountLocked: 'The account is locked after too many failed sign-ins. Try again later.',
  ReauthenticationRequired: 'This action needs your password again: it was not done.',
  RateLimited: 'Too many requests. Wait a moment and try again.',
  ServiceUnavailable: 'The service is temporarily unavailable. Try again shortly.',
  InternalError: 'Something went wrong on the server. Try again; if it persists, contact the operator.',
  NetworkError: 'Cannot reach the server. Check your connection and try again.',
};

// Codes whose server message is written for people; other codes get the friendly fallback.
const SERVER_MESSAGE_CODES = new Set<ApiErrorCode>(['Forbidden', 'NotFound', 'Conflict', 'InvalidRequest', 'AccountLocked', 'Unauthorized']);

type AnyError = CombinedError | Error | null | undefined;

interface GraphQLErrorLike {
  message: string;
  extensions?: Record<string, unknown>;
}

function firstGraphQLError(error: AnyError): GraphQLErrorLike | undefined {
  return error && 'graphQLErrors' in error ? error.graphQLErrors[0] : undefined;
}

/** The API code of an error: `extensions.code`, HTTP 401 → Unauthorized, a failed request → NetworkError. */
export function errorCode(error: AnyError): ApiErrorCode | undefined {
  if (!error) return undefined;
  const code = firstGraphQLError(error)?.extensions?.code;
  if (typeof code === 'string') return (code in FALLBACK ? code : 'InternalError') as ApiErrorCode;
  if ('response' in error && error.response) {
    const status = (error.response as Response).status;
    if (status === 401) return 'Unauthorized';
    if (status === 403) return 'Forbidden';
    if (status === 429) return 'RateLimited';
    if (status === 503) return 'ServiceUnavailable';
    if (status >= 500) return 'InternalError';
  }
  return 'networkError' in error && error.networkError ? 'NetworkError' : 'InternalError';
}

/** One sentence for a person: the server's message for client errors, a friendly text otherwise. */
export function errorMessage(error: AnyError): string {
  const code = errorCode(error);
  if (!code) return '';
  const serverMessage = firstGraphQLError(error)?.message;
  if (serverMessage && SERVER_MESSAGE_CODES.has(code)) return humanizeTimestamps(serverMessage);
  return FALLBACK[code];
}

/** Per-field problems of an InvalidRequest (`extensions.fields`), keyed by input name. */
export function fieldErrors(error: AnyError): Record<string, string> {
  const fields = firstGraphQLError(error)?.extensions?.fields;
  return fields && typeof fields === 'object' ? (fields as Record<string, string>) : {};
}

/** Server messages carry ISO timestamps (e.g. "locked until 2026-06-01T12:15:00.000Z"): show local time, with its zone. */
export function humanizeTimestamps(message: string): string {
  return message.replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z/g, (iso) => formatDateTimeWithZone(iso));
}
