import { AppError, type RejectionCode } from '../../domain/errors.js';
import type { Prisma } from '../../generated/prisma/client.js';
import type { LicensingContext } from '../context.js';
import { emitEvent } from '../webhooks/events.js';
import { findLicenseByKey } from '../licenses/license-record.js';
import { LICENSE_NOT_FOUND, checkEntitlement, rejected, type Rejection } from '../licenses/rules.js';
import { isUniqueViolation } from '../validation.js';
import { occurredWithin, periodBounds, type MeterPeriod } from './periods.js';

export const MAX_QUANTITY = 1_000_000;
/** How far a reported timestamp may lie from the server's clock. */
export const MAX_FUTURE_SKEW_MS = 5 * 60_000;
export const MAX_BACKDATE_MS = 30 * 86_400_000;
/** The period reported for an event without a quota: a typical billing cycle. */
export const DEFAULT_PERIOD: MeterPeriod = 'month';

// Meter calls of one license and event queue on an advisory lock; give a burst of them time to get through.
const METER_TRANSACTION = { maxWait: 20_000, timeout: 20_000 } as const;

export interface MeterInput {
  licenseKey: string;
  /** Already checked against EVENT_NAME_PATTERN by the transport. */
  event: string;
  quantity: number;
  /** When the usage happened (default: now). Within [now − 30 days, now + 5 minutes]. */
  timestamp?: string | Date;
  idempotencyKey?: string;
}

interface Totals {
  event: string;
  quantity: number;
  occurredAt: string;
  period: MeterPeriod;
  periodStart: string | null;
  periodEnd: string | null;
  total: number;
  limit: number | null;
  remaining: number | null;
}

/** The success body, always with the same key order (a replay from the stored JSONB is then byte-identical). */
function recordedBody(t: Totals) {
  return {
    isValid: true as const,
    event: t.event,
    quantity: t.quantity,
    occurredAt: t.occurredAt,
    period: t.period,
    periodStart: t.periodStart,
    periodEnd: t.periodEnd,
    total: t.total,
    limit: t.limit,
    remaining: t.remaining,
  };
}

type Refusal = { isValid: false; message: string; errorCode: RejectionCode };
/** QuotaExceeded also tells where the period stands (total before this call, limit, remaining). */
type QuotaRefusal = Refusal & Omit<Totals, 'quantity' | 'occurredAt'>;
export type MeterResult = ReturnType<typeof recordedBody> | Refusal | QuotaRefusal;

/**
 * Records usage. Under a transaction-level advisory lock per license and event, the period's total is
 * summed, checked against the license's quota for the event (at the limit is fine, over it answers
 * QuotaExceeded and records nothing) and the event stored. With an idempotencyKey, a repeat (even a
 * concurrent one) records nothing and returns the first answer; `replayed` tells the transport.
 * A rejection is not stored: repeating it re-evaluates.
 */
export async function recordUsage(ctx: LicensingContext, input: MeterInput): Promise<{ body: MeterResult; replayed: boolean }> {
  const occurredAt = input.timestamp === undefined ? ctx.now : new Date(input.timestamp);
  if (Number.isNaN(occurredAt.getTime())) throw timestampError('is not a valid ISO 8601 date-time');
  if (occurredAt.getTime() > ctx.now.getTime() + MAX_FUTURE_SKEW_MS) throw timestampError('is more than 5 minutes in the future');
  if (occurredAt.getTime() < ctx.now.getTime() - MAX_BACKDATE_MS) throw timestampError('is more than 30 days in the past');

  const license = await findLicenseByKey(ctx.db.sql, ctx.secrets, input.licenseKey, ctx.now);
  const refused = (rejection: Rejection) => ({ body: rejected(rejection), replayed: false });
  if (!license) return refused(LICENSE_NOT_FOUND);
  await ctx.chargeTenant(license.tenantId, license.id);
  const rejection = checkEntitlement(license, ctx.now, null);
  if (rejection) return refused(rejection);

  const replay = async (tx: Prisma.TransactionClient | typeof ctx.db.prisma) => {
    if (input.idempotencyKey === undefined) return null;
    const first = await tx.usageEvent.findUnique({
      where: { licenseId_idempotencyKey: { licenseId: license.id, idempotencyKey: input.idempotencyKey } },
      select: { response: true },
    });
    return first ? { body: recordedBody(first.response as unknown as Totals), replayed: true } : null;
  };

  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))', `meter:${license.id}:${input.event}`);
      const repeated = await replay(tx);
      if (repeated) return repeated;

      const quota = await tx.meterQuota.findUnique({ where: { licenseId_event: { licenseId: license.id, event: input.event } } });
      const period = quota?.period ?? DEFAULT_PERIOD;
      const bounds = periodBounds(period, occurredAt);
      const sum = await tx.usageEvent.aggregate({
        where: { licenseId: license.id, event: input.event, ...occurredWithin(bounds) },
        _sum: { quantity: true },
      });
      const before = sum._sum.quantity ?? 0;
      const totals: Totals = {
        event: input.event,
        quantity: input.quantity,
        occurredAt: occurredAt.toISOString(),
        period,
        periodStart: bounds.start?.toISOString() ?? null,
        periodEnd: bounds.end?.toISOString() ?? null,
        total: before + input.quantity,
        limit: quota?.limit ?? null,
        remaining: quota ? quota.limit - before - input.quantity : null,
      };
      if (quota && totals.remaining! < 0) {
        const body: QuotaRefusal = {
          isValid: false,
          message: `Recording ${input.quantity} "${input.event}" would exceed this license's ${period} quota of ${quota.limit} (${before} used).`,
          errorCode: 'QuotaExceeded',
          event: input.event,
          period,
          periodStart: totals.periodStart,
          periodEnd: totals.periodEnd,
          total: before,
          limit: quota.limit,
          remaining: Math.max(0, quota.limit - before),
        };
        // Refusals are throttled: at most one event per license and meter per hour.
        await emitEvent(tx, license.tenantId, 'meter.quota_reached', quotaData(license.id, totals, before, true), ctx.now, { throttleKey: `${license.id}:${input.event}` });
        return { body, replayed: false };
      }
      if (quota && before < quota.limit && totals.remaining! <= 0) {
        // The recording that uses up the quota (once per period).
        await emitEvent(tx, license.tenantId, 'meter.quota_reached', quotaData(license.id, totals, totals.total, false), ctx.now);
      }
      await tx.usageEvent.create({
        data: {
          tenantId: license.tenantId,
          licenseId: license.id,
          event: input.event,
          quantity: input.quantity,
          occurredAt,
          idempotencyKey: input.idempotencyKey,
          response: totals as unknown as Prisma.InputJsonValue,
          createdAt: ctx.now,
        },
      });
      return { body: recordedBody(totals), replayed: false };
    }, METER_TRANSACTION);
  } catch (error) {
    // The same idempotencyKey sent concurrently for another event: the first one won; replay it.
    if (isUniqueViolation(error)) {
      const repeated = await replay(ctx.db.prisma);
      if (repeated) return repeated;
    }
    throw error;
  }
}

function timestampError(problem: string) {
  return new AppError('InvalidRequest', `timestamp ${problem}: send when the usage happened, at most 30 days ago.`, { fields: { timestamp: problem } });
}

/** A quota in a webhook payload: the /api/v1/meter field names. */
const quotaData = (licenseId: string, totals: Totals, used: number, refused: boolean) => ({
  licenseId,
  event: totals.event,
  period: totals.period,
  periodStart: totals.periodStart,
  periodEnd: totals.periodEnd,
  total: used,
  limit: totals.limit,
  refused,
});
