import { renderDigestEmail, type DigestData } from '../../email/digest.js';
import type { NotificationContext, SystemContext } from '../context.js';
import { enqueueEmails } from './outbox.js';
import { startRun, type PeriodicJob, type RunSummary, type TenantRef } from './runs.js';
import { DAY_MS } from '../../domain/countdown.js';
import { expiringWhere, statusWhere } from '../licenses/predicates.js';

export const DIGEST_TABLE_ROWS = 5;

/** The ISO week of `now` (UTC): its Monday and its label, e.g. 2026-W23. */
export function isoWeek(now: Date): { monday: Date; label: string } {
  const day = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  const monday = new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * DAY_MS);
  const thursday = new Date(monday.getTime() + 3 * DAY_MS);
  const yearStart = Date.UTC(thursday.getUTCFullYear(), 0, 1);
  const week = Math.floor((thursday.getTime() - yearStart) / (7 * DAY_MS)) + 1;
  return { monday, label: `${thursday.getUTCFullYear()}-W${String(week).padStart(2, '0')}` };
}

/** A tenant's digest figures at `now` (docs/operate/jobs-and-email.md). */
export async function digestFigures(ctx: SystemContext, tenantId: string) {
  const { now } = ctx;
  const prisma = ctx.db.prisma;
  const within = (days: number) => ({ tenantId, ...expiringWhere(now, { to: days }) });
  const [activeLicenses, activations7d, expiringIn7Days, expiringIn30Days, upcoming] = await Promise.all([
    prisma.license.count({ where: { tenantId, ...statusWhere('active', now) } }),
    prisma.activation.count({ where: { tenantId, createdAt: { gt: new Date(now.getTime() - 7 * DAY_MS), lte: now } } }),
    prisma.license.count({ where: within(7) }),
    prisma.license.count({ where: within(30) }),
    prisma.license.findMany({
      where: within(30),
      orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }],
      take: DIGEST_TABLE_ROWS,
      select: { expiresAt: true, customerEmail: true, product: { select: { name: true } } },
    }),
  ]);
  return {
    activeLicenses,
    activations7d,
    expiringIn7Days,
    expiringIn30Days,
    upcoming: upcoming.map((license) => ({ productName: license.product.name, customerEmail: license.customerEmail, expiresAt: license.expiresAt! })),
  };
}

export interface DigestReport {
  week: string;
  tenants: number;
  skipped: number;
  emails: number;
}

export const digestRun: PeriodicJob<DigestReport> = {
  name: 'weekly-digest',
  period: (now) => isoWeek(now).label,
  runTenant: digestForTenant,
};

export const emptyDigestReport = (now: Date): DigestReport => ({ week: isoWeek(now).label, tenants: 0, skipped: 0, emails: 0 });

/**
 * The weekly digest: per tenant, one email to each active CompanyAdmin with digestEmailEnabled, keyed by
 * tenant + ISO week + recipient, so a rerun in the same week (or a second worker) adds nothing. A tenant
 * with no active license and no activation in the past 7 days gets none. Tenants are processed one by one
 * and recorded (runs.ts): one tenant's failure is retried and never stops the others.
 */
export async function queueWeeklyDigests(ctx: NotificationContext): Promise<DigestReport & { run: RunSummary }> {
  const report = emptyDigestReport(ctx.now);
  const run = await startRun(ctx, digestRun, report);
  return { ...report, run };
}

async function digestForTenant(ctx: NotificationContext, tenant: TenantRef, report: DigestReport) {
  const week = isoWeek(ctx.now);
  const users = await ctx.db.prisma.user.findMany({
    where: { tenantId: tenant.id, role: 'CompanyAdmin', deactivatedAt: null, digestEmailEnabled: true },
    select: { email: true },
    orderBy: { email: 'asc' },
  });
  if (!users.length) return;
  report.tenants++;
  const figures = await digestFigures(ctx, tenant.id);
  if (figures.activeLicenses === 0 && figures.activations7d === 0) {
    report.skipped++;
    return;
  }
  const data: DigestData = { tenantName: tenant.name, weekOf: week.monday, dashboardUrl: `${ctx.publicUrl}/`, ...figures };
  const email = await renderDigestEmail(data);
  report.emails += await enqueueEmails(
    ctx.db.prisma,
    users.map((user) => ({
      tenantId: tenant.id,
      kind: 'weekly-digest' as const,
      idempotencyKey: `weekly-digest:${tenant.id}:${week.label}:${user.email}`,
      to: user.email,
      ...email,
    })),
    ctx.now,
  );
}
