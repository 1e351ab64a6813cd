import { timingSafeEqual, randomBytes } from 'node:crypto';
import { sha256 } from '../../crypto/secrets.js';
import type { ServiceContext } from '../context.js';

// Device cookies (OWASP, "Slow brute force attacks: device cookies"): a browser that signed in to an account
// successfully receives a cookie signed for that account. Sign-ins from it are counted and locked per cookie, not
// against the account, so an attacker who fails on purpose (from anywhere, at any rate) locks only the attacker's
// own, unknown browsers out — never the account holder's. The cookie exempts from nothing else: the password (and
// the second factor) are still checked.


/** How long a browser stays trusted after its last successful sign-in (each success renews the cookie). */
export const DEVICE_COOKIE_TTL_MS = 365 * 86_400_000;

export interface TrustedDevice {
  /** Stable per cookie, not secret: the key its failures and rate limit are counted under. */
  id: string;
}

const signature = (ctx: Pick<ServiceContext, 'secrets'>, email: string, issuedAt: string, nonce: string) => ctx.secrets.digest(`device-cookie:v1:${email.trim().toLowerCase()}:${issuedAt}:${nonce}`);

/** A new device cookie value for `email`: `<issued-at seconds>.<nonce>.<HMAC>`; the email is covered, not shown. */
export function issueDeviceToken(ctx: Pick<ServiceContext, 'secrets'>, email: string, now: Date): string {
  const issuedAt = String(Math.floor(now.getTime() / 1000));
  const nonce = randomBytes(18).toString('base64url');
  return `${issuedAt}.${nonce}.${signature(ctx, email, issuedAt, nonce)}`;
}

/** The device a cookie value proves for `email`, or null (forged, another account's, malformed or expired). */
export function verifyDeviceToken(ctx: Pick<ServiceContext, 'secrets'>, email: string, token: string | null | undefined, now: Date): TrustedDevice | null {
  if (!token || token.length > 200) return null;
  const [issuedAt, nonce, mac, extra] = token.split('.');
  if (!issuedAt || !nonce || !mac || extra !== undefined || !/^\d{1,12}$/.test(issuedAt)) return null;
  const age = now.getTime() - Number(issuedAt) * 1000;
  if (age < -60_000 || age > DEVICE_COOKIE_TTL_MS) return null;
  const expected = Buffer.from(signature(ctx, email, issuedAt, nonce));
  const given = Buffer.from(mac);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  return { id: sha256(`${issuedAt}.${nonce}`).slice(0, 32) };
}

/** The key a trusted browser's failed sign-ins are counted and locked under (beside the email keys of login_failures). */
export const deviceFailureKey = (device: TrustedDevice) => `device:${device.id}`;
