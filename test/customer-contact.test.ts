import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueExpiryNotifications } from '../server/src/services/notifications/expiry.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';

// The vendor's renewal page and support email (Company settings) reach its customers' expiry emails.

const NOW = new Date('2026-11-21T08:00:00.000Z');
let t: TestApp;
let token: string;
let tenantId: string;
const UPDATE = 'mutation($renewalUrl: String, $supportEmail: String) { updateCompanySettings(input: { renewalUrl: $renewalUrl, supportEmail: $supportEmail }) { company { renewalUrl supportEmail } } }';

beforeAll(async () => {
  t = await startTestApp({ clock: new TestClock(NOW.getTime()) });
  ({ token } = await t.setupAdmin());
  tenantId = (await t.prisma.tenant.findFirstOrThrow()).id;
});
afterAll(() => t?.close());

describe('customer contact', () => {
  it('accepts only an http(s) renewal page and an email address; empty clears; changes are logged', async () => {
    const refused = await t.gql(UPDATE, { renewalUrl: 'javascript:alert(1)', supportEmail: 'not an email' }, { token });
    expect(refused.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { renewalUrl: expect.any(String), supportEmail: expect.any(String) } });
    const saved = await t.gql(UPDATE, { renewalUrl: ' https://acme.example/renew?plan=pro ', supportEmail: 'Support@Acme.example' }, { token });
    expect(saved.data.updateCompanySettings.company).toEqual({ renewalUrl: 'https://acme.example/renew?plan=pro', supportEmail: 'support@acme.example' });
    const entry = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { action: 'UpdateCompanySettings' }, orderBy: { seq: 'desc' } });
    expect(entry.details).toEqual({ before: { renewalUrl: null, supportEmail: null }, after: { renewalUrl: 'https://acme.example/renew?plan=pro', supportEmail: 'support@acme.example' } });
    expect((await t.gql(UPDATE, { renewalUrl: '' }, { token })).data.updateCompanySettings.company).toEqual({ renewalUrl: null, supportEmail: 'support@acme.example' });
    await t.gql(UPDATE, { renewalUrl: 'https://acme.example/renew?plan=pro' }, { token });
  });

  it("customers' expiry emails carry the renewal button and the support address; without them, neither", async () => {
    const product = await t.seedProduct(tenantId, 'Acme Studio');
    await t.seedLicense(tenantId, product.id, { expiresAt: new Date(NOW.getTime() + 7.5 * DAY), customerEmail: 'with@customer.test' });
    await queueExpiryNotifications({ db: t.deps.db, now: NOW, publicUrl: t.config.publicUrl, logger: t.deps.logger });
    const withContact = await t.prisma.emailOutbox.findFirstOrThrow({ where: { toAddress: 'with@customer.test' } });
    expect(withContact.html).toContain('href="https://acme.example/renew?plan=pro"');
    expect(withContact.html).toContain('Renew your license');
    expect(withContact.html).toContain('href="mailto:support@acme.example"');
    expect(withContact.text).toContain('Renew: https://acme.example/renew?plan=pro');
    expect(withContact.text).toContain('Questions? Write to support@acme.example.');

    await t.gql(UPDATE, { renewalUrl: '', supportEmail: '' }, { token });
    await t.seedLicense(tenantId, product.id, { expiresAt: new Date(NOW.getTime() + 7.6 * DAY), customerEmail: 'without@customer.test' });
    await queueExpiryNotifications({ db: t.deps.db, now: NOW, publicUrl: t.config.publicUrl, logger: t.deps.logger });
    const without = await t.prisma.emailOutbox.findFirstOrThrow({ where: { toAddress: 'without@customer.test' } });
    expect(without.html).not.toContain('Renew your license');
    expect(without.html).not.toContain('mailto:');
    expect(without.text).not.toContain('Questions?');
  });
});
