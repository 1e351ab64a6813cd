import { z } from 'zod';
import { generateLicenseKey, licenseKeyHint } from '../../crypto/license-key.js';
import { KEY_DIGEST_VERSION } from '../../crypto/secrets.js';
import { AppError } from '../../domain/errors.js';
import { lockTenantAudit, recordAudit } from '../audit/audit-log.js';
import { auditActor, requireAdmin } from '../auth/actor.js';
import { requireRecentReauth } from '../auth/recent-reauth.js';
import type { ServiceContext, SystemContext } from '../context.js';
import { isUniqueViolation, parseInput } from '../validation.js';
import { emitLicenseLifecycleEvent, refuseRevoked } from './lifecycle.js';
import { canonicalKeyDigest, licenseEntity } from './license-record.js';
import { findTenantLicense } from './management.js';

// Reissuing a license key (a customer lost or leaked theirs): the same license gets a new key, so its activations,
// history, quotas, usage and analytics stay with it. The old key stops working at once, or after an overlap the
// vendor chooses (at most MAX_OVERLAP_HOURS), during which both keys work; after it the old key answers like an
// unknown one. The overlap lives in retired_license_keys, read by the public lookup only when no license has the
// digest (license-record.ts), so validating with a current key costs nothing more.

/** The longest overlap a vendor may give the old key: long enough to roll a new key out, short for a leaked one. */
export const MAX_OVERLAP_HOURS = 7 * 24;

const ReissueInput = z.object({
  id: z.string().trim().min(1),
  overlapHours: z.number().int().min(0).max(MAX_OVERLAP_HOURS).default(0),
});

/**
 * Gives a license a new key (CompanyAdmin) and returns it: the only time it exists outside the customer's hands.
 * With `overlapHours` > 0 the old key keeps working until then (`previousKeyValidUntil`); an earlier reissue's old
 * key stops at once. Audited (ReissueLicenseKey, key hints only) and emitted as `license.key_reissued`. A revoked
 * license: Conflict.
 */
export async function reissueLicenseKey(ctx: ServiceContext, input: { id: string; overlapHours?: number | null }) {
  const { tenantId } = requireAdmin(ctx);
  const { id, overlapHours } = parseInput(ReissueInput, { ...input, overlapHours: input.overlapHours ?? undefined });
  const license = await findTenantLicense(ctx, tenantId, id);
  refuseRevoked(license, 'reissued');
  await requireRecentReauth(ctx, 'tenant');
  const tenant = await ctx.db.prisma.tenant.findUniqueOrThrow({ where: { id: tenantId }, select: { keyPrefix: true } });
  const previousKeyValidUntil = overlapHours > 0 ? new Date(ctx.now.getTime() + overlapHours * 3600_000) : null;

  // A digest collision is astronomically unlikely (78 bits), but retrying costs nothing.
  for (let attempt = 0; ; attempt++) {
    const key = generateLicenseKey(tenant.keyPrefix);
    const keyHint = licenseKeyHint(key);
    try {
      await ctx.db.prisma.$transaction(async (tx) => {
        // The activity log's lock before the row (see lockTenantAudit). The row lock orders this against a concurrent
        // reissue: each replaces the key the other left.
        await lockTenantAudit(tx, tenantId);
        // The status again under the lock: a revocation committed since the read above is final too.
        const [current] = await tx.$queryRaw<{ keyDigest: string; keyHint: string; status: typeof license.status }[]>`
          SELECT key_digest AS "keyDigest", key_hint AS "keyHint", status FROM licenses WHERE id = ${license.id}::uuid AND tenant_id = ${tenantId}::uuid FOR UPDATE`;
        if (!current) throw new AppError('NotFound', 'License not found.');
        refuseRevoked({ ...license, status: current.status }, 'reissued');
        await tx.license.update({ where: { id: license.id }, data: { keyDigest: canonicalKeyDigest(ctx.secrets, key), keyDigestVersion: KEY_DIGEST_VERSION, keyHint, updatedAt: ctx.now } });
        await tx.retiredLicenseKey.deleteMany({ where: { licenseId: license.id } });
        if (previousKeyValidUntil) {
          await tx.retiredLicenseKey.create({
            data: { keyDigest: current.keyDigest, tenantId, licenseId: license.id, keyHint: current.keyHint, validUntil: previousKeyValidUntil, createdAt: ctx.now },
          });
        }
        const changes = {
          before: { keyHint: current.keyHint },
          after: { keyHint, previousKeyValidUntil: previousKeyValidUntil?.toISOString() ?? null },
        };
        const entry = { tenantId, action: 'ReissueLicenseKey' as const, entityType: 'License', entityId: license.id, entity: licenseEntity(current, license.product.name), details: changes };
        await recordAudit(tx, entry, auditActor(ctx), ctx.now);
        await emitLicenseLifecycleEvent(tx, { type: 'license.key_reissued', tenantId, licenseId: license.id, changes }, ctx.now);
      });
      return { key, previousKeyValidUntil, license: await findTenantLicense(ctx, tenantId, license.id) };
    } catch (error) {
      if (!isUniqueViolation(error) || attempt >= 2) throw error;
    }
  }
}

/** Deletes former keys past their overlap (housekeeping); the lookup ignores them already. */
export async function purgeRetiredLicenseKeys({ db, now }: SystemContext): Promise<number> {
  const { count } = await db.prisma.retiredLicenseKey.deleteMany({ where: { validUntil: { lte: now } } });
  return count;
}
