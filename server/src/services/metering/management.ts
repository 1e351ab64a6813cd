import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import type { MeterQuota } from '../../generated/prisma/client.js';
import { lockTenantAudit, recordAudit } from '../audit/audit-log.js';
import { auditActor, requireAdmin, requireMember } from '../auth/actor.js';
import type { ServiceContext } from '../context.js';
import { requireTenantLicense } from '../floating/management.js';
import { licenseEntity } from '../licenses/license-record.js';
import { quotaChangeBlockedReason } from '../licenses/rules.js';
import { parseInput } from '../validation.js';
import { EVENT_NAME_MAX_LENGTH, EVENT_NAME_PATTERN, METER_PERIODS, occurredWithin, periodBounds, type MeterPeriod } from './periods.js';

// Management calls (GraphQL, CLI), scoped by the caller's tenant: another tenant's license is NotFound.


export const EventName = z
  .string()
  .max(EVENT_NAME_MAX_LENGTH)
  .regex(EVENT_NAME_PATTERN, 'must be lower-case words of a-z, 0-9 and _, separated by dots, starting with a letter (e.g. api.calls)');

export const QuotaSchema = z.object({
  event: EventName,
  period: z.enum(METER_PERIODS),
  limit: z.number().int().min(0).max(2_147_483_647),
});

/** A license of the caller's tenant whose quotas may change (quotaChangeBlockedReason): else Conflict. */
async function requireQuotaChangeable(ctx: ServiceContext, tenantId: string, licenseId: string) {
  const license = await requireTenantLicense(ctx, tenantId, licenseId);
  const blocked = quotaChangeBlockedReason(license);
  if (blocked) throw new AppError('Conflict', blocked);
  return license;
}

/**
 * Sets (or replaces) the license's limit for one event per period. A limit of 0 blocks the event. Logged
 * (`SetMeterQuota`, with what it was before) unless it changes nothing.
 */
export async function setMeterQuota(ctx: ServiceContext, licenseId: string, input: z.input<typeof QuotaSchema>) {
  const { tenantId } = requireAdmin(ctx);
  const quota = parseInput(QuotaSchema, input);
  const license = await requireQuotaChangeable(ctx, tenantId, licenseId);
  const where = { licenseId_event: { licenseId: license.id, event: quota.event } };
  return ctx.db.prisma.$transaction(async (tx) => {
    // The activity-log lock first (the order of every audited license change): the same quota set twice at once
    // reads what the first stored, so it is written and logged once.
    await lockTenantAudit(tx, tenantId);
    const stored = await tx.meterQuota.findUnique({ where });
    if (stored && stored.period === quota.period && stored.limit === quota.limit) return stored;
    const saved = await tx.meterQuota.upsert({ where, create: { licenseId: license.id, ...quota }, update: { period: quota.period, limit: quota.limit } });
    const before = stored ? { period: stored.period, limit: stored.limit } : null;
    await recordAudit(tx, { ...quotaAudit(license, quota.event), action: 'SetMeterQuota', details: { event: quota.event, before, after: { period: quota.period, limit: quota.limit } } }, auditActor(ctx), ctx.now);
    return saved;
  });
}

/** Removes the quota of one event (usage is unlimited again), logged (`RemoveMeterQuota`). NotFound when there was none. */
export async function removeMeterQuota(ctx: ServiceContext, licenseId: string, event: string) {
  const { tenantId } = requireAdmin(ctx);
  const license = await requireQuotaChangeable(ctx, tenantId, licenseId);
  return ctx.db.prisma.$transaction(async (tx) => {
    await lockTenantAudit(tx, tenantId);
    const where = { licenseId_event: { licenseId: license.id, event } };
    const removed = await tx.meterQuota.findUnique({ where });
    if (!removed) throw new AppError('NotFound', `This license has no quota for "${event}".`);
    await tx.meterQuota.delete({ where });
    await recordAudit(tx, { ...quotaAudit(license, event), action: 'RemoveMeterQuota', details: { event, before: { period: removed.period, limit: removed.limit } } }, auditActor(ctx), ctx.now);
    return { removed: true, event };
  });
}

/** A quota's activity entry names its license, as every license change does. */
const quotaAudit = (license: Awaited<ReturnType<typeof requireTenantLicense>>, event: string) =>
  ({ tenantId: license.tenantId, entityType: 'License', entityId: license.id, entity: `${event} on ${licenseEntity(license, license.product.name)}` }) as const;

export interface UsageTotal {
  event: string;
  /** Sum of quantities in the period. */
  total: number;
  /** Number of usage records in the period. */
  count: number;
  /** The event's quota row (with its key, license and event), whatever its period. */
  quota: MeterQuota | null;
  /** limit − total when the quota's period is the one asked for, else null. */
  remaining: number | null;
}

/**
 * Usage of a license per event in the current calendar period (UTC) of the given kind. Events with a
 * quota but no usage yet are listed with total 0.
 */
export async function usageTotals(ctx: ServiceContext, licenseId: string, options: { event?: string; period: MeterPeriod }) {
  const tenantId = requireMember(ctx);
  const { event, period } = parseInput(z.object({ event: EventName.optional(), period: z.enum(METER_PERIODS) }), options);
  const license = await requireTenantLicense(ctx, tenantId, licenseId);
  const bounds = periodBounds(period, ctx.now);
  const [sums, quotas] = await Promise.all([
    ctx.db.prisma.usageEvent.groupBy({
      by: ['event'],
      where: { licenseId: license.id, ...(event ? { event } : {}), ...occurredWithin(bounds) },
      _sum: { quantity: true },
      _count: { _all: true },
    }),
    ctx.db.prisma.meterQuota.findMany({ where: { licenseId: license.id, ...(event ? { event } : {}) } }),
  ]);
  const events = [...new Set([...sums.map((s) => s.event), ...quotas.map((q) => q.event)])].sort();
  const totals: UsageTotal[] = events.map((name) => {
    const sum = sums.find((s) => s.event === name);
    const quota = quotas.find((q) => q.event === name);
    const total = sum?._sum.quantity ?? 0;
    return {
      event: name,
      total,
      count: sum?._count._all ?? 0,
      quota: quota ?? null,
      remaining: quota && quota.period === period ? Math.max(0, quota.limit - total) : null,
    };
  });
  return { period, periodStart: bounds.start, periodEnd: bounds.end, totals };
}
