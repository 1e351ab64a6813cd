import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ServerSecrets } from '../../crypto/secrets.js';

/**
 * The token of a file-store download link: `<license id>.<expiry, Unix seconds>.<HMAC-SHA256 hex>`, the HMAC (a key
 * derived from the server secret) over the artifact id, the license id and the expiry. It names no license key, only
 * proves that this server handed this license a link to this artifact until then. Made only of hex digits, dashes
 * (the UUID) and dots, it never looks like a license key in a URL.
 */
const TOKEN_PATTERN = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.(\d{1,12})\.([0-9a-f]{64})$/;

const mac = (secrets: ServerSecrets, artifactId: string, licenseId: string, expiresAt: number) =>
  createHmac('sha256', secrets.downloadLinkKey).update(`keyforge.artifact-download\n${artifactId}\n${licenseId}\n${expiresAt}`).digest('hex');

export function downloadToken(secrets: ServerSecrets, artifactId: string, licenseId: string, expiresAt: Date): string {
  const seconds = Math.floor(expiresAt.getTime() / 1000);
  return `${licenseId}.${seconds}.${mac(secrets, artifactId.toLowerCase(), licenseId, seconds)}`;
}

export type TokenCheck = { ok: true; licenseId: string } | { ok: false; reason: 'forged' | 'expired' };

/** Whether `token` is a genuine link to `artifactId`, and still valid at `now` (forged is told apart from expired). */
export function checkDownloadToken(secrets: ServerSecrets, artifactId: string, token: string, now: Date): TokenCheck {
  const match = TOKEN_PATTERN.exec(token);
  if (!match) return { ok: false, reason: 'forged' };
  const [, licenseId, seconds, given] = match;
  const expected = mac(secrets, artifactId.toLowerCase(), licenseId, Number(seconds));
  if (!timingSafeEqual(Buffer.from(given, 'hex'), Buffer.from(expected, 'hex'))) return { ok: false, reason: 'forged' };
  if (Number(seconds) * 1000 < now.getTime()) return { ok: false, reason: 'expired' };
  return { ok: true, licenseId };
}
