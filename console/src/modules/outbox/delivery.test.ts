import { describe, expect, it } from 'vitest';
import { emailedNotice } from './delivery';

describe('emailedNotice', () => {
  it('says "sent" only when a mail provider delivers', () => {
    expect(emailedNotice('POSTMARK', 'Invitation', 'bob@acme.test')).toBe('Invitation sent to bob@acme.test.');
    expect(emailedNotice('POSTMARK', 'Reset link', 'bob@acme.test')).toBe('A reset link was emailed to bob@acme.test.');
  });

  it('without one, where the email is kept and how to pass the link on', () => {
    for (const what of ['Invitation', 'Reset link'] as const) {
      const notice = emailedNotice('DEVELOPMENT', what, 'bob@acme.test');
      expect(notice).toBe(`${what} for bob@acme.test kept in the outbox, not emailed: no mail provider is configured. Open it on the Emails page (Preview) and pass the link on.`);
      expect(notice).not.toMatch(/sent|was emailed/);
    }
  });
});
