import { z } from 'zod';
import { AppError } from '../domain/errors.js';

/** Parses service input with a zod schema; a failure is the caller's mistake (InvalidRequest, per field). */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  assertStorableStrings(input);
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw invalidFields(result.error, 'Invalid input');
}

/** A schema's refusal as the caller's mistake: InvalidRequest with the first problem of each field (docs/integrate/rest-api.md "HTTP errors"). */
export function invalidFields(error: z.ZodError, summaryPrefix: string): AppError {
  const fields: Record<string, string> = {};
  for (const issue of error.issues) fields[issue.path.join('.') || '(body)'] ??= issue.message;
  const summary = Object.entries(fields).map(([field, message]) => `${field}: ${message}`).join('; ');
  return new AppError('InvalidRequest', `${summaryPrefix}: ${summary}`, { fields });
}

const FIRST_STORABLE = new Date('0001-01-01T00:00:00.000Z');
const LAST_STORABLE = new Date('9999-12-31T23:59:59.999Z');
const STORABLE_RANGE = 'must be a date between the years 1 and 9999';

/**
 * A date the database can store: years 1 to 9999 (dates travel to PostgreSQL as ISO 8601 strings, which have
 * four-digit years). Anything else is the caller's field error, never a database error.
 */
export const StorableDate = z.coerce.date().min(FIRST_STORABLE, STORABLE_RANGE).max(LAST_STORABLE, STORABLE_RANGE);

/** True for Prisma's unique-constraint violation. */
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === 'P2002';
}

// PostgreSQL text cannot hold NUL, and a lone UTF-16 surrogate cannot be encoded: both are refused up front.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The path of the first string (value or key) in `value` that PostgreSQL cannot store, or null. */
export function findUnstorableString(value: unknown, path = '', depth = 0): string | null {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? path || '(body)' : null;
  if (typeof value !== 'object' || value === null || depth > 64) return null;
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (UNSTORABLE.test(key)) return at;
    const found = findUnstorableString(item, at, depth + 1);
    if (found) return found;
  }
  return null;
}

/** The InvalidRequest for a NUL character or a lone surrogate anywhere in `value` (PostgreSQL cannot store them), or null. */
export function unstorableStringError(value: unknown): AppError | null {
  const field = findUnstorableString(value);
  if (!field) return null;
  const problem = 'must not contain NUL characters or unpaired surrogates';
  return new AppError('InvalidRequest', `Invalid input: ${field}: ${problem}.`, { fields: { [field]: problem } });
}

function assertStorableStrings(value: unknown): void {
  const error = unstorableStringError(value);
  if (error) throw error;
}
