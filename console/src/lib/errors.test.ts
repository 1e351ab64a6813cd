import { CombinedError } from 'urql';
import { describe, expect, it } from 'vitest';
import { errorCode, errorMessage, fieldErrors, humanizeTimestamps } from './errors';

const gqlError = (code: string, message: string, extra: Record<string, unknown> = {}) =>
  new CombinedError({ graphQLErrors: [{ message, extensions: { code, ...extra } }] as never });

describe('error helpers', () => {
  it('reads extensions.code and keeps the server message for client errors', () => {
    const error = gqlError('Conflict', 'A user with the email a@b.c already exists.');
    expect(errorCode(error)).toBe('Conflict');
    expect(errorMessage(error)).toBe('A user with the email a@b.c already exists.');
  });

  it('masks internal errors with a friendly text', () => {
    expect(errorMessage(gqlError('InternalError', 'Unexpected error.'))).toMatch(/Something went wrong on the server/);
    expect(errorMessage(gqlError('RateLimited', 'x'))).toMatch(/Too many requests/);
  });

  it('a failed request is a NetworkError', () => {
    const error = new CombinedError({ networkError: new TypeError('Failed to fetch') });
    expect(errorCode(error)).toBe('NetworkError');
    expect(errorMessage(error)).toMatch(/Cannot reach the server/);
  });

  it('an HTTP 401 without GraphQL errors is Unauthorized', () => {
    const error = new CombinedError({ networkError: new Error('Unauthorized'), response: new Response('{}', { status: 401 }) });
    expect(errorCode(error)).toBe('Unauthorized');
  });

  it('exposes per-field errors of InvalidRequest', () => {
    expect(fieldErrors(gqlError('InvalidRequest', 'Invalid input', { fields: { email: 'Invalid email' } }))).toEqual({ email: 'Invalid email' });
    expect(fieldErrors(undefined)).toEqual({});
  });

  it('shows the lockout time in local time instead of ISO, with its time zone', () => {
    const message = humanizeTimestamps('the account is locked until 2026-06-01T12:15:00.000Z.');
    expect(message).not.toContain('T12:15:00');
    expect(message).toMatch(/2026/);
    const zone = new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' }).formatToParts(new Date('2026-06-01T12:15:00.000Z')).find((part) => part.type === 'timeZoneName')!.value;
    expect(message).toMatch(new RegExp(`${zone.replace(/[+]/g, '\\+')}\\.$`));
  });

  it('no error, no message', () => {
    expect(errorCode(null)).toBeUndefined();
    expect(errorMessage(undefined)).toBe('');
  });
});
