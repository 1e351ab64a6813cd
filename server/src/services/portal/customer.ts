import { z } from 'zod';
import { DAY_MS } from '../../domain/countdown.js';
import { AppError } from '../../domain/errors.js';
import { systemActor } from '../auth/actor.js';
import type { TokenSigner } from '../context.js';
import { heldSessionWhere } from '../floating/sessions.js';
import { activateFromRequest, deactivateFromProof, issueLicenseFile } from '../license-files/index.js';
import { licenseKeyDigest } from '../licenses/license-record.js';
import { LICENSE_KEY_INPUT_MAX_LENGTH } from '../../crypto/license-key.js';
import { deactivateActivation } from '../licenses/management.js';
import { licenseStatus } from '../licenses/predicates.js';
import { isUuid } from '../listing.js';
import { parseInput } from '../validation.js';
import { customerActor, emailParts, type PortalCompany, type PortalContext, type PortalCustomer } from './sign-in.js';

// What a signed-in customer sees and does in the portal: only the licenses of this company whose customerEmail is
// theirs (every query is scoped by both), and their devices. Freeing a device is the console's deactivation
// (licenses/management.ts deactivateActivation: the same webhook event and activity entry), done as the actor
// "customer <email>" and counted against the product's deviceFreeLimit per deviceFreeWindowDays.

/** A customer's licenses shown, newest first; and each license's active devices shown, most recently seen first. */
export const MAX_LICENSES = 200;
export const MAX_DEVICES = 200;

/** The actor the services see for a customer's action: the system acting for the company, named as the customer. */
const customerServiceCtx = (ctx: PortalContext, customer: PortalCustomer) => ({ ...ctx, actor: systemActor(customer.tenantId, `customer ${customer.email}`) });

/** The customer's licenses by the email-domain index: ids of this company's licenses with the address (case-insensitive). */
export async function customerLicenseIds(ctx: PortalContext, customer: PortalCustomer): Promise<string[]> {
  const parts = emailParts(customer.email);
  const rows = await ctx.db.prisma.$queryRaw<{ id: string }[]>`
    SELECT id::text FROM licenses
     WHERE tenant_id = ${customer.tenantId}::uuid AND customer_email_domain = ${parts.domain} AND lower(customer_email) = ${parts.email}
     ORDER BY created_at DESC, id DESC LIMIT ${MAX_LICENSES}`;
  return rows.map((row) => row.id);
}

/** Where a frees window stands for one product: the limit, the frees counted, and when the oldest one stops counting. */
export interface DeviceFreeAllowance {
  limit: number;
  windowDays: number;
  used: number;
  remaining: number;
  /** When the next free becomes available again, when none is left; null otherwise. */
  nextAt: Date | null;
}

async function allowances(ctx: PortalContext, customer: PortalCustomer, products: { id: string; deviceFreeLimit: number | null; deviceFreeWindowDays: number }[]) {
  const result = new Map<string, DeviceFreeAllowance | null>();
  for (const product of products) {
    if (product.deviceFreeLimit === null) {
      result.set(product.id, null);
      continue;
    }
    const since = new Date(ctx.now.getTime() - product.deviceFreeWindowDays * DAY_MS);
    const frees = await ctx.db.prisma.portalDeviceFree.findMany({
      where: { tenantId: customer.tenantId, email: customer.email, productId: product.id, createdAt: { gt: since } },
      select: { createdAt: true },
      orderBy: { createdAt: 'desc' },
      take: product.deviceFreeLimit,
    });
    const used = frees.length;
    const remaining = Math.max(0, product.deviceFreeLimit - used);
    const oldest = frees.at(-1);
    result.set(product.id, {
      limit: product.deviceFreeLimit,
      windowDays: product.deviceFreeWindowDays,
      used,
      remaining,
      nextAt: remaining === 0 && oldest ? new Date(oldest.createdAt.getTime() + product.deviceFreeWindowDays * DAY_MS) : null,
    });
  }
  return result;
}

