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

// A key replaced by reissueLicenseKey with an overlap (reissue.ts): the license's current digest, while the overlap
// lasts. Read only after the lookup by digest found nothing, so a current key costs nothing more.
const CURRENT_DIGEST_OF_RETIRED =
  '(SELECT l.key_digest FROM retired_license_keys r JOIN licenses l ON l.id = r.license_id WHERE r.key_digest = $1 AND r.valid_until > $2)';
const SELECT_LICENSE_BY_RETIRED_DIGEST = `SELECT * FROM license_by_digest(${CURRENT_DIGEST_OF_RETIRED})`;
const SELECT_LICENSE_BY_RETIRED_DIGEST_FOR_UPDATE = `SELECT * FROM license_by_digest(${CURRENT_DIGEST_OF_RETIRED}, true)`;

/** The license of a key (its current key, or a reissued one within its overlap at `now`); null when unknown or malformed. */
export async function findLicenseByKey(sql: SqlRunner, secrets: ServerSecrets, licenseKey: string, now: Date): Promise<LicenseRecord | null> {
  const digest = licenseKeyDigest(secrets, licenseKey);
  if (!digest) return null;
  const [license] = await sql.query<LicenseRecord>(SELECT_LICENSE_BY_DIGEST, [digest]);
  if (license) return license;
  const [byRetiredKey] = await sql.query<LicenseRecord>(SELECT_LICENSE_BY_RETIRED_DIGEST, [digest, now]);
  return byRetiredKey ?? null;
}

/**
 * The license of a key with its row locked for the rest of the transaction: seat changes (activations, floating
 * checkouts) of one license queue on it. Null for an unknown or malformed key (a reissued one after its overlap).
 */
export async function lockLicenseByKey(tx: Prisma.TransactionClient, secrets: ServerSecrets, licenseKey: string, now: Date): Promise<LicenseRecord | null> {
  const digest = licenseKeyDigest(secrets, licenseKey);
  if (!digest) return null;
  const [license] = await tx.$queryRawUnsafe<LicenseRecord[]>(SELECT_LICENSE_BY_DIGEST_FOR_UPDATE, digest);
  if (license) return license;
  const [byRetiredKey] = await tx.$queryRawUnsafe<LicenseRecord[]>(SELECT_LICENSE_BY_RETIRED_DIGEST_FOR_UPDATE, digest, now);
  return byRetiredKey ?? null;
}
