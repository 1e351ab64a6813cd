import { describe, expect, it } from 'vitest';
import { renderDigestEmail } from '../server/src/email/digest.js';
import { renderExpiryAdminEmail, renderExpiryCustomerEmail } from '../server/src/email/expiry.js';
import { renderInvitationEmail } from '../server/src/email/invitation.js';
import { renderTestEmail } from '../server/src/email/test-email.js';

// What a reader's mail client loads when an email is opened: nothing from a third party (no web fonts, no
// images or styles by URL), so opening it tells nobody anything and it renders the same offline.

/** Every URL the HTML would make a mail client fetch by itself (links the reader clicks are not fetched). */
function fetchedUrls(html: string): string[] {
  const urls = [...html.matchAll(/<(?:link|img|script|iframe|source)\b[^>]*\b(?:href|src)="([^"]+)"/gi)].map((match) => match[1]);
  const css = [...html.matchAll(/url\(\s*['"]?([^'")]+)/gi), ...html.matchAll(/@import\s+(?:url\()?\s*['"]?([^'");]+)/gi)].map((match) => match[1]);
  return [...urls, ...css];
}

const now = new Date('2026-06-01T09:00:00Z');
const expiresAt = new Date('2026-06-08T12:00:00Z');
const dashboardUrl = 'https://licensing.example/';
const license = { productName: 'Studio', keyHint: 'KF-AAAA-…-ZZZZ', expiresAt, currentActivations: 1, maxActivations: 3 };

const templates: [string, () => Promise<{ html: string }>][] = [
  ['test email', () => renderTestEmail({ tenantName: 'Acme', to: 'ada@acme.test', now, dashboardUrl })],
  ['invitation', () => renderInvitationEmail({ tenantName: 'Acme', to: 'bob@acme.test', invitedBy: 'Ada', role: 'ReadOnly', expiresAt, acceptUrl: `${dashboardUrl}accept-invite#token=t` })],
  ['digest', () => renderDigestEmail({ tenantName: 'Acme', weekOf: now, activeLicenses: 3, activations7d: 2, expiringIn7Days: 1, expiringIn30Days: 7, upcoming: [{ productName: 'Studio', customerEmail: 'c@x.test', expiresAt }], dashboardUrl })],
  ['expiry (admin)', () => renderExpiryAdminEmail({ tenantName: 'Acme', now, dashboardUrl, groups: [{ threshold: 7, total: 2, licenses: [license], moreUrl: `${dashboardUrl}licenses`, firstExpiresAt: expiresAt, lastExpiresAt: expiresAt }] })],
  ['expiry (customer)', () => renderExpiryCustomerEmail({ vendor: { name: 'Acme', renewalUrl: `${dashboardUrl}renew`, supportEmail: 'help@acme.test' }, now, threshold: 7, license })],
];

describe('email privacy', () => {
  for (const [name, render] of templates) {
    it(`${name}: loads no web font or any other remote resource, even with Roboto in the font stack`, async () => {
      const { html } = await render();
      expect(html).toContain('Roboto'); // the stack is kept for readers who have the font installed
      expect(html).not.toMatch(/fonts\.googleapis|fonts\.gstatic/);
      expect(fetchedUrls(html)).toEqual([]);
      // Links the reader may click stay.
      expect(html).toMatch(/href="https:\/\/licensing\.example\//);
    });
  }
});
