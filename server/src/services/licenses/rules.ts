import semver from 'semver';
import { AppError, type RejectionCode } from '../../domain/errors.js';
import { DAY_MS, daysUntil } from '../../domain/countdown.js';
import type { LicenseRecord } from './license-record.js';
import { isExpired } from './predicates.js';

/** vendorWarning appears this long before the vendor's own subscription ends. */
export const VENDOR_WARNING_DAYS = 14;

export interface Rejection {
  errorCode: RejectionCode;
  message: string;
}

/** The body of a refused public call (activate, validate, floating checkout …): not valid, with why. */
export const rejected = ({ errorCode, message }: Rejection) => ({ isValid: false as const, message, errorCode });

/** Parses a version leniently ("1.2" → 1.2.0, "v2" → 2.0.0); anything else is the caller's mistake. */
export function parseVersion(input: string, field = 'version'): semver.SemVer {
  const parsed = semver.parse(input.trim(), { loose: true }) ?? semver.coerce(input, { includePrerelease: true });
  if (!parsed) throw new AppError('InvalidRequest', `${field} "${input}" is not a semantic version such as 1.4.2`, { fields: { [field]: 'not a semantic version' } });
  return parsed;
}

export const LICENSE_SUSPENDED: Rejection = {
  errorCode: 'Suspended',
  message: 'This license has been suspended by the vendor. Please contact the vendor of this software.',
};

/**
 * The validity rule (docs/integrate/rest-api.md "`POST /api/v1/validate`"), for every public call that lets software run (validate,
 * activate, floating checkout and heartbeat): valid only when active (not suspended), unexpired, unrevoked; then
 * the version bounds, when a version is given.
 */
export function checkEntitlement(license: Pick<LicenseRecord, 'status' | 'expiresAt' | 'minVersion' | 'maxVersion'>, now: Date, version: semver.SemVer | null): Rejection | null {
  if (license.status === 'revoked') return { errorCode: 'LicenseRevoked', message: 'This license has been revoked.' };
  if (license.status === 'suspended') return LICENSE_SUSPENDED;
  if (isExpired(license, now)) {
    return { errorCode: 'LicenseExpired', message: `This license expired on ${license.expiresAt!.toISOString()}.` };
  }
  if (version) {
    if (license.minVersion && semver.lt(version, parseVersion(license.minVersion, 'minVersion'))) {
      return { errorCode: 'VersionNotSupported', message: `Version ${version.version} is older than the minimum version ${license.minVersion} this license allows.` };
    }
    if (license.maxVersion && semver.gt(version, parseVersion(license.maxVersion, 'maxVersion'))) {
      return { errorCode: 'VersionNotSupported', message: `Version ${version.version} is newer than the maximum version ${license.maxVersion} this license allows.` };
    }
  }
  return null;
}

/** trialDaysRemaining: days until the end (domain/countdown.ts: UTC calendar days; 0 on the last day and after). */
export function daysRemaining(until: Date, now: Date): number {
  return Math.max(0, daysUntil(until, now));
}

/** True when expired but still inside the license's grace period; null when no grace applies. */
export function isInGracePeriod(license: LicenseRecord, now: Date): boolean | null {
  if (license.expiresAt === null || license.gracePeriodDays === null) return null;
  if (!isExpired(license, now)) return false;
  return now.getTime() < license.expiresAt.getTime() + license.gracePeriodDays * DAY_MS;
}

export function vendorWarning(subscriptionEndsAt: Date | null, now: Date): string | null {
  if (!subscriptionEndsAt) return null;
  const date = subscriptionEndsAt.toISOString().slice(0, 10);
  if (subscriptionEndsAt.getTime() <= now.getTime()) {
    return `The vendor's subscription to its licensing service ended on ${date}. Please contact the vendor of this software.`;
  }
  if (subscriptionEndsAt.getTime() - now.getTime() <= VENDOR_WARNING_DAYS * DAY_MS) {
    return `The vendor's subscription to its licensing service ends on ${date}. Please contact the vendor of this software.`;
  }
  return null;
}

export function remainingActivations(license: Pick<LicenseRecord, 'maxActivations' | 'currentActivations'>): number {
  return Math.max(0, license.maxActivations - license.currentActivations);
}

/**
 * Why a license's usage quotas cannot be set or removed now, or null when they can — the one rule of the service
 * (setMeterQuota, removeMeterQuota) and the console (License.quotaChangeBlockedReason). Revocation is final, so a
 * revoked license's quotas are frozen; a suspended or expired license may come back (reinstate, renew), and the
 * vendor may prepare its quotas meanwhile.
 */
export function quotaChangeBlockedReason(license: Pick<LicenseRecord, 'status'>): string | null {
  return license.status === 'revoked' ? 'This license is revoked: it records no usage again, so its quotas cannot be changed.' : null;
}

export const LICENSE_NOT_FOUND: Rejection = { errorCode: 'LicenseNotFound', message: 'License key not found.' };

/**
 * A key of another product than the application's: the license's product must be one of `wanted`, or a bundle one
 * of whose members is (the rule the SDK applies to the offline token's `product` and `bundleProducts`). Names match
 * exactly. First among the checks: whatever the license's state, it is not a key for this application.
 */
export function productMismatch(license: Pick<LicenseRecord, 'productName' | 'bundleProducts'>, wanted: string | string[] | undefined): Rejection | null {
  if (wanted === undefined) return null;
  const names = typeof wanted === 'string' ? [wanted] : wanted;
  if (names.includes(license.productName) || license.bundleProducts?.some((member) => names.includes(member))) return null;
  return {
    errorCode: 'ProductMismatch',
    message: `This license is for another product, not ${names.map((name) => `"${name}"`).join(' or ')}: no seat was taken. Check that the key is the one for this application.`,
  };
}
