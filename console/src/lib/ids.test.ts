import { describe, expect, it } from 'vitest';
import { compactId, expandId, licensePath } from './ids';

// The server's guard against license keys in URLs (server/src/crypto/license-key.ts).
const KEY_LIKE = /[A-Z][A-Z0-9]{1,11}(-[A-Z0-9]{4}){4}/i;

describe('ids in URLs', () => {
  const uuid = '4f1c8a2b-1c3d-4e5f-a6b7-c8d9e0f1a2b3';

  it('a dashed UUID looks like a license key to the server; the compact form does not', () => {
    expect(KEY_LIKE.test(`/licenses/${uuid}`)).toBe(true);
    expect(KEY_LIKE.test(licensePath(uuid))).toBe(false);
  });

  it('round-trips', () => {
    expect(compactId(uuid)).toBe('4f1c8a2b1c3d4e5fa6b7c8d9e0f1a2b3');
    expect(expandId(compactId(uuid))).toBe(uuid);
    expect(expandId(uuid)).toBe(uuid);
    expect(compactId('not-a-uuid')).toBe('not-a-uuid');
    expect(expandId('123')).toBe('123');
  });
});
