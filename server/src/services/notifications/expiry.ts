import { createHash } from 'node:crypto';
import { Prisma } from '../../generated/prisma/client.js';
import { renderExpiryAdminEmail, renderExpiryCustomerEmail, type Vendor } from '../../email/expiry.js';
import { THRESHOLDS, thresholdFor, type Threshold } from '../../domain/notification-thresholds.js';
import type { NotificationContext } from '../context.js';
import { enqueueEmails, type OutgoingEmail } from './outbox.js';
import { emitEvents } from '../webhooks/events.js';
import { dayPeriod, startRun, type PeriodicJob, type RunSummary, type TenantRef } from './runs.js';
import { DAY_MS, daysUntil, startOfUtcDay } from '../../domain/countdown.js';
import { expiringSql, expiringWhere, statusWhere } from '../licenses/predicates.js';

export { thresholdFor };

export interface ExpiryReport {
  notices: number;
  adminEmails: number;
  customerEmails: number;
}

/** Licenses read, claimed and rendered per step: bounds memory whatever a tenant holds. */
export const EXPIRY_BATCH = 100;
/** Rows per threshold in the admin email; the rest are counted and linked (the console's license list). */
export const ADMIN_ROWS_PER_THRESHOLD = 50;

export const expiryRun: PeriodicJob<ExpiryReport> = { name: 'expiry-notifications', period: dayPeriod, runTenant: expiryForTenant };

export const emptyExpiryReport = (): ExpiryReport => ({ notices: 0, adminEmails: 0, customerEmails: 0 });

/**
 * Expiry notices (docs/operate/jobs-and-email.md), computed from `now`, tenant by tenant (runs.ts records each one; a failing
 * tenant is logged and retried, the others go on). Each (license, threshold) fires once: the ExpiryNotice row
 * is the claim, inserted in the same short transaction as that license's customer email, so a rerun or a
 * concurrent worker finds it taken and sends nothing. A notice fired for an earlier expiry date (the license
 * was renewed) is stale and fires again for the new date. Perpetual and revoked licenses never qualify.
 * Licenses are streamed in keyset pages of EXPIRY_BATCH, rendered before the transaction that claims them.
 * The admin email (one per tenant and day) is built last from the notices fired that day, so a run resumed
 * after a crash still sends it, with every license of the day.
 */
export async function queueExpiryNotifications(ctx: NotificationContext): Promise<ExpiryReport & { run: RunSummary }> {
  const report = emptyExpiryReport();
  const run = await startRun(ctx, expiryRun, report);
  return { ...report, run };
}

type Candidate = {
  id: string;
  keyHint: string;
  expiresAt: Date | null;
  currentActivations: number;
  maxActivations: number;
  customerEmail: string | null;
  product: { name: string };
};

async function expiryForTenant(ctx: NotificationContext, tenant: TenantRef, report: ExpiryReport) {
  const { now } = ctx;
  const prisma = ctx.db.prisma;
  // The customer emails name the vendor's renewal address and support email when it has set them.
  const vendor: Vendor = { name: tenant.name, ...(await prisma.tenant.findUniqueOrThrow({ where: { id: tenant.id }, select: { renewalUrl: true, supportEmail: true } })) };
  // Most urgent first. Each threshold's two days (countdown T and T − 1) do not overlap the others'.
  for (const threshold of THRESHOLDS.slice().reverse()) {
    const window = expiringWhere(now, { from: threshold - 1, to: threshold });
    for (let after: { expiresAt: Date; id: string } | null = null; ; ) {
      const page: Candidate[] = await prisma.license.findMany({
        where: {
          tenantId: tenant.id,
          AND: [
            window,
            ...(after ? [{ OR: [{ expiresAt: { gt: after.expiresAt } }, { expiresAt: after.expiresAt, id: { gt: after.id } }] }] : []),
          ],
        },
        select: { id: true, keyHint: true, expiresAt: true, currentActivations: true, maxActivations: true, customerEmail: true, product: { select: { name: true } } },
        orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }],
        take: EXPIRY_BATCH,
      });
      if (!page.length) break;
      await claimBatch(ctx, tenant, vendor, threshold, page.filter((license) => thresholdFor(daysUntil(license.expiresAt!, now)) === threshold), report);
      if (page.length < EXPIRY_BATCH) break;
      const last = page[page.length - 1];
      after = { expiresAt: last.expiresAt!, id: last.id };
    }
  }
  await emitExpired(ctx, tenant);
  await queueAdminEmail(ctx, tenant, report);
}

/** How far back the daily run looks for licenses that expired (a missed day is caught up; a rerun adds nothing). */
const EXPIRED_LOOKBACK_MS = 2 * DAY_MS;

