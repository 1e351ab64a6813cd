import { countdown } from '../../lib/format';
import { licensePath } from '../licenses/paths';

/** The "Licenses Expiring Soon" widget lists at most 8 licenses (docs/console.md). */
export const EXPIRING_SOON_MAX_ROWS = 8;

export interface ExpiryStats {
  expiringIn7Days: number;
  expiringIn30Days: number;
  expiringLicenses: { id: string; productName: string; customerEmail: string | null; expiresAt: string; daysUntilExpiry: number }[];
}

export interface ExpiringSoonRow {
  id: string;
  productName: string;
  customerEmail: string | null;
  expiresAt: string;
  /** "in Nd" ("today" for 0), from the server's countdown. */
  countdown: string;
  /** Within 7 days (shown in red). */
  urgent: boolean;
  href: string;
}

export interface ExpiringSoonView {
  /** Red badge: licenses expiring within 7 days. */
  within7Days: number;
  /** Yellow badge: licenses expiring within 30 days (including the 7-day ones). */
  within30Days: number;
  rows: ExpiringSoonRow[];
  /** How many more expire within 30 days than the rows show. */
  more: number;
}

/**
 * The widget (docs/integrate/management-api.md "Dashboard stats: `GET /api/dashboard/stats`"): shown only when an active license expires within 30 days (null: hidden); two badges
 * (7-day red, 30-day yellow); up to 8 rows with product, customer email and an "in Nd" countdown, each linking to
 * the license's page. Which licenses are expiring, their order (soonest first) and their countdowns are the
 * server's (services/licenses/predicates.ts): the console only lays them out.
 */
export function expiringSoonView(stats: ExpiryStats): ExpiringSoonView | null {
  if (stats.expiringIn30Days <= 0 && stats.expiringLicenses.length === 0) return null;
  const rows = stats.expiringLicenses
    .slice(0, EXPIRING_SOON_MAX_ROWS)
    .map((license) => ({
      id: license.id,
      productName: license.productName,
      customerEmail: license.customerEmail,
      expiresAt: license.expiresAt,
      countdown: countdown(license.daysUntilExpiry),
      urgent: license.daysUntilExpiry <= 7,
      href: licensePath(license.id),
    }));
  const within30Days = Math.max(stats.expiringIn30Days, stats.expiringLicenses.length);
  return { within7Days: stats.expiringIn7Days, within30Days, rows, more: Math.max(0, within30Days - rows.length) };
}
