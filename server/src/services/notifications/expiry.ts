import { createHash } from 'node:crypto';
import { THRESHOLDS, renderExpiryAdminEmail, renderExpiryCustomerEmail, type Threshold } from '../../jobs/email/expiry.js';
import type { NotificationContext } from './digest.js';
import { enqueueEmails, type OutgoingEmail } from './outbox.js';

const DAY = 86_400_000;

/**
 * The threshold whose window holds a license with `daysLeft` (fractional) days to go: T fires while
 * T − 1 ≤ daysLeft < T + 1, i.e. within one day either side of "T days before expiry". The daily run
 * normally meets it at T…T+1 days ("in T days"); after a missed day it still meets it at T−1…T.
 */
export function thresholdFor(daysLeft: number): Threshold | null {
  return THRESHOLDS.find((threshold) => daysLeft >= threshold - 1 && daysLeft < threshold + 1) ?? null;
}

export interface ExpiryReport {
  notices: number;
  adminEmails: number;
  customerEmails: number;
}

/**
 * Expiry notices (spec §6.2), computed from `now`. Each (license, threshold) fires once: the ExpiryNotice row
 * is the claim, inserted in the same transaction as the emails, so a rerun or a concurrent worker finds it
 * taken and sends nothing. A notice fired for an earlier expiry date (the license was renewed) is stale and
 * fires again for the new date. Perpetual (no expiresAt) and revoked licenses never qualify.
 */
export async function queueExpiryNotifications(ctx: NotificationContext): Promise<ExpiryReport> {
  const { now } = ctx;
  const report: ExpiryReport = { notices: 0, adminEmails: 0, customerEmails: 0 };
  const licenses = await ctx.db.prisma.license.findMany({
    where: { status: 'active', expiresAt: { gt: now, lt: new Date(now.getTime() + (THRESHOLDS[0] + 1) * DAY) } },
    select: {
      id: true,
      tenantId: true,
      keyHint: true,
      expiresAt: true,
      currentActivations: true,
      maxActivations: true,
      customerEmail: true,
      product: { select: { name: true } },
    },
    orderBy: [{ expiresAt: 'asc' }, { id: 'asc' }],
  });
  const due = new Map<string, { license: (typeof licenses)[number]; threshold: Threshold; expiresAt: Date }[]>();
  for (const license of licenses) {
    const expiresAt = license.expiresAt!;
    const threshold = thresholdFor((expiresAt.getTime() - now.getTime()) / DAY);
    if (threshold === null) continue;
    due.set(license.tenantId, [...(due.get(license.tenantId) ?? []), { license, threshold, expiresAt }]);
  }

  for (const [tenantId, candidates] of due) {
    await ctx.db.prisma.$transaction(async (tx) => {
      // Claim: new notices, plus stale ones (fired before this expiry date's window opened).
      const fresh = await tx.expiryNotice.createManyAndReturn({
        data: candidates.map(({ license, threshold }) => ({ licenseId: license.id, threshold, firedAt: now })),
        skipDuplicates: true,
        select: { licenseId: true },
      });
      const won = new Set(fresh.map((notice) => notice.licenseId));
      for (const { license, threshold, expiresAt } of candidates) {
        if (won.has(license.id)) continue;
        const windowOpened = new Date(expiresAt.getTime() - (threshold + 1) * DAY);
        const { count } = await tx.expiryNotice.updateMany({ where: { licenseId: license.id, threshold, firedAt: { lt: windowOpened } }, data: { firedAt: now } });
        if (count === 1) won.add(license.id);
      }
      const claimed = candidates.filter(({ license }) => won.has(license.id));
      if (!claimed.length) return;
      report.notices += claimed.length;

      const tenant = await tx.tenant.findUniqueOrThrow({
        where: { id: tenantId },
        select: { name: true, users: { where: { role: 'CompanyAdmin', deactivatedAt: null, expiryEmailEnabled: true }, select: { email: true }, orderBy: { email: 'asc' } } },
      });
      const emails: OutgoingEmail[] = [];
      if (tenant.users.length) {
        const groups = THRESHOLDS.slice()
          .reverse()
          .map((threshold) => ({
            threshold,
            licenses: claimed
              .filter((item) => item.threshold === threshold)
              .map(({ license, expiresAt }) => ({ productName: license.product.name, keyHint: license.keyHint, expiresAt, currentActivations: license.currentActivations, maxActivations: license.maxActivations })),
          }))
          .filter((group) => group.licenses.length);
        const email = await renderExpiryAdminEmail({ tenantName: tenant.name, now, dashboardUrl: `${ctx.publicUrl}/`, groups });
        // One email per tenant per day; the batch digest tells apart a second batch claimed later that day.
        const batch = createHash('sha256').update(claimed.map(({ license, threshold }) => `${license.id}:${threshold}`).sort().join(',')).digest('hex').slice(0, 12);
        const day = now.toISOString().slice(0, 10);
        for (const user of tenant.users) {
          emails.push({ tenantId, kind: 'expiry-admin', idempotencyKey: `expiry-admin:${tenantId}:${day}:${batch}:${user.email}`, to: user.email, ...email });
        }
        report.adminEmails += tenant.users.length;
      }
      for (const { license, threshold, expiresAt } of claimed) {
        if (!license.customerEmail) continue;
        const email = await renderExpiryCustomerEmail({
          tenantName: tenant.name,
          now,
          threshold,
          license: { productName: license.product.name, keyHint: license.keyHint, expiresAt },
        });
        const key = `expiry-customer:${tenantId}:${license.id}:${threshold}:${expiresAt.toISOString()}:${license.customerEmail.toLowerCase()}`;
        emails.push({ tenantId, kind: 'expiry-customer', idempotencyKey: key, to: license.customerEmail, ...email });
        report.customerEmails++;
      }
      await enqueueEmails(tx, emails, now);
    }, { timeout: 30_000 });
  }
  return report;
}
