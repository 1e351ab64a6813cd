import { Prisma } from '../../generated/prisma/client.js';
import { DAY_MS, daysUntil, startOfUtcDay } from '../../domain/countdown.js';

// The one license-state rule, in the three forms it is evaluated in: in code, as a Prisma `where`, and as SQL
// over the `licenses` table (unqualified columns). test/license-predicates.test.ts checks that all three select
// the same licenses.
//
// The license states (docs/integrate/management-api.md "Licenses"): revoked wins; then suspended (a vendor's reversible pause, whatever the expiry date); otherwise a
// license is expired once expiresAt has passed (expiresAt ≤ now, so it is expired at its expiry instant);
// otherwise active (no expiresAt: perpetual). "Expiring" is an active license that has not expired yet, with its
// countdown (domain/countdown.ts: UTC calendar days to the expiry date) in a window: a suspended license is never
// expiring, so it gets no expiry emails while suspended.

export type LicenseStatusName = 'active' | 'expired' | 'suspended' | 'revoked';
/** The stored status column (`expired` is derived from expiresAt). */
export type StoredLicenseStatus = 'active' | 'suspended' | 'revoked';
export const LICENSE_STATUSES = ['active', 'expired', 'suspended', 'revoked'] as const satisfies readonly LicenseStatusName[];

type StateFields = { status: StoredLicenseStatus; expiresAt: Date | null };

/** A countdown window in UTC calendar days, both ends included: `to` absent means any later expiry. */
export interface ExpiryWindow {
  from?: number;
  to?: number;
}

export function isExpired(license: { expiresAt: Date | null }, now: Date): boolean {
  return license.expiresAt !== null && license.expiresAt.getTime() <= now.getTime();
}

export const licenseStatus = (license: StateFields, now: Date): LicenseStatusName =>
  license.status !== 'active' ? license.status : isExpired(license, now) ? 'expired' : 'active';

export function statusWhere(status: LicenseStatusName, now: Date): Prisma.LicenseWhereInput {
  if (status === 'revoked') return { status: 'revoked' };
  if (status === 'suspended') return { status: 'suspended' };
  if (status === 'expired') return { status: 'active', expiresAt: { lte: now } };
  return { status: 'active', OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] };
}

export function statusSql(status: LicenseStatusName, now: Date): Prisma.Sql {
  if (status === 'revoked') return Prisma.sql`status = 'revoked'`;
  if (status === 'suspended') return Prisma.sql`status = 'suspended'`;
  if (status === 'expired') return Prisma.sql`(status = 'active' AND expires_at <= ${now.toISOString()}::timestamptz)`;
  return Prisma.sql`(status = 'active' AND (expires_at IS NULL OR expires_at > ${now.toISOString()}::timestamptz))`;
}

/**
 * The same licenses as `statusSql`, as disjoint conditions each of which one range of the (tenant_id, status,
 * expires_at, …) index answers: "active" is two ranges (a future expiry, no expiry). A capped count reads them one
 * after the other; the single OR condition makes PostgreSQL read the status's whole range, the expired rows
 * (a third of the rows, ahead of the others in the index) included.
 */
export function statusRangesSql(status: LicenseStatusName, now: Date): Prisma.Sql[] {
  if (status !== 'active') return [statusSql(status, now)];
  return [Prisma.sql`(status = 'active' AND expires_at > ${now.toISOString()}::timestamptz)`, Prisma.sql`(status = 'active' AND expires_at IS NULL)`];
}

/** The expiresAt bounds of a window: after now, from the start of day `from`, before the end of day `to`. */
function windowBounds(now: Date, window: ExpiryWindow) {
  const today = startOfUtcDay(now).getTime();
  return {
    from: window.from ? new Date(today + window.from * DAY_MS) : null,
    until: window.to === undefined ? null : new Date(today + (window.to + 1) * DAY_MS),
  };
}

/** Active, not yet expired, and its countdown within the window. */
export function isExpiring(license: StateFields, now: Date, window: ExpiryWindow = {}): boolean {
  if (license.status !== 'active' || license.expiresAt === null || isExpired(license, now)) return false;
  const days = daysUntil(license.expiresAt, now);
  return days >= (window.from ?? 0) && (window.to === undefined || days <= window.to);
}

export function expiringWhere(now: Date, window: ExpiryWindow = {}): Prisma.LicenseWhereInput {
  const { from, until } = windowBounds(now, window);
  return { status: 'active', expiresAt: { gt: now, ...(from && { gte: from }), ...(until && { lt: until }) } };
}

export function expiringSql(now: Date, window: ExpiryWindow = {}): Prisma.Sql {
  const { from, until } = windowBounds(now, window);
  return Prisma.sql`(status = 'active' AND expires_at > ${now.toISOString()}::timestamptz${
    from ? Prisma.sql` AND expires_at >= ${from.toISOString()}::timestamptz` : Prisma.empty
  }${until ? Prisma.sql` AND expires_at < ${until.toISOString()}::timestamptz` : Prisma.empty})`;
}
