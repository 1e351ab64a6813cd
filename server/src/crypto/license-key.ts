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

/**
 * Keys a vendor issued elsewhere before moving to Keyforge (a product's `allowImportedKeys`): any printable ASCII
 * (0x21–0x7E: no space, no control character, nothing outside ASCII) of IMPORTED_KEY_MIN_LENGTH to
 * IMPORTED_KEY_MAX_LENGTH characters. Compared exactly (case-sensitive) once the white space around them is trimmed.
 */
export const IMPORTED_KEY_MIN_LENGTH = 8;
export const IMPORTED_KEY_MAX_LENGTH = 256;
const IMPORTED_KEY_PATTERN = /^[\x21-\x7E]+$/;
/** The longest key field accepted as sent (APIs, forms): the longest key with some white space around it. */
export const LICENSE_KEY_INPUT_MAX_LENGTH = IMPORTED_KEY_MAX_LENGTH + 64;

/**
 * The one form a key is digested, compared and derived from, whatever its format: a Keyforge key normalised
 * (`normalizeLicenseKey`: case and white space ignored), else an imported key as given with the white space around
 * it trimmed (case-sensitive); null when it is neither (then no license has it). Linear in the input's length.
 */
export function canonicalLicenseKey(input: string): string | null {
  const keyforge = normalizeLicenseKey(input);
  if (keyforge) return keyforge;
  const key = input.trim();
  if (key.length < IMPORTED_KEY_MIN_LENGTH || key.length > IMPORTED_KEY_MAX_LENGTH) return null;
  return IMPORTED_KEY_PATTERN.test(key) ? key : null;
}

/** Whether a canonical key (`canonicalLicenseKey`) is in Keyforge's own format (else it is an imported one). */
export const isKeyforgeKey = (canonical: string) => KEY_PATTERN.test(canonical);

/** What an invalid key is told (an API's 400, a CSV row's error). */
export const LICENSE_KEY_FORMAT = `is not a license key: a Keyforge key (PREFIX-XXXX-XXXX-XXXX-XXXX) or an imported key of ${IMPORTED_KEY_MIN_LENGTH}–${IMPORTED_KEY_MAX_LENGTH} printable ASCII characters without white space`;

/**
 * `ACME-…-WZ3P`: recognisable by a person, useless to an attacker. An imported key (canonical) shows at most a
 * quarter of its characters: its first and last 4 from 16 characters on, its last 2 below.
 */
export function licenseKeyHint(key: string): string {
  if (!isKeyforgeKey(key)) return key.length >= 16 ? `${key.slice(0, 4)}…${key.slice(-4)}` : `…${key.slice(-2)}`;
  const parts = key.split('-');
  return `${parts[0]}-…-${parts[parts.length - 1]}`;
}