/** The signed-in customer's licenses at this company, each with its product, devices, floating pool and free allowance. */
export async function customerLicenses(ctx: PortalContext, company: PortalCompany, customer: PortalCustomer) {
  const ids = await customerLicenseIds(ctx, customer);
  if (!ids.length) return [];
  const licenses = await ctx.db.prisma.license.findMany({
    where: { id: { in: ids }, tenantId: customer.tenantId },
    select: {
      id: true,
      keyHint: true,
      status: true,
      expiresAt: true,
      gracePeriodDays: true,
      isTrial: true,
      features: true,
      maxActivations: true,
      currentActivations: true,
      floatingSeats: true,
      maintenanceExpiresAt: true,
      createdAt: true,
      product: { select: { id: true, name: true, renewalUrl: true, deviceFreeLimit: true, deviceFreeWindowDays: true } },
      activations: {
        where: { deactivatedAt: null },
        select: { id: true, deviceName: true, deviceId: true, version: true, lastSeenAt: true, createdAt: true },
        orderBy: [{ lastSeenAt: 'desc' }, { id: 'desc' }],
        take: MAX_DEVICES,
      },
      _count: { select: { floatingSessions: { where: heldSessionWhere(ctx.now) } } },
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
  });
  const products = [...new Map(licenses.map((license) => [license.product.id, license.product])).values()];
  const allowanceOf = await allowances(ctx, customer, products);
  return licenses.map(({ _count, product, activations, ...license }) => ({
    ...license,
    state: licenseStatus(license, ctx.now),
    graceEndsAt: license.expiresAt && license.gracePeriodDays !== null ? new Date(license.expiresAt.getTime() + license.gracePeriodDays * DAY_MS) : null,
    productName: product.name,
    renewalUrl: product.renewalUrl ?? company.renewalUrl,
    floatingInUse: _count.floatingSessions,
    devices: activations,
    deviceFrees: allowanceOf.get(product.id) ?? null,
  }));
}

export type CustomerLicense = Awaited<ReturnType<typeof customerLicenses>>[number];

/** One of the customer's licenses, or NotFound (another customer's, another company's, or none). */
export async function customerLicense(ctx: PortalContext, company: PortalCompany, customer: PortalCustomer, licenseId: string) {
  const license = (await customerLicenses(ctx, company, customer)).find((candidate) => candidate.id === licenseId);
  if (!license) throw new AppError('NotFound', 'License not found.');
  return license;
}

const FREE_LIMIT_REACHED = (allowance: { limit: number; windowDays: number }) =>
  `You have freed ${allowance.limit} device${allowance.limit === 1 ? '' : 's'} of this product in the last ${allowance.windowDays} days, the most allowed: contact support to free another.`;

/**
 * Frees one of the customer's devices (deactivates its activation), within the product's deviceFreeLimit over its
 * window: the count and the release are one transaction, serialised per customer and product, so concurrent frees
 * cannot exceed it. A product without a limit cannot free devices here (Forbidden). Returns the license as shown.
 */
export async function freeCustomerDevice(ctx: PortalContext, company: PortalCompany, customer: PortalCustomer, input: { deviceId: string }) {
  const { deviceId } = parseInput(z.object({ deviceId: z.string().trim().max(100) }), input);
  if (!isUuid(deviceId)) throw new AppError('NotFound', 'Device not found.');
  const ids = await customerLicenseIds(ctx, customer);
  const activation = await ctx.db.prisma.activation.findFirst({
    where: { id: deviceId, tenantId: customer.tenantId, licenseId: { in: ids }, deactivatedAt: null },
    select: { id: true, licenseId: true, license: { select: { product: { select: { id: true, deviceFreeLimit: true, deviceFreeWindowDays: true } } } } },
  });
  if (!activation) throw new AppError('NotFound', 'Device not found.');
  const product = activation.license.product;
  if (product.deviceFreeLimit === null) throw new AppError('Forbidden', 'Devices of this product cannot be freed here: contact support.');
  const limit = { limit: product.deviceFreeLimit, windowDays: product.deviceFreeWindowDays };
  await deactivateActivation(customerServiceCtx(ctx, customer), activation.id, {
    licenseWhere: { id: { in: ids } },
    inTransaction: async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('keyforge.portal-free'), hashtext(${`${customer.tenantId}:${customer.email}:${product.id}`}))`;
      const since = new Date(ctx.now.getTime() - product.deviceFreeWindowDays * DAY_MS);
      const used = await tx.portalDeviceFree.count({ where: { tenantId: customer.tenantId, email: customer.email, productId: product.id, createdAt: { gt: since } } });
      if (used >= limit.limit) throw new AppError('Forbidden', FREE_LIMIT_REACHED(limit));
      await tx.portalDeviceFree.create({ data: { tenantId: customer.tenantId, email: customer.email, productId: product.id, activationId: activation.id, createdAt: ctx.now } });
    },
  });
  return customerLicense(ctx, company, customer, activation.licenseId);
}

/**
 * Whether a key the customer typed is the key of one of their licenses. Keyforge keeps only a digest of each key,
 * so the portal shows a key in full only as the customer re-enters it: this confirms it is the one.
 */
export async function confirmCustomerKey(ctx: PortalContext, company: PortalCompany, customer: PortalCustomer, input: { licenseId: string; key: string }): Promise<boolean> {
  const data = parseInput(z.object({ licenseId: z.string().max(100), key: z.string().max(LICENSE_KEY_INPUT_MAX_LENGTH) }), input);
  const license = await customerLicense(ctx, company, customer, data.licenseId);
  const digest = licenseKeyDigest(ctx.secrets, data.key);
  if (!digest) return false;
  const found = await ctx.db.prisma.license.count({ where: { id: license.id, tenantId: customer.tenantId, keyDigest: digest } });
  return found === 1;
}

// ─── License files and air-gapped activation for the customer (services/license-files) ──────────────────────

/** The portal's context for license files: the token signer and issuer besides. */
export type CustomerFileContext = PortalContext & { signer: TokenSigner; issuer: string };

/** One of the customer's licenses by id, or NotFound. */
async function requireCustomerLicense(ctx: PortalContext, customer: PortalCustomer, licenseId: string): Promise<string> {
  const ids = await customerLicenseIds(ctx, customer);
  if (!ids.includes(licenseId)) throw new AppError('NotFound', 'License not found.');
  return licenseId;
}

/**
 * A signed license file of one of the customer's licenses, for one of its devices (Device.id) or for the license
 * alone; encrypted under the key when the customer re-entered it. Logged as IssueLicenseFile by "customer <email>".
 */
export async function customerLicenseFile(ctx: CustomerFileContext, customer: PortalCustomer, input: { licenseId: string; deviceId?: string | null; licenseKey?: string | null }) {
  const data = parseInput(z.object({ licenseId: z.string().max(100), deviceId: z.string().max(100).nullish(), licenseKey: z.string().max(200).nullish() }), input);
  const licenseId = await requireCustomerLicense(ctx, customer, data.licenseId);
  let deviceId: string | null = null;
  if (data.deviceId) {
    const activation = isUuid(data.deviceId)
      ? await ctx.db.prisma.activation.findFirst({ where: { id: data.deviceId, licenseId, tenantId: customer.tenantId, deactivatedAt: null }, select: { deviceId: true } })
      : null;
    if (!activation?.deviceId) throw new AppError('NotFound', 'Device not found.');
    deviceId = activation.deviceId;
  }
  return issueLicenseFile(ctx, { tenantId: customer.tenantId, licenseId, deviceId, licenseKey: data.licenseKey || null, actor: customerActor(customer.email, ctx.meta) });
}

/** An offline activation request uploaded by the customer for one of their licenses: the device license file in answer. */
export async function customerActivateFromRequest(ctx: CustomerFileContext, customer: PortalCustomer, input: { licenseId: string; requestText: string; licenseKey?: string | null }) {
  const licenseId = await requireCustomerLicense(ctx, customer, String(input.licenseId).slice(0, 100));
  return activateFromRequest(ctx, { tenantId: customer.tenantId, licenseId, requestText: input.requestText, licenseKey: input.licenseKey || null, actor: customerActor(customer.email, ctx.meta), mayRebindDevice: false });
}

/**
 * A deactivation proof uploaded by the customer: frees the one device of their license it names. Not counted against
 * the product's device-free limit: the proof shows the application has already given the seat up on that device.
 */
export async function customerDeactivateFromProof(ctx: CustomerFileContext, company: PortalCompany, customer: PortalCustomer, input: { licenseId: string; proofText: string }) {
  const licenseId = await requireCustomerLicense(ctx, customer, String(input.licenseId).slice(0, 100));
  await deactivateFromProof(ctx, { tenantId: customer.tenantId, licenseId, proofText: input.proofText, actor: customerActor(customer.email, ctx.meta) });
  return customerLicense(ctx, company, customer, licenseId);
}
