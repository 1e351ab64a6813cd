import { randomInt } from 'node:crypto';

/**
 * License keys look like `ACME-7KQ2-M9XH-4TRB-WZ3P`: the tenant's prefix word, then four groups of four
 * symbols from an alphabet without look-alikes (no 0/O, 1/I/L, U). 16 symbols from 30 give
 * 16·log2(30) ≈ 78.5 bits of CSPRNG randomness.
 */
export const KEY_ALPHABET = 'ABCDEFGHJKMNPQRSTVWXYZ23456789';
export const KEY_PREFIX_PATTERN = /^[A-Z][A-Z0-9]{1,11}$/;
const GROUP = `[${KEY_ALPHABET}]{4}`;
const KEY_PATTERN = new RegExp(`^[A-Z][A-Z0-9]{1,11}(-${GROUP}){4}$`);
/**
 * Something that looks like a license key anywhere in a string (used to refuse keys in URLs). Bounded on
 * both sides so that a UUID (8-4-4-4-12) in a path is not mistaken for one.
 */
export const KEY_LIKE_PATTERN = /(?<![A-Z0-9-])[A-Z][A-Z0-9]{1,11}(-[A-Z0-9]{4}){4}(?![A-Z0-9-])/i;

export function generateLicenseKey(prefix: string): string {
  const groups = Array.from({ length: 4 }, () =>
    Array.from({ length: 4 }, () => KEY_ALPHABET[randomInt(KEY_ALPHABET.length)]).join(''),
  );
  return [prefix, ...groups].join('-');
}

/** Upper-cases and strips white space; returns null when the result is not a well-formed key. */
export function normalizeLicenseKey(input: string): string | null {
  const key = input.replace(/\s+/g, '').toUpperCase();
  return KEY_PATTERN.test(key) ? key : null;
}

/** `ACME-…-WZ3P`: recognisable by a person, useless to an attacker. */
export function licenseKeyHint(key: string): string {
  const parts = key.split('-');
  return `${parts[0]}-…-${parts[parts.length - 1]}`;
}
