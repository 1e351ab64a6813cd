// The console's cookies: their names and attributes in one place. The GraphQL transport reads and sets them
// through yoga's cookie plugin (request.cookieStore); nothing else touches them.

/** The refresh token lives only in this cookie. */
export const REFRESH_COOKIE = 'kf_refresh';
/** Scoped to the one endpoint that reads it. */
export const REFRESH_COOKIE_PATH = '/api/graphql';
/** A browser that signed in before: its device cookie (services/auth/devices.ts), read by `login`. */
export const DEVICE_COOKIE = 'kf_device';

/** httpOnly, SameSite=Strict, scoped to the GraphQL endpoint; Secure when the server is reached over https. */
export function refreshCookieAttributes(publicUrl: string) {
  return { name: REFRESH_COOKIE, path: REFRESH_COOKIE_PATH, httpOnly: true, sameSite: 'strict' as const, secure: publicUrl.startsWith('https:'), domain: null };
}

/** The same attributes as the refresh cookie, under the device cookie's name. */
export function deviceCookieAttributes(publicUrl: string) {
  return { ...refreshCookieAttributes(publicUrl), name: DEVICE_COOKIE };
}

/** A customer's portal session (services/portal/sign-in.ts): its own cookie, never the staff refresh cookie. */
export const PORTAL_COOKIE = 'kf_portal';

/** httpOnly, SameSite=Strict, scoped to one company's portal (`/portal/<handle>`), so no other portal's requests carry it. */
export function portalCookieAttributes(publicUrl: string, handle: string) {
  return { name: PORTAL_COOKIE, path: `/portal/${handle}`, httpOnly: true, sameSite: 'strict' as const, secure: publicUrl.startsWith('https:'), domain: null };
}
