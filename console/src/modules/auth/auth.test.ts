import { describe, expect, it } from 'vitest';
import { safeNext } from './next';
import { validateKeyPrefix, validatePassword } from './validation';

describe('auth helpers', () => {
  it('follows only same-app paths after sign-in', () => {
    expect(safeNext('/licenses/abc?x=1')).toBe('/licenses/abc?x=1');
    expect(safeNext(null)).toBe('/');
    expect(safeNext('https://evil.example')).toBe('/');
    expect(safeNext('//evil.example')).toBe('/');
    expect(safeNext('/login')).toBe('/');
  });

  it('checks key prefixes and passwords like the server', () => {
    expect(validateKeyPrefix('ACME')).toBeUndefined();
    expect(validateKeyPrefix('A')).toBeDefined();
    expect(validateKeyPrefix('1ACME')).toBeDefined();
    expect(validatePassword('short')).toBeDefined();
    expect(validatePassword('long enough password')).toBeUndefined();
  });
});
