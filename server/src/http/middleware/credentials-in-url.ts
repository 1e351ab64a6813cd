import type { MiddlewareHandler } from 'hono';
import { KEY_LIKE_PATTERN } from '../../crypto/license-key.js';
import { AppError } from '../../domain/errors.js';
import { SESSION_TOKEN_LIKE_PATTERN } from '../../services/floating/sessions.js';

const KEY_PARAM_NAMES = new Set(['licensekey', 'license_key', 'key', 'license', 'sessiontoken', 'session_token']);
// License keys and floating-session tokens: refused in URLs, masked in logged paths.
const CREDENTIAL_LIKE = new RegExp(`${KEY_LIKE_PATTERN.source}|${SESSION_TOKEN_LIKE_PATTERN.source}`, 'i');
const KEY_LIKE_GLOBAL = new RegExp(CREDENTIAL_LIKE.source, 'gi');

/** A path fit for logs and error messages: anything that looks like a license key or session token masked. */
export const maskCredentials = (path: string) => path.replace(KEY_LIKE_GLOBAL, '[redacted]');

/**
 * A license key is a credential: it must never travel in a URL, where proxies and logs keep it. Throws
 * InvalidRequest when the path or the query string (`search`, without its `?`) carries one.
 */
export function refuseCredentialsIn(path: string, search: string | undefined): void {
  let leaked = CREDENTIAL_LIKE.test(safeDecode(path));
  if (!leaked && search) {
    for (const [name, value] of new URLSearchParams(search)) {
      if (KEY_PARAM_NAMES.has(name.toLowerCase()) || CREDENTIAL_LIKE.test(value)) leaked = true;
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
