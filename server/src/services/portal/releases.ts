import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { findLicenseRecordById, findLicenseRecordsByIds, type LicenseRecord } from '../licenses/license-record.js';
import { checkEntitlement } from '../licenses/rules.js';
import { RELEASE_CHANNELS, type ReleaseChannel } from '../releases/model.js';
import { licenseDownloadLink, licenseProducts, releasesForLicense, type DownloadLinkContext, type PublishedReleasesCache } from '../releases/public.js';
import { parseInput } from '../validation.js';
import { customerLicenseIds } from './customer.js';
import type { PortalContext, PortalCustomer } from './sign-in.js';

// Downloads in the customer portal: for each of the customer's licenses, the published releases of each product it
// grants (its product; for a bundle, the members) that the license may download, and a short-lived link to one
// artifact, counted as a download. The rules are those of `GET /api/v1/releases` (services/releases/public.ts): the
// bundle's members, required features, the maintenance period, the channel and the more stable ones. A license
// validate refuses (revoked, suspended, expired past its grace) lists nothing and downloads nothing.

export type PortalDownloadContext = PortalContext & Omit<DownloadLinkContext, keyof PortalContext>;

/** Releases listed per product of a license, newest first. */
export const MAX_RELEASES_PER_PRODUCT = 20;

/**
 * Each of the customer's licenses (newest first) with, per product it grants, the releases on `channel` (default
 * stable, and the more stable ones) it may download; `refusal` says why none, if so.
 */
export async function customerReleases(ctx: PortalContext, customer: PortalCustomer, input: { channel?: ReleaseChannel } = {}) {
  const { channel } = parseInput(z.object({ channel: z.enum(RELEASE_CHANNELS).default('stable') }), input);
  const ids = await customerLicenseIds(ctx, customer);
  const hints = new Map((await ctx.db.prisma.license.findMany({ where: { id: { in: ids }, tenantId: customer.tenantId }, select: { id: true, keyHint: true } })).map((row) => [row.id, row.keyHint]));
  const licenses = new Map((await findLicenseRecordsByIds(ctx.db.sql, customer.tenantId, ids)).map((license) => [license.id, license]));
  const cache: PublishedReleasesCache = new Map();
  const members: ProductsCache = new Map();
  const result = [];
  for (const licenseId of ids) {
    const license = licenses.get(licenseId);
    if (!license) continue;
    const refused = checkEntitlement(license, ctx.now, null);
    result.push({
      licenseId: license.id,
      keyHint: hints.get(license.id) ?? '',
      productName: license.productName,
      refusal: refused?.message ?? null,
      products: refused ? [] : await productReleases(ctx, license, channel, cache, members),
    });
  }
  return result;
}

/** The products each license's product grants (licenseProducts), by product id: read once per listing. */
type ProductsCache = Map<string, ReturnType<typeof licenseProducts>>;

/** Per product the license grants, the releases it may download. A bundle's own product shows only when it has some. */
async function productReleases(ctx: PortalContext, license: LicenseRecord, channel: ReleaseChannel, cache: PublishedReleasesCache, members: ProductsCache) {
  const products = [];
  const granted = members.get(license.productId) ?? licenseProducts(ctx, license);
  members.set(license.productId, granted);
  for (const product of await granted) {
    const releases = await releasesForLicense(ctx, license, product.id, { channel, limit: MAX_RELEASES_PER_PRODUCT, cache });
    if (product.id === license.productId && license.bundleProducts?.length && !releases.length) continue;
    products.push({ productId: product.id, productName: product.name, releases });
  }
  return products;
}

export type CustomerReleases = Awaited<ReturnType<typeof customerReleases>>[number];

/**
 * A short-lived link to an artifact one of the customer's licenses may download, counted as a download. Another
 * customer's or company's license, or an artifact of another company, of a product the license does not grant, of
 * a draft or yanked release: NotFound; a license validate refuses, or one lacking a feature or maintenance the
 * release requires: Forbidden.
 */
export async function customerDownloadLink(ctx: PortalDownloadContext, customer: PortalCustomer, input: { licenseId: string; artifactId: string }) {
  const data = parseInput(z.object({ licenseId: z.string().max(100), artifactId: z.string().max(100) }), input);
  const ids = await customerLicenseIds(ctx, customer);
  const license = ids.includes(data.licenseId) ? await findLicenseRecordById(ctx.db.sql, customer.tenantId, data.licenseId) : null;
  if (!license) throw new AppError('NotFound', 'License not found.');
  const refused = checkEntitlement(license, ctx.now, null);
  if (refused) throw new AppError('Forbidden', refused.message);
  const products = await licenseProducts(ctx, license);
  return licenseDownloadLink(ctx, license, products.map((product) => product.id), data.artifactId);
}
