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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    destination,
  );
}
