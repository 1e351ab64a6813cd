import { describe, expect, it } from 'vitest';
import { emailStatusView } from './emailStatus';

const now = new Date('2026-06-01T12:00:00Z');
const base = { attempts: 1, lastError: null, sentAt: '2026-06-01T11:58:00Z', nextAttemptAt: '2026-06-01T12:01:00Z' };

describe('email status in the console', () => {
  it('an email "sent" by the development outbox reads as kept, not sent', () => {
    expect(emailStatusView({ ...base, status: 'SENT', providerMessageId: 'development' }, now)).toMatchObject({ label: 'kept', color: 'gray', hint: expect.stringContaining('nothing was delivered') });
  });

  it('a delivered email is sent, with its time beside the badge rather than inside it', () => {
    const view = emailStatusView({ ...base, status: 'SENT', providerMessageId: 'b7bc2f4a-e38e' }, now);
    expect(view).toMatchObject({ label: 'sent', color: 'teal' });
    expect(view.when).toMatch(/2 minutes ago/);
  });

  it('retrying and failed say why', () => {
    expect(emailStatusView({ ...base, status: 'PENDING', providerMessageId: null, attempts: 2, lastError: 'Postmark 500' }, now)).toMatchObject({ label: 'retrying', hint: 'Postmark 500' });
    expect(emailStatusView({ ...base, status: 'FAILED', providerMessageId: null, attempts: 10, lastError: null }, now)).toMatchObject({ label: 'failed', hint: 'Gave up after 10 attempts.' });
    expect(emailStatusView({ ...base, status: 'PENDING', providerMessageId: null, attempts: 0 }, now)).toMatchObject({ label: 'pending' });
  });
});
