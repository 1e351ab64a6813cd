import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { findLicenseRecordById } from '../licenses/license-record.js';
import { checkEntitlement } from '../licenses/rules.js';
import { licenseDownloadLink, releasesForLicense, type DownloadLinkContext } from '../releases/public.js';
import { parseInput } from '../validation.js';
import { customerLicenseIds } from './customer.js';
import type { PortalContext, PortalCustomer } from './sign-in.js';

// Downloads in the customer portal: for each of the customer's licenses, the published releases of its product
// that the license may download (services/releases/public.ts, the rules of `GET /api/v1/releases`: required
// features, the maintenance period, the stable channel), and a short-lived link to one artifact, counted as a
// download. A license validate refuses (revoked, suspended, expired past its grace) lists nothing and downloads nothing.

export type PortalDownloadContext = PortalContext & Omit<DownloadLinkContext, keyof PortalContext>;

/** Releases listed per license, newest first. */
export const MAX_RELEASES_PER_LICENSE = 20;

/** Each of the customer's licenses (newest first) with the releases it may download; `refusal` says why none, if so. */
export async function customerReleases(ctx: PortalContext, customer: PortalCustomer) {
  const ids = await customerLicenseIds(ctx, customer);
  const hints = new Map((await ctx.db.prisma.license.findMany({ where: { id: { in: ids }, tenantId: customer.tenantId }, select: { id: true, keyHint: true } })).map((row) => [row.id, row.keyHint]));
  const result = [];
  for (const licenseId of ids) {
    const license = await findLicenseRecordById(ctx.db.sql, customer.tenantId, licenseId);
    if (!license) continue;
    const refused = checkEntitlement(license, ctx.now, null);
    result.push({
      licenseId: license.id,
      keyHint: hints.get(license.id) ?? '',
      productName: license.productName,
      refusal: refused?.message ?? null,
      releases: refused ? [] : await releasesForLicense(ctx, license, license.productId, { limit: MAX_RELEASES_PER_LICENSE }),
    });
  }
  return result;
}

export type CustomerReleases = Awaited<ReturnType<typeof customerReleases>>[number];

/**
 * A short-lived link to an artifact one of the customer's licenses may download, counted as a download. Another
 * customer's or company's license, or an artifact of another company or product, of a draft or yanked release:
 * NotFound; a license validate refuses, or one lacking a feature or maintenance the release requires: Forbidden.
 */
export async function customerDownloadLink(ctx: PortalDownloadContext, customer: PortalCustomer, input: { licenseId: string; artifactId: string }) {
  const data = parseInput(z.object({ licenseId: z.string().max(100), artifactId: z.string().max(100) }), input);
  const ids = await customerLicenseIds(ctx, customer);
  const license = ids.includes(data.licenseId) ? await findLicenseRecordById(ctx.db.sql, customer.tenantId, data.licenseId) : null;
  if (!license) throw new AppError('NotFound', 'License not found.');
  const refused = checkEntitlement(license, ctx.now, null);
  if (refused) throw new AppError('Forbidden', refused.message);
  return licenseDownloadLink(ctx, license, license.productId, data.artifactId);
}
