import type { z } from 'zod';
import { AppError } from '../domain/errors.js';

/** Parses service input with a zod schema; a failure is the caller's mistake (InvalidRequest, per field). */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const fields: Record<string, string> = {};
  for (const issue of result.error.issues) fields[issue.path.join('.') || '(body)'] ??= issue.message;
  const summary = Object.entries(fields).map(([field, message]) => `${field}: ${message}`).join('; ');
  throw new AppError('InvalidRequest', `Invalid input: ${summary}`, { fields });
}

/** True for Prisma's unique-constraint violation. */
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === 'P2002';
}
