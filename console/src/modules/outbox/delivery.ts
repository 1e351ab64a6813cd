import { useQuery } from 'urql';
import { EmailDeliveryModeQuery } from './graphql/documents';

export type EmailDeliveryMode = 'POSTMARK' | 'DEVELOPMENT';

/** Whether emails reach an inbox (POSTMARK) or are only kept in the outbox (DEVELOPMENT); undefined until known. */
export function useEmailDeliveryMode(): EmailDeliveryMode | undefined {
  const [result] = useQuery({ query: EmailDeliveryModeQuery });
  return result.data?.emailDeliveryMode;
}

/**
 * The toast after the console writes an email (an invitation, a reset link): "sent" only when a mail provider
 * delivers it; without one, where the email is kept and how to pass its link on.
 */
export function emailedNotice(mode: EmailDeliveryMode | undefined, what: 'Invitation' | 'Reset link', to: string): string {
  if (mode === 'DEVELOPMENT') {
    return `${what} for ${to} kept in the outbox, not emailed: no mail provider is configured. Open it on the Emails page (Preview) and pass the link on.`;
  }
  return what === 'Invitation' ? `Invitation sent to ${to}.` : `A reset link was emailed to ${to}.`;
}
