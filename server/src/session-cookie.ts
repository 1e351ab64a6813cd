// The console's session cookie: its name and attributes in one place. The GraphQL transport reads and sets it
// through yoga's cookie plugin (request.cookieStore); nothing else touches it.

/** The refresh token lives only in this cookie. */
export const REFRESH_COOKIE = 'kf_refresh';
/** Scoped to the one endpoint that reads it. */
export const REFRESH_COOKIE_PATH = '/api/graphql';

/** httpOnly, SameSite=Strict, scoped to the GraphQL endpoint; Secure when the server is reached over https. */
export function refreshCookieAttributes(publicUrl: string) {
  return { name: REFRESH_COOKIE, path: REFRESH_COOKIE_PATH, httpOnly: true, sameSite: 'strict' as const, secure: publicUrl.startsWith('https:'), domain: null };
}
