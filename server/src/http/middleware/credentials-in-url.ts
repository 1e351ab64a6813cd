import type { MiddlewareHandler } from 'hono';
import { KEY_LIKE_PATTERN } from '../../crypto/license-key.js';
import { AppError } from '../../domain/errors.js';
import { SESSION_TOKEN_LIKE_PATTERN } from '../../services/floating/sessions.js';

/**
 * Query parameters refused whatever their value, on every route: a license key imported from another service
 * (crypto/license-key.ts `canonicalLicenseKey`) has no shape of its own that CREDENTIAL_LIKE could find, so its name is
 * what gives it away. Compared lower-cased without `-`, `_` and `.`: `licenseKey`, `license_key`, `License-Key`… all match.
 */
const KEY_PARAM_NAMES = new Set(['key', 'license', 'licensekey', 'licence', 'licencekey', 'licensecode', 'productkey', 'serialkey', 'activationkey', 'activationcode', 'sessiontoken']);
const paramName = (name: string) => name.toLowerCase().replace(/[-_.]/g, '');
// License keys and floating-session tokens: refused in URLs, masked in logged paths.
const CREDENTIAL_LIKE = new RegExp(`${KEY_LIKE_PATTERN.source}|${SESSION_TOKEN_LIKE_PATTERN.source}`, 'i');
const KEY_LIKE_GLOBAL = new RegExp(CREDENTIAL_LIKE.source, 'gi');

/** A path fit for logs and error messages: anything that looks like a license key or session token masked. */
export const maskCredentials = (path: string) => path.replace(KEY_LIKE_GLOBAL, '[redacted]');

/**
 * A license key is a credential: it must never travel in a URL, where proxies and logs keep it. Throws
 * InvalidRequest when the path or the query string (`search`, without its `?`) carries one: a Keyforge key or session
 * token anywhere (by its shape), or any query parameter named like a key (KEY_PARAM_NAMES). An imported key in a path
 * segment or under another parameter name is not told apart from any other text (docs/security.md).
 */
export function refuseCredentialsIn(path: string, search: string | undefined): void {
  let leaked = CREDENTIAL_LIKE.test(safeDecode(path));
  if (!leaked && search) {
    for (const [name, value] of new URLSearchParams(search)) {
      if (KEY_PARAM_NAMES.has(paramName(name)) || CREDENTIAL_LIKE.test(value)) leaked = true;
    }
  }
  if (leaked) throw new AppError('InvalidRequest', 'License keys and session tokens must be sent in the JSON request body (or, for session tokens, an Authorization header), never in the URL.');
}

/** refuseCredentialsIn for every request of the Hono app. */
export function refuseCredentialsInUrl(): MiddlewareHandler {
  return async (c, next) => {
    const query = c.req.url.indexOf('?');
    refuseCredentialsIn(c.req.path, query === -1 ? undefined : c.req.url.slice(query + 1));
    await next();
  };
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