type ExpiredRow = { id: string; keyHint: string; expiresAt: Date | null; customerEmail: string | null; productId: string; product: { name: string } };

/** license.expired for each license of the tenant that expired since the lookback, once per license and expiry date. */
async function emitExpired(ctx: NotificationContext, tenant: TenantRef) {
  const { now } = ctx;
  for (let after: { expiresAt: Date; id: string } | null = null; ; ) {
    const page: ExpiredRow[] = await ctx.db.prisma.license.findMany({
      where: {
        tenantId: tenant.id,
        AND: [
          statusWhere('expired', now),
          { expiresAt: { gt: new Date(now.getTime() - EXPIRED_LOOKBACK_MS) } },
          ...(after ? [{ OR: [{ expiresAt: { gt: after.expiresAt } }, { expiresAt: after.expiresAt, id: { gt: after.id } }] }] : []),
        ],
      },
      select: { id: true, keyHint: true, expiresAt: true, customerEmail: true, productId: true, product: { select: { name: true } } },
      orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }],
      take: EXPIRY_BATCH,
    });
    if (!page.length) return;
    const events = page.map((license) => ({
      dedupeKey: `${license.id}:${license.expiresAt!.toISOString()}`,
      data: { licenseId: license.id, productId: license.productId, keyHint: license.keyHint, productName: license.product.name, expiresAt: license.expiresAt!.toISOString(), customerEmail: license.customerEmail },
    }));
    await ctx.db.prisma.$transaction((tx) => emitEvents(tx, tenant.id, 'license.expired', events, now));
    if (page.length < EXPIRY_BATCH) return;
    const last = page[page.length - 1];
    after = { expiresAt: last.expiresAt!, id: last.id };
  }
}

/** When a threshold's window opens for an expiry date (the day its countdown reads T): a notice fired before it belongs to an earlier date. */
const windowOpened = (expiresAt: Date, threshold: Threshold) => new Date(startOfUtcDay(expiresAt).getTime() - threshold * DAY_MS);

async function claimBatch(ctx: NotificationContext, tenant: TenantRef, vendor: Vendor, threshold: Threshold, licenses: Candidate[], report: ExpiryReport) {
  const { now } = ctx;
  const prisma = ctx.db.prisma;
  const existing = await prisma.expiryNotice.findMany({ where: { threshold, licenseId: { in: licenses.map((license) => license.id) } }, select: { licenseId: true, firedAt: true } });
  const fired = new Map(existing.map((notice) => [notice.licenseId, notice.firedAt]));
  const due = licenses.filter((license) => {
    const firedAt = fired.get(license.id);
    return !firedAt || firedAt < windowOpened(license.expiresAt!, threshold);
  });
  if (!due.length) return;
  // Rendered before the transaction, which then only claims and writes.
  const emails = new Map<string, OutgoingEmail>();
  for (const license of due) {
    if (!license.customerEmail) continue;
    const expiresAt = license.expiresAt!;
    const email = await renderExpiryCustomerEmail({ vendor, now, threshold, license: { productName: license.product.name, keyHint: license.keyHint, expiresAt } });
    const key = `expiry-customer:${tenant.id}:${license.id}:${threshold}:${expiresAt.toISOString()}:${license.customerEmail.toLowerCase()}`;
    emails.set(license.id, { tenantId: tenant.id, kind: 'expiry-customer', idempotencyKey: key, to: license.customerEmail, ...email });
  }
  const won = await prisma.$transaction(async (tx) => {
    const fresh = await tx.expiryNotice.createManyAndReturn({
      data: due.map((license) => ({ licenseId: license.id, threshold, firedAt: now })),
      skipDuplicates: true,
      select: { licenseId: true },
    });
    const claimed = new Set(fresh.map((notice) => notice.licenseId));
    const stale = due.filter((license) => !claimed.has(license.id) && fired.has(license.id));
    if (stale.length) {
      const refired = await tx.$queryRaw<{ license_id: string }[]>`
        UPDATE expiry_notices n SET fired_at = ${now}
          FROM unnest(${stale.map((license) => license.id)}::uuid[], ${stale.map((license) => windowOpened(license.expiresAt!, threshold).toISOString())}::timestamptz[]) AS c(id, opened)
         WHERE n.license_id = c.id AND n.threshold = ${threshold} AND n.fired_at < c.opened
        RETURNING n.license_id`;
      for (const row of refired) claimed.add(row.license_id);
    }
    await enqueueEmails(tx, [...claimed].flatMap((id) => emails.get(id) ?? []), now);
    // license.expiring, one per notice (the email thresholds), in the same transaction; keyed like the notice.
    const expiring = due.filter((license) => claimed.has(license.id)).map((license) => ({
      dedupeKey: `${license.id}:${threshold}:${license.expiresAt!.toISOString()}`,
      data: { licenseId: license.id, keyHint: license.keyHint, productName: license.product.name, expiresAt: license.expiresAt!.toISOString(), daysRemaining: daysUntil(license.expiresAt!, now), customerEmail: license.customerEmail },
    }));
    await emitEvents(tx, tenant.id, 'license.expiring', expiring, now);
    return claimed;
  });
  report.notices += won.size;
  report.customerEmails += [...won].filter((id) => emails.has(id)).length;
}

