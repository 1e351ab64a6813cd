import { z } from '@hono/zod-openapi';
import { canonicalLicenseKey, IMPORTED_KEY_MAX_LENGTH, IMPORTED_KEY_MIN_LENGTH, LICENSE_KEY_FORMAT, LICENSE_KEY_INPUT_MAX_LENGTH } from '../../crypto/license-key.js';
import { ERROR_STATUS, REJECTION_CODES } from '../../domain/errors.js';

/**
 * A license key as sent: a Keyforge key (case and white space ignored) or an imported one (crypto/license-key.ts
 * `canonicalLicenseKey`). Anything else is no key of any license: 400 InvalidRequest, field licenseKey. A well-formed
 * key no license has (an imported key's other case included) is the route's own "not found" answer.
 */
export const LicenseKey = z
  .string()
  .max(LICENSE_KEY_INPUT_MAX_LENGTH)
  .refine((key) => canonicalLicenseKey(key) !== null, { message: LICENSE_KEY_FORMAT })
  .openapi({
    description: `The plaintext license key: a Keyforge key \`<PREFIX>-XXXX-XXXX-XXXX-XXXX\` (case and white space ignored), or a key imported from another licensing service (${IMPORTED_KEY_MIN_LENGTH}–${IMPORTED_KEY_MAX_LENGTH} printable ASCII characters without white space, case-sensitive, white space around it ignored). Anything else is 400 \`InvalidRequest\`. Body only: never put it in a URL.`,
    example: 'ACME-7KQ2-M9XH-4TRB-WZ3P',
  });
export const Version = z.string().min(1).max(64).openapi({ description: 'Running application version (semantic version).', example: '2.4.1' });
export const ProductName = z.string().min(1).max(200).openapi({ description: 'A product name as the vendor named it in Keyforge.', example: 'Acme Studio' });
export const DeviceId = z.string().min(1).max(256).openapi({ description: 'SHA-256 hardware fingerprint of the machine.', example: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08' });

export const ErrorResponse = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(ERROR_STATUS) as [keyof typeof ERROR_STATUS, ...(keyof typeof ERROR_STATUS)[]]),
      message: z.string(),
      requestId: z.string(),
      fields: z.record(z.string(), z.string()).optional().openapi({ description: 'Per-field problems, for InvalidRequest.' }),
    }),
  })
  .openapi('Error');

export const RejectionCode = z.enum(REJECTION_CODES).openapi('RejectionCode', {
  description: 'Machine-readable reason of an HTTP 200 rejection (`isValid: false`).',
});

export const Rejection = z
  .object({ isValid: z.literal(false), message: z.string(), errorCode: RejectionCode })
  .openapi('Rejection');

const integerHeader = (description: string) => ({ description, schema: { type: 'integer' as const, minimum: 0 } });
const retryAfter = integerHeader('Seconds to wait before retrying.');
/** Sent on every /api/v1 answer (the per-IP limit, app.ts). */
const rateLimitHeaders = {
  'RateLimit-Limit': integerHeader('Requests allowed per window (IETF RateLimit header draft).'),
  'RateLimit-Remaining': integerHeader('Requests left in the current window (0 on a 429).'),
  'RateLimit-Reset': integerHeader('Seconds until the window resets.'),
};

const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { 'application/json': { schema } }, description, headers: rateLimitHeaders });

/** Error responses every public route can give. */
export const commonErrors = {
  400: json(ErrorResponse, 'Malformed JSON, wrong types, missing fields or a body over 16 KiB (`InvalidRequest`), or `NonceRequired` on activate.'),
  429: {
    ...json(ErrorResponse, 'Rate limit exceeded (`RateLimited`); honour the `Retry-After` header (seconds).'),
    headers: { 'Retry-After': retryAfter, ...rateLimitHeaders },
  },
  503: { ...json(ErrorResponse, 'The database is unreachable (`ServiceUnavailable`); retry with backoff.'), headers: { 'Retry-After': retryAfter, ...rateLimitHeaders } },
};

/** Routes whose only credential is in the JSON body (the license key): no security scheme applies. */
export const noCredential: Record<string, string[]>[] = [];

export const jsonBody = <T extends z.ZodType>(schema: T) => ({ body: { content: { 'application/json': { schema } }, required: true } });
export { json, rateLimitHeaders };
