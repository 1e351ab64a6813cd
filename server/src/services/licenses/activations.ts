import type { Prisma } from '../../generated/prisma/client.js';
import type { LicensingContext } from '../context.js';
import { activationData, emitEvent } from '../webhooks/events.js';
import { consumeNonce } from './nonces.js';
import { lockLicenseByKey } from './license-record.js';
import {
  LICENSE_NOT_FOUND,
  checkEntitlement,
  daysRemaining,
  parseVersion,
  rejected,
  remainingActivations,
  vendorWarning,
} from './rules.js';

type Tx = Prisma.TransactionClient;

export interface ActivateInput {
  licenseKey: string;
  nonce?: string;
  deviceId?: string;
  deviceName?: string;
  version?: string;
  userEmail?: string;
  ip?: string;
}

// Seat changes of one license queue on its row lock; give a burst of them time to get through.
const SEAT_TRANSACTION = { maxWait: 20_000, timeout: 20_000 } as const;


/**
 * Registers an installation. The nonce is consumed and the seat taken in one transaction; the license
 * row lock makes "same deviceId reuses its seat" and "never more than maxActivations" hold under
 * concurrency, and makes a retry after an uncertain timeout (same deviceId) safe.
 */
export async function activateLicense(ctx: LicensingContext, input: ActivateInput) {
  const version = input.version === undefined ? null : parseVersion(input.version);
  return ctx.db.prisma.$transaction(async (tx) => {
    await consumeNonce(tx, input.nonce, ctx.now);
    const license = await lockLicenseByKey(tx, ctx.secrets, input.licenseKey);
    if (!license) return rejected(LICENSE_NOT_FOUND);
    await ctx.chargeTenant(license.tenantId, license.id);

    const rejection =
      checkEntitlement(license, ctx.now, version) ??
      (license.nodeLocked && !input.deviceId
        ? { errorCode: 'DeviceIdRequired' as const, message: 'This license is node-locked: send the deviceId (SHA-256 hardware fingerprint) of this machine.' }
        : null);
    if (rejection) return rejected(rejection);

    const details = {
      deviceName: input.deviceName,
      version: input.version,
      userEmail: input.userEmail,
      ip: input.ip,
    };
    const existing = input.deviceId
      ? await tx.activation.findFirst({ where: { licenseId: license.id, deviceId: input.deviceId, deactivatedAt: null }, select: { id: true } })
      : null;
    let seatsUsed = license.currentActivations;
    if (existing) {
      await tx.activation.update({ where: { id: existing.id }, data: { ...details, lastSeenAt: ctx.now } });
    } else {
      const { count } = await tx.license.updateMany({
        where: { id: license.id, currentActivations: { lt: tx.license.fields.maxActivations } },
        data: { currentActivations: { increment: 1 } },
      });
      if (count === 0) {
        // Rejections are counted by throttling: at most one event per license per hour, however often clients retry.
        const data = { licenseId: license.id, productId: license.productId, maxActivations: license.maxActivations, currentActivations: license.currentActivations };
        await emitEvent(tx, license.tenantId, 'license.seats_exhausted', data, ctx.now, { throttleKey: license.id });
        return rejected({
          errorCode: 'SeatsExhausted',
          message: `All ${license.maxActivations} activations of this license are in use. Deactivate an installation to free a seat.`,
        });
      }
      seatsUsed += 1;
      const activation = await tx.activation.create({
        data: { ...details, tenantId: license.tenantId, licenseId: license.id, deviceId: input.deviceId, createdAt: ctx.now, lastSeenAt: ctx.now },
      });
      await emitEvent(tx, license.tenantId, 'activation.created', activationData(activation), ctx.now);
    }
    // The end user's email becomes the customer contact for expiry notices when the vendor set none.
    if (input.userEmail && !license.customerEmail) {
      await tx.license.update({ where: { id: license.id }, data: { customerEmail: input.userEmail } });
    }
    return {
      isValid: true as const,
      productName: license.productName,
      remainingActivations: remainingActivations({ ...license, currentActivations: seatsUsed }),
      expiresAt: license.expiresAt?.toISOString() ?? null,
      features: license.features,
      isTrial: license.isTrial,
      ...(license.isTrial ? { trialDaysRemaining: license.expiresAt ? daysRemaining(license.expiresAt, ctx.now) : null } : {}),
      nodeLocked: license.nodeLocked,
      offlineGraceDays: license.offlineGraceDays,
      vendorWarning: vendorWarning(license.subscriptionEndsAt, ctx.now),
    };
  }, SEAT_TRANSACTION);
}

/** Frees one activation's seat (idempotent on an already released activation). */
export async function releaseSeat(tx: Tx, activation: { id: string; licenseId: string }, now: Date): Promise<boolean> {
  const { count } = await tx.activation.updateMany({ where: { id: activation.id, deactivatedAt: null }, data: { deactivatedAt: now } });
  if (count === 0) return false;
  await tx.license.updateMany({ where: { id: activation.licenseId, currentActivations: { gt: 0 } }, data: { currentActivations: { decrement: 1 } } });
  return true;
}

/** Self-service release of a device's seat, e.g. before reinstalling on a new machine. */
export async function deactivateDevice(ctx: LicensingContext, input: { licenseKey: string; deviceId: string }) {
  return ctx.db.prisma.$transaction(async (tx) => {
    const license = await lockLicenseByKey(tx, ctx.secrets, input.licenseKey);
    if (!license) return { deactivated: false as const, message: LICENSE_NOT_FOUND.message, errorCode: LICENSE_NOT_FOUND.errorCode };
    await ctx.chargeTenant(license.tenantId, license.id);
    const activation = await tx.activation.findFirst({
      where: { licenseId: license.id, deviceId: input.deviceId, deactivatedAt: null },
      select: { id: true, licenseId: true, deviceId: true, deviceName: true, createdAt: true },
    });
    if (!activation) {
      return { deactivated: false as const, message: 'No active installation with this deviceId on this license.', errorCode: 'ActivationNotFound' as const };
    }
    if (await releaseSeat(tx, activation, ctx.now)) {
      await emitEvent(tx, license.tenantId, 'activation.deactivated', activationData({ ...activation, deactivatedAt: ctx.now }), ctx.now);
    }
    return { deactivated: true as const, remainingActivations: remainingActivations({ ...license, currentActivations: license.currentActivations - 1 }) };
  }, SEAT_TRANSACTION);
}
