import { describe, expect, it } from 'vitest';
import { renderDigestEmail } from '../server/src/email/digest.js';
import { renderExpiryAdminEmail, renderExpiryCustomerEmail } from '../server/src/email/expiry.js';
import { renderInvitationEmail } from '../server/src/email/invitation.js';
import { renderTestEmail } from '../server/src/email/test-email.js';

// Tenant names, product names, customer emails, key hints and vendor contact lines are typed by users. The
// templates are React components over MJML: every value is escaped by construction. Each template is rendered
// with hostile values in every field and must show them as text, never as markup.

const SCRIPT = '<script>alert(1)</script>';
const BREAKOUT = '"><img src=x onerror=alert(2)>';
const QUOTE = "' onmouseover='alert(3)";
const hostile = (label: string) => `${label} ${SCRIPT} ${BREAKOUT} ${QUOTE}`;

const now = new Date('2026-06-01T09:00:00Z');
const expiresAt = new Date('2026-06-08T12:00:00Z');
const dashboardUrl = 'https://licensing.example/';
const tenantName = hostile('Tenant');
const license = { productName: hostile('Product'), keyHint: hostile('Hint'), expiresAt, currentActivations: 1, maxActivations: 3 };
const vendor = { name: tenantName, renewalUrl: `https://acme.example/renew?x=${BREAKOUT}`, supportEmail: `help@acme.example${BREAKOUT}` };

const templates: [string, () => Promise<{ html: string; text: string }>][] = [
  ['test email', () => renderTestEmail({ tenantName, to: hostile('to@x.test'), now, dashboardUrl })],
  ['invitation', () => renderInvitationEmail({ tenantName, to: hostile('to@x.test'), invitedBy: hostile('Inviter'), role: 'CompanyAdmin', expiresAt, acceptUrl: `${dashboardUrl}accept-invite#token=${BREAKOUT}` })],
  [
    'digest',
    () =>
      renderDigestEmail({ tenantName, weekOf: now, activeLicenses: 3, activations7d: 2, expiringIn7Days: 1, expiringIn30Days: 7, upcoming: [{ productName: license.productName, customerEmail: hostile('c@x.test'), expiresAt }], dashboardUrl }),
  ],
  ['expiry (admin)', () => renderExpiryAdminEmail({ tenantName, now, dashboardUrl, groups: [{ threshold: 7, total: 3, licenses: [license], moreUrl: `${dashboardUrl}licenses?q=${BREAKOUT}`, firstExpiresAt: expiresAt, lastExpiresAt: expiresAt }] })],
  // Twice: the second render comes from the cached template with the values put into its slots.
  ['expiry (customer)', () => renderExpiryCustomerEmail({ vendor, now, threshold: 1, license })],
  ['expiry (customer, cached template)', () => renderExpiryCustomerEmail({ vendor, now, threshold: 1, license })],
];

/** The start tags of an HTML document, each with its attribute names (quoted values skipped as a browser would). */
function tags(html: string): { name: string; attributes: string[] }[] {
  const attribute = /\s+([^\s=>/"']+)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>"']+))?/g;
  return [...html.matchAll(/<([a-zA-Z][\w-]*)((?:\s+[^\s=>/"']+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>"']+))?)*)\s*\/?>/g)].map((match) => ({
    name: match[1].toLowerCase(),
    attributes: [...match[2].matchAll(attribute)].map((found) => found[1].toLowerCase()),
  }));
}

describe('email escaping', () => {
  it('the tag scan sees injected markup (so the checks below can fail)', () => {
    const injected = tags(`<div title="a">x</div>${BREAKOUT}<p ${QUOTE.slice(2)}'>`);
    expect(injected.map((tag) => tag.name)).toEqual(['div', 'img', 'p']);
    expect(injected.flatMap((tag) => tag.attributes)).toEqual(['title', 'src', 'onerror', 'onmouseover']);
  });

  for (const [name, render] of templates) {
    it(`${name}: hostile names and fields come out as text`, async () => {
      const { html, text } = await render();
      const found = tags(html);
      expect(found.map((tag) => tag.name)).not.toContain('script');
      expect(found.map((tag) => tag.name)).not.toContain('img');
      // No tag got an event handler (escaped text and quoted attribute values may say "onerror=", a tag may not).
      expect(found.flatMap((tag) => tag.attributes).filter((attribute) => attribute.startsWith('on'))).toEqual([]);
      // …and are still shown, escaped.
      expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(html).toMatch(/&quot;&gt;&lt;img src=x onerror=alert\(2\)&gt;/);
      // The plain-text body keeps them verbatim: it is never read as HTML.
      expect(text).toContain(SCRIPT);
    });
  }
});
