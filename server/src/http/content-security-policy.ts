/**
 * The Content-Security-Policy of the console's and the portal's pages and built assets (docs/security.md "Content
 * Security Policy"). Everything the browser may load comes from the server's own origin: the built scripts (no inline
 * script: Vite's output references its modules by URL), styles, fonts and GraphQL calls. Styles also allow
 * 'unsafe-inline': Mantine writes its theme as a `<style>` element and positions menus and popovers through `style`
 * attributes at run time, and the pages render no HTML from data, so an injected style has nothing to reach that a
 * script could not already. Images: the server's own, `data:` (the favicon, the MFA QR code) and, on a portal, the
 * origin of the vendor's logo (an https:// address of its choosing).
 */
const BASE_DIRECTIVES: ReadonlyArray<readonly [string, string]> = [
  ['default-src', "'none'"],
  ['script-src', "'self'"],
  ['style-src', "'self' 'unsafe-inline'"],
  ['font-src', "'self'"],
  ['connect-src', "'self'"],
  ['manifest-src', "'self'"],
  ['frame-ancestors', "'none'"],
  ['form-action', "'self'"],
  ['base-uri', "'none'"],
  ['object-src', "'none'"],
];

/** The policy, with the image sources `'self' data:` plus `imageOrigins` (each `https://host[:port]`). */
export function contentSecurityPolicy(imageOrigins: readonly string[] = []): string {
  const images = ["'self'", 'data:', ...imageOrigins].join(' ');
  return [...BASE_DIRECTIVES, ['img-src', images] as const].map(([name, value]) => `${name} ${value}`).join('; ');
}

/**
 * The origin a portal's logo loads from, as a CSP source (`https://host[:port]`), or null when there is no logo or its
 * address is not a plain https host (the logo then does not load, and the portal shows the company's name alone).
 */
export function logoImageOrigin(logoUrl: string | null): string | null {
  if (!logoUrl) return null;
  let url: URL;
  try {
    url = new URL(logoUrl);
  } catch {
    return null;
  }
  // A CSP source list is split on spaces and semicolons: only hosts made of safe characters are named in it.
  if (url.protocol !== 'https:' || !/^[a-z0-9.-]+(:\d{1,5})?$/.test(url.host)) return null;
  return `https://${url.host}`;
}

/** The console's policy (fixed; computed once). */
export const CONSOLE_CONTENT_SECURITY_POLICY = contentSecurityPolicy();
