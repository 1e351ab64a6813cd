import { AsyncLocalStorage } from 'node:async_hooks';
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * Structured logs. Requests are logged by path only (never query strings or bodies); the redaction list
 * is a second line of defence for any object that carries a credential by mistake.
 */
export const REDACTED_PATHS = [
  'licenseKey',
  'key',
  'nonce',
  'token',
  'sessionToken',
  'password',
  'secret',
  'authorization',
  '*.licenseKey',
  '*.key',
  '*.nonce',
  '*.token',
  '*.sessionToken',
  '*.password',
  '*.secret',
  '*.authorization',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers.cookie',
];

/** The request being served (http/middleware/logging.ts): every line logged while serving it carries its id. */
export const requestScope = new AsyncLocalStorage<{ requestId: string }>();

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      mixin: () => {
        const scope = requestScope.getStore();
        return scope ? { requestId: scope.requestId } : {};
      },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    destination,
  );
}
