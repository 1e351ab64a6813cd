import { ServerClient } from 'postmark';
import type { Logger } from '../../logger.js';
import type { MailTransport, OutboxMessage, SendOutcome } from '../../services/notifications/delivery.js';

export interface MailConfig {
  postmarkServerToken?: string;
  postmarkApiUrl: string;
  mailFrom: string;
}

/**
 * Postmark ErrorCodes that no retry can fix, because the message itself is at fault: 300 invalid email
 * request (bad address), 406 inactive recipient (bounced or unsubscribed), 402/403/409 malformed JSON,
 * 411 forbidden attachment. Anything else (5xx, 429, a bad token, an unconfirmed sender, an account on
 * hold) may be fixed by time or by the operator, so it is retried with backoff.
 */
const PERMANENT_CODES = new Set([300, 402, 403, 406, 409, 411]);
/** Metadata key carrying the outbox id, searchable later (`metadata_outbox_id=`). */
const OUTBOX_ID = 'outbox_id';

type PostmarkResult = { ErrorCode: number; Message: string; MessageID?: string };

function outcome(result: PostmarkResult): SendOutcome {
  if (result.ErrorCode === 0 && result.MessageID) return { ok: true, messageId: result.MessageID };
  return { ok: false, permanent: PERMANENT_CODES.has(result.ErrorCode), error: `Postmark ${result.ErrorCode}: ${result.Message}` };
}

function failure(error: unknown): SendOutcome {
  const { code, statusCode, message } = error as { code?: number; statusCode?: number; message?: string };
  const permanent = statusCode === 422 && code !== undefined && PERMANENT_CODES.has(code);
  return { ok: false, permanent, error: `Postmark${statusCode ? ` HTTP ${statusCode}` : ''}${code ? ` ${code}` : ''}: ${message ?? String(error)}` };
}

/** Postmark: one message via /email, several via /email/batch (per-message ErrorCode in a 200 answer). */
export function postmarkTransport(config: Required<MailConfig>): MailTransport {
  const url = new URL(config.postmarkApiUrl);
  const client = new ServerClient(config.postmarkServerToken, { useHttps: url.protocol === 'https:', requestHost: url.host, timeout: 30 });
  const toMessage = (message: OutboxMessage) => ({
    From: config.mailFrom,
    To: message.to,
    Subject: message.subject,
    HtmlBody: message.html,
    TextBody: message.text,
    Tag: message.kind,
    MessageStream: 'outbound',
    TrackOpens: false,
    Metadata: { [OUTBOX_ID]: message.id },
  });
  return {
    name: 'postmark',
    async send(messages) {
      if (messages.length === 1) {
        try {
          return [outcome((await client.sendEmail(toMessage(messages[0]))) as PostmarkResult)];
        } catch (error) {
          return [failure(error)];
        }
      }
      try {
        const results = (await client.sendEmailBatch(messages.map(toMessage))) as PostmarkResult[];
        return messages.map((_message, index) => (results[index] ? outcome(results[index]) : { ok: false, permanent: false, error: 'Postmark: no result for this message' }));
      } catch (error) {
        return messages.map(() => failure(error));
      }
    },
    async findDelivered(outboxId) {
      const found = await client.getOutboundMessages({ count: 1, offset: 0, [`metadata_${OUTBOX_ID}`]: outboxId });
      return found.Messages[0]?.MessageID ?? null;
    },
  };
}

/**
 * Without POSTMARK_SERVER_TOKEN: nothing leaves the machine. Emails stay readable in the outbox
 * (`pnpm cli outbox:list --body`), marked sent with the provider id "development".
 */
export function developmentTransport(logger: Logger): MailTransport {
  return {
    name: 'development',
    async send(messages) {
      for (const message of messages) logger.info({ outboxId: message.id, kind: message.kind, subject: message.subject }, 'email kept in the development outbox (no POSTMARK_SERVER_TOKEN)');
      return messages.map(() => ({ ok: true, messageId: 'development' }));
    },
    async findDelivered() {
      return null;
    },
  };
}

export function createTransport(config: MailConfig, logger: Logger): MailTransport {
  return config.postmarkServerToken
    ? postmarkTransport({ ...config, postmarkServerToken: config.postmarkServerToken })
    : developmentTransport(logger);
}
