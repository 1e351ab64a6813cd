import { AppError } from '../../domain/errors.js';
import type { LicensingContext } from '../context.js';
import { findLicenseByKey, type LicenseRecord } from './license-record.js';
import { DAY_MS } from '../../domain/countdown.js';
import { DEVICE_NOT_ACTIVATED, touchActiveDevice } from './activations.js';
import {
  LICENSE_NOT_FOUND,
  checkEntitlement,
  daysRemaining,
  isInGracePeriod,
  parseVersion,
  rejected,
  remainingActivations,
  vendorWarning,
  type Rejection,
} from './rules.js';

export interface ValidateInput {
  licenseKey: string;
  version?: string;
  /** Optional device fingerprint, bound into the offline token. */
  deviceId?: string;
  /** Opt-in: also require `deviceId` to hold an active activation (else DeviceNotActivated). Default: entitlement only. */
  requireActivation?: boolean;
  /** Optional client challenge, echoed inside the offline token so a captured response cannot be replayed. */
  nonce?: string;
}

/** Offline tokens live at least this long even without offline grace, so a client can verify the response itself. */
export const MIN_TOKEN_TTL_MS = 60 * 60_000;

/**
 * Checks entitlement; changes nothing in the database. The license is read through the license cache when the
 * context has one (license-cache.ts): what the database announces as changed is forgotten within its staleness bound. With `requireActivation` it also checks that the device
 * holds an activation, and refreshes that activation's lastSeenAt (at most once per LAST_SEEN_INTERVAL_MS).
 */
export async function validateLicense(ctx: LicensingContext, input: ValidateInput) {
  // Bad input is refused whatever the license's state (the REST body schema says the same before this runs).
  if (input.requireActivation && !input.deviceId) throw new AppError('InvalidRequest', 'requireActivation needs the deviceId of this machine.', { fields: { deviceId: 'required with requireActivation' } });
  const version = input.version === undefined ? null : parseVersion(input.version);
  const license = await findLicenseByKey(ctx.db.sql, ctx.secrets, input.licenseKey, ctx.now, ctx.licenseCache);
  if (!license) return rejected(LICENSE_NOT_FOUND);
  await ctx.chargeTenant(license.tenantId, license.id);

  let rejection = checkEntitlement(license, ctx.now, version);
  if (!rejection && input.requireActivation) {
    if (!(await touchActiveDevice(ctx, license, input.deviceId!))) rejection = DEVICE_NOT_ACTIVATED;
  }
  const offlineCacheToken = rejection ? null : await signOfflineToken(ctx, license, input);
  return describeLicense(license, ctx.now, rejection, offlineCacheToken);
}

/** The full validate body of docs/integrate/rest-api.md "`POST /api/v1/validate`", null where a field does not apply. */
export function describeLicense(license: LicenseRecord, now: Date, rejection: Rejection | null, offlineCacheToken: string | null) {
  return {
    isValid: rejection === null,
    ...(rejection ? { message: rejection.message } : {}),
    errorCode: rejection?.errorCode ?? null,
    productName: license.productName,
    remainingActivations: remainingActivations(license),
    expiresAt: license.expiresAt?.toISOString() ?? null,
    customFields: license.customFields,
    features: license.features,
    isTrial: license.isTrial,
    ...(license.isTrial ? { trialDaysRemaining: license.expiresAt ? daysRemaining(license.expiresAt, now) : null } : {}),
    nodeLocked: license.nodeLocked,
    offlineGraceDays: license.offlineGraceDays,
    vendorWarning: vendorWarning(license.subscriptionEndsAt, now),
    minVersion: license.minVersion,
    maxVersion: license.maxVersion,
    bundleProducts: license.bundleProducts,
    isInGracePeriod: isInGracePeriod(license, now),
    maintenanceExpiresAt: license.maintenanceExpiresAt?.toISOString() ?? null,
    offlineCacheToken,
  };
}

/**
 * A compact EdDSA JWS the client can cache and verify offline with the published JWKS. It names the
 * license by id, never by key. It expires after offlineGraceDays (at least MIN_TOKEN_TTL_MS) and never
 * after the license itself.
 */
export async function signOfflineToken(ctx: LicensingContext, license: LicenseRecord, input: Pick<ValidateInput, 'deviceId' | 'nonce' | 'requireActivation'>): Promise<string> {
  const issuedAt = ctx.now;
  let expires = issuedAt.getTime() + Math.max(MIN_TOKEN_TTL_MS, (license.offlineGraceDays ?? 0) * DAY_MS);
  if (license.expiresAt) expires = Math.min(expires, license.expiresAt.getTime());
  return ctx.signer.sign(
    {
      ...entitlementClaims(license),
      ...(input.deviceId ? { device: input.deviceId } : {}),
      // Only a device-scoped validate signs this (and only when the device held an activation).
      ...(input.deviceId && input.requireActivation ? { deviceActivated: true } : {}),
      ...(input.nonce ? { nonce: input.nonce } : {}),
    },
    { issuedAt, expiresAt: new Date(expires) },
  );
}

/** The entitlement an offline token and a license file sign (the SDK's `Entitlement`): the license by id, never by key. */
export function entitlementClaims(license: LicenseRecord) {
  return {
    sub: license.id,
    tenant: license.tenantId,
    productId: license.productId,
    product: license.productName,
    bundleProducts: license.bundleProducts,
    features: license.features,
    licenseExpiresAt: license.expiresAt?.toISOString() ?? null,
    isTrial: license.isTrial,
    nodeLocked: license.nodeLocked,
    offlineGraceDays: license.offlineGraceDays,
    maintenanceExpiresAt: license.maintenanceExpiresAt?.toISOString() ?? null,
    minVersion: license.minVersion,
    maxVersion: license.maxVersion,
  };
}
