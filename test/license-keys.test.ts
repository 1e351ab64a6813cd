import { describe, expect, it } from 'vitest';
import { KEY_ALPHABET, generateLicenseKey, licenseKeyHint, normalizeLicenseKey } from '../server/src/crypto/license-key.js';
import { ServerSecrets } from '../server/src/crypto/secrets.js';

describe('license keys', () => {
  it('have the format PREFIX-XXXX-XXXX-XXXX-XXXX over an unambiguous alphabet', () => {
    const key = generateLicenseKey('ACME');
    expect(key).toMatch(/^ACME(-[A-Z2-9]{4}){4}$/);
    expect(KEY_ALPHABET).not.toMatch(/[01OILU]/);
    expect(new Set(KEY_ALPHABET).size).toBe(KEY_ALPHABET.length);
  });

  it('are random: no repeats in 20,000 and every symbol used about evenly', () => {
    const keys = Array.from({ length: 20_000 }, () => generateLicenseKey('K'));
    expect(new Set(keys).size).toBe(keys.length);
    const counts = new Map<string, number>();
    for (const key of keys) for (const ch of key.slice(2).replace(/-/g, '')) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    const expected = (20_000 * 16) / KEY_ALPHABET.length;
    expect(counts.size).toBe(KEY_ALPHABET.length);
    for (const count of counts.values()) expect(Math.abs(count - expected) / expected).toBeLessThan(0.1);
  });

  it('carry at least 75 bits of randomness, measured on generated keys (16 positions, each uniform)', () => {
    const symbols = Array.from({ length: 20_000 }, () => generateLicenseKey('K').slice(2).replace(/-/g, ''));
    expect(new Set(symbols.map((s) => s.length))).toEqual(new Set([16]));
    // Shannon entropy of each position's observed distribution; a fixed, checksum or biased position shows here.
    let bits = 0;
    for (let position = 0; position < 16; position++) {
      const counts = new Map<string, number>();
      for (const s of symbols) counts.set(s[position], (counts.get(s[position]) ?? 0) + 1);
      expect(counts.size, `position ${position} uses every symbol`).toBe(KEY_ALPHABET.length);
      const entropy = -[...counts.values()].reduce((sum, count) => sum + (count / symbols.length) * Math.log2(count / symbols.length), 0);
      expect(entropy, `position ${position}`).toBeGreaterThan(Math.log2(KEY_ALPHABET.length) - 0.02);
      bits += entropy;
    }
    expect(bits).toBeGreaterThanOrEqual(75);
  });

  it('normalise case and white space; malformed input is null', () => {
    expect(normalizeLicenseKey(' acme-abcd - efgh-jkmn-pqrs\n')).toBe('ACME-ABCD-EFGH-JKMN-PQRS');
    for (const bad of ['', 'ACME', 'ACME-ABCD-EFGH-JKMN', 'ACME-ABCD-EFGH-JKMN-PQR0', 'ACME-ABCD-EFGH-JKMN-PQRS-TUVW', '1ACME-ABCD-EFGH-JKMN-PQRS']) {
      expect(normalizeLicenseKey(bad)).toBeNull();
    }
  });

  it('show only the prefix and the last group as a hint', () => {
    expect(licenseKeyHint('ACME-ABCD-EFGH-JKMN-PQRS')).toBe('ACME-…-PQRS');
  });

  it('digest with a keyed HMAC: same key same digest, other secret other digest', () => {
    const a = new ServerSecrets('a'.repeat(40));
    const b = new ServerSecrets('b'.repeat(40));
    expect(a.digest('ACME-ABCD-EFGH-JKMN-PQRS')).toMatch(/^[0-9a-f]{64}$/);
    expect(a.digest('ACME-ABCD-EFGH-JKMN-PQRS')).toBe(a.digest('ACME-ABCD-EFGH-JKMN-PQRS'));
    expect(a.digest('ACME-ABCD-EFGH-JKMN-PQRS')).not.toBe(b.digest('ACME-ABCD-EFGH-JKMN-PQRS'));
    expect(a.decrypt(a.encrypt('private key'))).toBe('private key');
    expect(() => b.decrypt(a.encrypt('private key'))).toThrow();
  });
});
