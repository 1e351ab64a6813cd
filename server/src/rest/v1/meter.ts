import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../../deps.js';
import { publicRoute } from '../../http/public-api.js';
import { MAX_QUANTITY, recordUsage } from '../../services/metering/meter.js';
import { EVENT_NAME_MAX_LENGTH, EVENT_NAME_PATTERN, METER_PERIODS } from '../../services/metering/periods.js';
import { licensingContext } from './context.js';
import { LicenseKey, Rejection, RejectionCode, commonErrors, json, jsonBody, noCredential, rateLimitHeaders } from './schemas.js';

export const MeterRequest = z
  .object({
    licenseKey: LicenseKey,
    event: z
      .string()
      .max(EVENT_NAME_MAX_LENGTH)
      .regex(EVENT_NAME_PATTERN, 'must be lower-case words of a-z, 0-9 and _, separated by dots, starting with a letter (e.g. api.calls)')
      .openapi({ description: `Event name: \`${EVENT_NAME_PATTERN.source}\`, at most ${EVENT_NAME_MAX_LENGTH} characters.`, example: 'api.calls' }),
    quantity: z.number().int().min(1).max(MAX_QUANTITY).openapi({ description: `Positive whole number, at most ${MAX_QUANTITY}.`, example: 1 }),
    timestamp: z.iso.datetime({ offset: true }).optional().openapi({ description: 'When the usage happened (ISO 8601); default now. At most 5 minutes ahead of the server clock and 30 days back. It decides the period the usage counts in.' }),
    idempotencyKey: z.string().min(1).max(255).optional().openapi({ description: 'Unique per license (e.g. a UUID per usage record). A repeat records nothing and returns the first answer (header `Idempotent-Replayed: true`). Rejections are not stored: a repeat is evaluated again.', example: '5f0c8a7e-2b1d-4c3e-9a6f-8d7e6c5b4a39' }),
  })
  .openapi('MeterRequest');

const Period = z.enum(METER_PERIODS).openapi('MeterPeriod', { description: 'Calendar period in UTC: the current day, month or year, or the whole lifetime.' });
const date = z.string().nullable().openapi({ format: 'date-time' });
const PeriodState = {
  event: z.string(),
  period: Period,
  periodStart: date.openapi({ description: 'Start of the period (inclusive); null for lifetime.' }),
  periodEnd: date.openapi({ description: 'End of the period (exclusive); null for lifetime.' }),
  limit: z.number().int().nullable().openapi({ description: 'The quota for this event, or null when it has none.' }),
  remaining: z.number().int().nullable().openapi({ description: 'limit − total; null without a quota.' }),
};

const MeterSuccess = z
  .object({
    isValid: z.literal(true),
    ...PeriodState,
    quantity: z.number().int(),
    occurredAt: z.string().openapi({ format: 'date-time' }),
    total: z.number().int().openapi({ description: 'Running total of the event in the period, including this record.' }),
  })
  .openapi('MeterSuccess');

const QuotaExceeded = z
  .object({
    isValid: z.literal(false),
    message: z.string(),
    errorCode: RejectionCode,
    ...PeriodState,
    total: z.number().int().openapi({ description: 'Total already recorded in the period (this request was not recorded).' }),
  })
  .openapi('MeterQuotaExceeded');

const route = createRoute({
  method: 'post',
  path: '/meter',
  operationId: 'recordUsage',
  security: noCredential,
  tags: ['Metering'],
  summary: 'Record usage of a metered event',
  description: 'Adds `quantity` to the license’s running total of `event` in the current period: the period of the event’s quota, or the calendar month (UTC) when it has none. Going over the quota answers HTTP 200 with `isValid: false`, errorCode QuotaExceeded, and records nothing (exactly reaching the limit is allowed). Also LicenseNotFound, LicenseRevoked, Suspended, LicenseExpired. Invalid event names, quantities or timestamps are 400 InvalidRequest.',
  request: jsonBody(MeterRequest),
  responses: {
    200: {
      ...json(z.union([MeterSuccess, QuotaExceeded, Rejection]), 'Recorded (with the running total), or a rejection.'),
      headers: { ...rateLimitHeaders, 'Idempotent-Replayed': { description: '`true` when this answer is the stored first answer to a repeated idempotencyKey (nothing was recorded again); absent otherwise.', schema: { type: 'string' as const, enum: ['true'] } } },
    },
    ...commonErrors,
  },
});

export const meter = (deps: AppDeps) =>
  publicRoute(route, async (call) => {
    const { body, replayed } = await recordUsage(licensingContext(deps), call.body);
    return { body, headers: replayed ? { 'Idempotent-Replayed': 'true' } : undefined };
  });
