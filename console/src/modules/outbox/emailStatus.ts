import type { EnumOf } from '../../graphql';
import { relativeTime } from '../../lib/format';

type Status = EnumOf<'EmailStatus'>;

export interface EmailStatusView {
  label: string;
  color: string;
  /** Shown beside the badge (kept out of it so the badge never truncates). */
  when: string | null;
  /** Explains the status on hover. */
  hint: string | null;
}

/**
 * How an outbox row reads in the console. "sent" by the development transport means kept, not delivered:
 * no mail provider is configured, so saying "sent" would be untrue.
 */
export function emailStatusView(email: { status: Status; providerMessageId: string | null; attempts: number; lastError: string | null; sentAt: string | null; nextAttemptAt: string }, now = new Date()): EmailStatusView {
  if (email.status === 'SENT' && email.providerMessageId === 'development') {
    return { label: 'kept', color: 'gray', when: relativeTime(email.sentAt, now), hint: 'Development outbox: no mail provider is configured (POSTMARK_SERVER_TOKEN), so nothing was delivered. Read it with Preview.' };
  }
  if (email.status === 'SENT') return { label: 'sent', color: 'teal', when: relativeTime(email.sentAt, now), hint: null };
  if (email.status === 'FAILED') return { label: 'failed', color: 'red', when: null, hint: email.lastError ?? `Gave up after ${email.attempts} attempts.` };
  if (email.attempts > 0) return { label: 'retrying', color: 'yellow', when: relativeTime(email.nextAttemptAt, now), hint: email.lastError ?? `${email.attempts} attempt(s) so far.` };
  return { label: 'pending', color: 'yellow', when: null, hint: 'Waiting for the next delivery run (every minute).' };
}
