import { canonicalLicenseKey, isKeyforgeKey } from '../../crypto/license-key.js';
import type { ServerSecrets } from '../../crypto/secrets.js';

// Single-use tokens (a reset link's `kfr_…`, an invitation's `kfi_…`) and the license key a purchase mails
// (payments/apply.ts) never sit in clear in a stored email. The
// outbox row holds the bodies with a placeholder where the token goes (`kfr_REDACTED`, which is also what any preview
// shows) and the token sealed under the server secret (AES-256-GCM, crypto/secrets.ts), bound to the row's
// idempotency key and addressee so a sealed value copied into another row is refused. Delivery renders the token into
// the message it hands the provider and drops the sealed value once the provider accepted it (delivery.ts); the
// development outbox, which is the mailbox when nothing is sent, keeps it sealed for the operator's CLI.

/**
 * The placeholder of a token in a stored body: its kind prefix and REDACTED (`kfp_REDACTED`; a Keyforge license key:
 * its prefix word, `ACME-REDACTED`; a key imported in another format: `REDACTED` alone, its text being the vendor's).
 * Single-use tokens are recognised first: their shape is also a well-formed imported key.
 */
export const tokenPlaceholder = (token: string) => {
  if (SINGLE_USE_TOKEN_EXACT.test(token) || !isLicenseKey(token)) return `${token.slice(0, 4)}REDACTED`;
  return isKeyforgeKey(token) ? `${token.split('-')[0]}-REDACTED` : 'REDACTED';
};

const SINGLE_USE_TOKEN_EXACT = /^kf[irp]_[A-Za-z0-9_-]{1,100}$/;

/** A license key of any format, in its canonical form. */
const isLicenseKey = (token: string) => canonicalLicenseKey(token) === token;

/** Single-use tokens an email may carry: an invitation's (`kfi_`), a password reset link's (`kfr_`) and a customer portal sign-in link's (`kfp_`). */
const SINGLE_USE_TOKEN = /\b(kf[irp]_)[A-Za-z0-9_-]+/g;

/** A body with its single-use tokens replaced by their placeholder (what every preview shows). */
export const redactSingleUseTokens = (body: string) => body.replace(SINGLE_USE_TOKEN, '$1REDACTED');

interface SealedFor {
  idempotencyKey: string;
  to: string;
}

/** The sealed form of a token for the outbox row with this idempotency key and addressee. */
export function sealEmailToken(secrets: ServerSecrets, email: SealedFor, token: string): string {
  return secrets.encrypt(JSON.stringify({ key: email.idempotencyKey, to: email.to.toLowerCase(), token }));
}

/** The token sealed for this row; throws when it was sealed for another row or under another secret. */
export function unsealEmailToken(secrets: ServerSecrets, email: SealedFor & { sealedToken: string }): string {
  const opened = JSON.parse(secrets.decrypt(email.sealedToken)) as { key?: unknown; to?: unknown; token?: unknown };
  if (opened.key !== email.idempotencyKey || opened.to !== email.to.toLowerCase() || typeof opened.token !== 'string' || !(SINGLE_USE_TOKEN_EXACT.test(opened.token) || isLicenseKey(opened.token))) {
    throw new Error('the sealed token belongs to another email');
  }
  return opened.token;
}

/** A stored body with the token in place of its placeholder: the message as the addressee receives it. */
export const renderToken = (body: string, token: string) => body.split(tokenPlaceholder(token)).join(token);
