import type { SqlRunner } from '../../db/database.js';
import type { Prisma } from '../../generated/prisma/client.js';
import type { ServerSecrets } from '../../crypto/secrets.js';
import { normalizeLicenseKey } from '../../crypto/license-key.js';
import type { StoredLicenseStatus } from './predicates.js';

/** Everything the public endpoints need about a license, read in one statement. */
export interface LicenseRecord {
  id: string;
  tenantId: string;
  status: StoredLicenseStatus;
  maxActivations: number;
  currentActivations: number;
  expiresAt: Date | null;
  isTrial: boolean;
  nodeLocked: boolean;
  offlineGraceDays: number | null;
  gracePeriodDays: number | null;
  features: string[];
  customFields: Record<string, string> | null;
  minVersion: string | null;
  maxVersion: string | null;
  maintenanceExpiresAt: Date | null;
  customerEmail: string | null;
  productId: string;
  productName: string;
  bundleProducts: string[] | null;
  subscriptionEndsAt: Date | null;
}

// The function license_by_digest (migration pooler_safe_hot_path) reads the row: its plan is kept per server session,
// which a transaction-mode pooler allows (a named prepared statement would not be there on the next transaction's
// connection). This runs on every validate, where Prisma's per-query overhead shows (bench/ measures it).
export const SELECT_LICENSE_BY_DIGEST = 'SELECT * FROM license_by_digest($1)';
// The same, with the row locked first: seat changes (activations, floating checkouts) of one license queue on it.
export const SELECT_LICENSE_BY_DIGEST_FOR_UPDATE = 'SELECT * FROM license_by_digest($1, true)';

/** The digest a key is stored under, or null for a malformed key (which is then simply "not found"). */
export function licenseKeyDigest(secrets: ServerSecrets, licenseKey: string): string | null {
  const key = normalizeLicenseKey(licenseKey);
  return key ? secrets.digest(key) : null;
}

export async function findLicenseByKey(sql: SqlRunner, secrets: ServerSecrets, licenseKey: string): Promise<LicenseRecord | null> {
  const digest = licenseKeyDigest(secrets, licenseKey);
  if (!digest) return null;
  const rows = await sql.query<LicenseRecord>(SELECT_LICENSE_BY_DIGEST, [digest]);
  return rows[0] ?? null;
}

/**
 * The license of a key with its row locked for the rest of the transaction: seat changes (activations, floating
 * checkouts) of one license queue on it. Null for an unknown or malformed key.
 */
export async function lockLicenseByKey(tx: Prisma.TransactionClient, secrets: ServerSecrets, licenseKey: string): Promise<LicenseRecord | null> {
  const digest = licenseKeyDigest(secrets, licenseKey);
  if (!digest) return null;
  const [license] = await tx.$queryRawUnsafe<LicenseRecord[]>(SELECT_LICENSE_BY_DIGEST_FOR_UPDATE, digest);
  return license ?? null;
}
