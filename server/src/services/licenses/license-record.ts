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

// A raw prepared statement: this runs on every validate, where Prisma's per-query overhead shows
// (bench/ measures it). `lockForUpdate` serialises seat changes of one license inside a transaction.
const selectLicense = (lockForUpdate: boolean) => `
  SELECT l.id, l.tenant_id AS "tenantId", l.status::text AS status,
         l.max_activations AS "maxActivations", l.current_activations AS "currentActivations",
         l.expires_at AS "expiresAt", l.is_trial AS "isTrial", l.node_locked AS "nodeLocked",
         l.offline_grace_days AS "offlineGraceDays", l.grace_period_days AS "gracePeriodDays",
         l.features, l.custom_fields AS "customFields", l.min_version AS "minVersion",
         l.max_version AS "maxVersion", l.maintenance_expires_at AS "maintenanceExpiresAt",
         l.customer_email AS "customerEmail", p.id AS "productId", p.name AS "productName",
         CASE WHEN p.is_bundle THEN ARRAY(
           SELECT m.name FROM bundle_items b JOIN products m ON m.id = b.product_id
           WHERE b.bundle_id = p.id ORDER BY m.name) END AS "bundleProducts",
         t.subscription_ends_at AS "subscriptionEndsAt"
    FROM licenses l
    JOIN products p ON p.id = l.product_id
    JOIN tenants t ON t.id = l.tenant_id
   WHERE l.key_digest = $1${lockForUpdate ? '\n     FOR UPDATE OF l' : ''}`;

export const SELECT_LICENSE_BY_DIGEST = selectLicense(false);
export const SELECT_LICENSE_BY_DIGEST_FOR_UPDATE = selectLicense(true);

/** The digest a key is stored under, or null for a malformed key (which is then simply "not found"). */
export function licenseKeyDigest(secrets: ServerSecrets, licenseKey: string): string | null {
  const key = normalizeLicenseKey(licenseKey);
  return key ? secrets.digest(key) : null;
}

export async function findLicenseByKey(sql: SqlRunner, secrets: ServerSecrets, licenseKey: string): Promise<LicenseRecord | null> {
  const digest = licenseKeyDigest(secrets, licenseKey);
  if (!digest) return null;
  const rows = await sql.query<LicenseRecord>(SELECT_LICENSE_BY_DIGEST, [digest], 'license_by_digest');
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
