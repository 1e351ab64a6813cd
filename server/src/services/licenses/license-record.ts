import type { PlannedRead, SqlRunner } from '../../db/database.js';
import type { Prisma } from '../../generated/prisma/client.js';
import type { ServerSecrets } from '../../crypto/secrets.js';
import { canonicalLicenseKey, isKeyforgeKey } from '../../crypto/license-key.js';
import type { StoredLicenseStatus } from './predicates.js';

/** How the activity log names a license: its key hint and product (`ACME-…-WZ3P (Studio)`), never the key. */
export const licenseEntity = (license: { keyHint: string }, productName: string) => `${license.keyHint} (${productName})`;

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

// The license of a key digest, with its product and tenant, in one statement. On a direct connection it is this plain
// join as a named prepared statement (what bench/floor.ts runs); where statements run unnamed it is the function
// license_by_digest (migration pooler_safe_hot_path), the same join with its plan kept per server session.
// test/pooler.test.ts checks that both give the same rows.
const LICENSE_RECORD_SELECT = `
  SELECT l.id, l.tenant_id AS "tenantId", l.status::text AS status, l.max_activations AS "maxActivations",
         l.current_activations AS "currentActivations", l.expires_at AS "expiresAt", l.is_trial AS "isTrial",
         l.node_locked AS "nodeLocked", l.offline_grace_days AS "offlineGraceDays", l.grace_period_days AS "gracePeriodDays",
         l.features, l.custom_fields AS "customFields", l.min_version AS "minVersion", l.max_version AS "maxVersion",
         l.maintenance_expires_at AS "maintenanceExpiresAt", l.customer_email AS "customerEmail", p.id AS "productId",
         p.name AS "productName", CASE WHEN p.is_bundle THEN ARRAY(SELECT m.name FROM bundle_items b JOIN products m
         ON m.id = b.product_id WHERE b.bundle_id = p.id ORDER BY m.name) END AS "bundleProducts",
         t.subscription_ends_at AS "subscriptionEndsAt"
    FROM licenses l JOIN products p ON p.id = l.product_id JOIN tenants t ON t.id = l.tenant_id`;
const LICENSE_BY_DIGEST_JOIN = `${LICENSE_RECORD_SELECT}
   WHERE l.key_digest = $1`;
export const SELECT_LICENSE_BY_DIGEST: PlannedRead = { prepared: LICENSE_BY_DIGEST_JOIN, viaFunction: 'SELECT * FROM license_by_digest($1)' };
// The same, with the row locked first: seat changes (activations, floating checkouts) of one license queue on it.
// Only inside Prisma transactions, whose statements are unnamed.
export const SELECT_LICENSE_BY_DIGEST_FOR_UPDATE = 'SELECT * FROM license_by_digest($1, true)';

/** The digest a key (of any format: `canonicalLicenseKey`) is stored under, or null for a malformed key (which is then simply "not found"). */
export function licenseKeyDigest(secrets: ServerSecrets, licenseKey: string): string | null {
  const key = canonicalLicenseKey(licenseKey);
  return key ? canonicalKeyDigest(secrets, key) : null;
}

/**
 * The digest of a canonical key (`canonicalLicenseKey`): HMAC under the server secret. An imported key is digested
 * with a label in front, so that a vendor-chosen string can never have the digest of another credential the server
 * derives (a token, `cli-channel-v1`) and put it in the licenses table; a Keyforge key as it always was.
 */
export function canonicalKeyDigest(secrets: ServerSecrets, canonical: string): string {
  return secrets.digest(isKeyforgeKey(canonical) ? canonical : `imported-license-key:${canonical}`);
}

// A key replaced by reissueLicenseKey with an overlap (reissue.ts): the license's current digest, while the overlap
// lasts. Read only after the lookup by digest found nothing, so a current key costs nothing more.
const CURRENT_DIGEST_OF_RETIRED =
  '(SELECT l.key_digest FROM retired_license_keys r JOIN licenses l ON l.id = r.license_id WHERE r.key_digest = $1 AND r.valid_until > $2)';
const SELECT_LICENSE_BY_RETIRED_DIGEST = `SELECT * FROM license_by_digest(${CURRENT_DIGEST_OF_RETIRED})`;
const SELECT_LICENSE_BY_RETIRED_DIGEST_FOR_UPDATE = `SELECT * FROM license_by_digest(${CURRENT_DIGEST_OF_RETIRED}, true)`;

/** What findLicenseByKey reads a current digest through: the license cache (license-cache.ts). */
export interface LicenseLookupCache {
  /** `nowMs`: the request's clock, by which an entry's age is measured. */
  read(digest: string, load: () => Promise<LicenseRecord | null>, nowMs: number): Promise<LicenseRecord | null>;
}

/**
 * The license of a key (its current key, or a reissued one within its overlap at `now`); null when unknown or malformed.
 * With `cache` (validate only: license-cache.ts), a current key is answered from memory when the cache holds it; a
 * reissued key within its overlap and an unknown key always read the database (their answer depends on `now`).
 */
export async function findLicenseByKey(sql: SqlRunner, secrets: ServerSecrets, licenseKey: string, now: Date, cache?: LicenseLookupCache): Promise<LicenseRecord | null> {
  const digest = licenseKeyDigest(secrets, licenseKey);
  if (!digest) return null;
  const byDigest = async () => (await sql.query<LicenseRecord>(SELECT_LICENSE_BY_DIGEST, [digest]))[0] ?? null;
  const license = cache ? await cache.read(digest, byDigest, now.getTime()) : await byDigest();
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

/** The licenses of ids within a tenant, as findLicenseRecordById reads each, in one statement (in no particular order). */
export async function findLicenseRecordsByIds(sql: SqlRunner, tenantId: string, licenseIds: readonly string[]): Promise<LicenseRecord[]> {
  if (!licenseIds.length) return [];
  return sql.query<LicenseRecord>(`${LICENSE_RECORD_SELECT}\n   WHERE l.id = ANY($1::uuid[]) AND l.tenant_id = $2`, [licenseIds, tenantId]);
}

/** The license of an id within a tenant, as the public endpoints read it by key (staff and customer paths name it by id). */
export async function findLicenseRecordById(sql: SqlRunner, tenantId: string, licenseId: string): Promise<LicenseRecord | null> {
  const [license] = await sql.query<LicenseRecord>(`${LICENSE_RECORD_SELECT}\n   WHERE l.id = $1 AND l.tenant_id = $2`, [licenseId, tenantId]);
  return license ?? null;
}
