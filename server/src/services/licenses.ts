import { z } from 'zod';
import semver from 'semver';
import { generateLicenseKey, licenseKeyHint } from '../crypto/license-key.js';
import { KEY_DIGEST_VERSION } from '../crypto/secrets.js';
import { AppError } from '../domain/errors.js';
import type { ServiceContext } from './context.js';
import { licenseKeyDigest } from './licensing/license-record.js';
import { isUniqueViolation, parseInput } from './validation.js';

const version = z
  .string()
  .trim()
  .refine((value) => semver.valid(value, { loose: true }) ?? semver.coerce(value), 'must be a semantic version such as 1.4.2');
const days = z.number().int().min(0).max(3650);

/** Every attribute of a license a vendor sets. */
export const LicenseAttributesSchema = z
  .object({
    maxActivations: z.number().int().min(1).max(1_000_000),
    expiresAt: z.coerce.date().nullable().optional(),
    isTrial: z.boolean().optional(),
    nodeLocked: z.boolean().optional(),
    offlineGraceDays: days.nullable().optional(),
    gracePeriodDays: days.nullable().optional(),
    features: z.array(z.string().trim().min(1).max(100)).max(100).optional(),
    customFields: z.record(z.string().min(1).max(100), z.string().max(2000)).nullable().optional(),
    minVersion: version.nullable().optional(),
    maxVersion: version.nullable().optional(),
    maintenanceExpiresAt: z.coerce.date().nullable().optional(),
    customerEmail: z.email().nullable().optional(),
    /** Concurrent floating sessions allowed; null: none. */
    floatingSeats: z.number().int().min(1).max(1_000_000).nullable().optional(),
  })
  .refine(
    (license) => !license.minVersion || !license.maxVersion || !semver.gt(semver.coerce(license.minVersion)!, semver.coerce(license.maxVersion)!),
    { message: 'minVersion must not be greater than maxVersion', path: ['minVersion'] },
  );

type Ctx = Pick<ServiceContext, 'db' | 'now' | 'secrets'>;

/** Creates a license and returns its plaintext key: the only time it exists outside the customer's hands. */
export async function createLicense(ctx: Ctx, tenantId: string, productId: string, input: z.input<typeof LicenseAttributesSchema>) {
  const attributes = parseInput(LicenseAttributesSchema, input);
  const tenant = await ctx.db.prisma.tenant.findUnique({ where: { id: tenantId }, select: { keyPrefix: true } });
  const product = await ctx.db.prisma.product.findFirst({ where: { id: productId, tenantId }, select: { id: true } });
  if (!tenant || !product) throw new AppError('NotFound', 'Product not found.');
  const customFields = attributes.customFields ?? undefined;
  // A digest collision is astronomically unlikely (78 bits), but retrying costs nothing.
  for (let attempt = 0; ; attempt++) {
    const key = generateLicenseKey(tenant.keyPrefix);
    try {
      const license = await ctx.db.prisma.license.create({
        data: {
          ...attributes,
          customFields: customFields === null ? undefined : customFields,
          tenantId,
          productId,
          keyDigest: ctx.secrets.digest(key),
          keyDigestVersion: KEY_DIGEST_VERSION,
          keyHint: licenseKeyHint(key),
          createdAt: ctx.now,
        },
      });
      return { key, license };
    } catch (error) {
      if (!isUniqueViolation(error) || attempt >= 2) throw error;
    }
  }
}

async function findByKey(ctx: Ctx, licenseKey: string) {
  const digest = licenseKeyDigest(ctx.secrets, licenseKey);
  const license = digest ? await ctx.db.prisma.license.findUnique({ where: { keyDigest: digest } }) : null;
  if (!license) throw new AppError('NotFound', 'License not found.');
  return license;
}

/** Revokes a license (idempotent). A revoked license never validates again. */
export async function revokeLicenseByKey(ctx: Ctx, licenseKey: string) {
  const license = await findByKey(ctx, licenseKey);
  if (license.status === 'revoked') return license;
  return ctx.db.prisma.license.update({ where: { id: license.id }, data: { status: 'revoked', revokedAt: ctx.now } });
}

/** A license with its product and activations, for operators (never the key itself). */
export async function showLicenseByKey(ctx: Ctx, licenseKey: string) {
  const license = await findByKey(ctx, licenseKey);
  return ctx.db.prisma.license.findUniqueOrThrow({
    where: { id: license.id },
    omit: { keyDigest: true, keyDigestVersion: true },
    include: {
      product: { select: { id: true, name: true, isBundle: true } },
      tenant: { select: { id: true, name: true, keyPrefix: true } },
      activations: { orderBy: { createdAt: 'asc' } },
    },
  });
}