type AdminRow = { threshold: number; product_name: string; key_hint: string; expires_at: Date; current_activations: number; max_activations: number };

/**
 * The tenant's admin email of the day: every license whose notice fired today, ADMIN_ROWS_PER_THRESHOLD rows
 * per threshold (most urgent first) and a count of the rest. Its key holds a digest of that set, so a rerun
 * that claims nothing new adds nothing, and one that does claim more sends the day's list again.
 */
async function queueAdminEmail(ctx: NotificationContext, tenant: TenantRef, report: ExpiryReport) {
  const { now } = ctx;
  const prisma = ctx.db.prisma;
  const admins = await prisma.user.findMany({
    where: { tenantId: tenant.id, role: 'CompanyAdmin', deactivatedAt: null, expiryEmailEnabled: true },
    select: { email: true },
    orderBy: { email: 'asc' },
  });
  if (!admins.length) return;
  const dayStart = new Date(`${dayPeriod(now)}T00:00:00.000Z`);
  const dayEnd = new Date(dayStart.getTime() + DAY_MS);
  // From the tenant's licenses expiring within reach of any threshold today (an index range: the predicates
  // module's "expiring" as of the day's start, a day of slack past the largest threshold), to their notices.
  const today = Prisma.sql`FROM licenses l JOIN expiry_notices n ON n.license_id = l.id JOIN products p ON p.id = l.product_id
    WHERE l.tenant_id = ${tenant.id}::uuid AND ${expiringSql(dayStart, { to: THRESHOLDS[0] + 1 })}
      AND n.fired_at >= ${dayStart} AND n.fired_at < ${dayEnd}`;
  const counts = await prisma.$queryRaw<{ threshold: number; total: number; digest: string; first_expires_at: Date; last_expires_at: Date }[]>`
    SELECT n.threshold, count(*)::int AS total, md5(string_agg(n.license_id::text, ',' ORDER BY n.license_id)) AS digest,
           min(l.expires_at) AS first_expires_at, max(l.expires_at) AS last_expires_at ${today} GROUP BY n.threshold`;
  if (!counts.length) return;
  const rows = await prisma.$queryRaw<AdminRow[]>`
    SELECT threshold, product_name, key_hint, expires_at, current_activations, max_activations FROM (
      SELECT n.threshold, p.name AS product_name, l.key_hint, l.expires_at, l.current_activations, l.max_activations, l.id,
             row_number() OVER (PARTITION BY n.threshold ORDER BY l.expires_at, l.id) AS rank
        ${today}
    ) ranked WHERE rank <= ${ADMIN_ROWS_PER_THRESHOLD} ORDER BY threshold, expires_at, id`;
  const groups = THRESHOLDS.slice()
    .reverse()
    .flatMap((threshold) => {
      const count = counts.find((row) => row.threshold === threshold);
      if (!count) return [];
      const licenses = rows
        .filter((row) => row.threshold === threshold)
        .map((row) => ({ productName: row.product_name, keyHint: row.key_hint, expiresAt: row.expires_at, currentActivations: row.current_activations, maxActivations: row.max_activations }));
      return [{ threshold, total: count.total, licenses, moreUrl: `${ctx.publicUrl}/licenses?status=active&expiring=${threshold}`, firstExpiresAt: count.first_expires_at, lastExpiresAt: count.last_expires_at }];
    });
  const email = await renderExpiryAdminEmail({ tenantName: tenant.name, now, dashboardUrl: `${ctx.publicUrl}/`, groups });
  // One email per tenant per day; the digest of the day's set tells apart a later run that claimed more.
  const batch = createHash('sha256').update(counts.map((row) => `${row.threshold}:${row.total}:${row.digest}`).sort().join(',')).digest('hex').slice(0, 12);
  report.adminEmails += await enqueueEmails(
    prisma,
    admins.map((admin) => ({ tenantId: tenant.id, kind: 'expiry-admin' as const, idempotencyKey: `expiry-admin:${tenant.id}:${dayPeriod(now)}:${batch}:${admin.email}`, to: admin.email, ...email })),
    now,
  );
}
