import { describe, expect, it } from 'vitest';
import { contentSecurityPolicy, logoImageOrigin } from '../server/src/http/content-security-policy.js';

// The policy's text and the logo origin it may name; test/portal.e2e.test.ts proves the policy in Chromium.
describe('Content-Security-Policy of the console and the portal', () => {
  it('names only the server itself, data: images and the given image origins', () => {
    expect(contentSecurityPolicy()).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; font-src 'self'; connect-src 'self'; manifest-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'; img-src 'self' data:",
    );
    expect(contentSecurityPolicy(['https://cdn.acme.test'])).toMatch(/; img-src 'self' data: https:\/\/cdn\.acme\.test$/);
  });

  it('takes a logo’s origin from a plain https address, and nothing from any other', () => {
    expect(logoImageOrigin('https://cdn.acme.test/brand/logo.svg?v=2')).toBe('https://cdn.acme.test');
    expect(logoImageOrigin('https://CDN.Acme.test:8443/logo.png')).toBe('https://cdn.acme.test:8443');
    expect(logoImageOrigin('https://bücher.example/logo.png')).toBe('https://xn--bcher-kva.example');
    for (const refused of [null, '', 'http://cdn.acme.test/logo.png', 'data:image/png;base64,AAAA', 'not a url', 'https://[::1]/logo.png', "https://a.test;script-src 'unsafe-inline'/x.png", 'https://a.test,b.test/x.png']) {
      expect(logoImageOrigin(refused), String(refused)).toBeNull();
    }
  });
});
