import { randomUUID } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.js';
import { sha256 } from '../../crypto/secrets.js';
import { AppError } from '../../domain/errors.js';
import type { LicensingContext } from '../context.js';
import { activationData, emitEvent, eventBody } from '../webhooks/events.js';
import { consumeNonce, NONCE_INVALID, requireNonce } from './nonces.js';
import { findLicenseByKey, lockLicenseByKey, type LicenseRecord } from './license-record.js';
import {
  LICENSE_NOT_FOUND,
  checkEntitlement,
  daysRemaining,
  parseVersion,
  productMismatch,
  rejected,
  remainingActivations,
  vendorWarning,
  type Rejection,
} from './rules.js';

type Tx = Prisma.TransactionClient;

export interface ActivateInput {
  licenseKey: string;
  nonce?: string;
  deviceId?: string;
  deviceName?: string;
  version?: string;
  userEmail?: string;
  /** The product name(s) the application is for: a license of another product (not a bundle with one of them) is refused. */
  product?: string | string[];
  ip?: string;
}

// Seat changes of one license queue on its row lock; give a burst of them time to get through.
export const SEAT_TRANSACTION = { maxWait: 20_000, timeout: 20_000 } as const;

/** The activation in one statement (migration activation_register; also bench/floor.ts's). */
export const ACTIVATION_REGISTER = 'SELECT * FROM activation_register($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)';

/** What activation_register (migration activation_register) did, with the license's seats after it. */
export interface Registration {
  outcome: 'changed' | 'nonce_invalid' | 'seats_exhausted' | 'reused' | 'activated';
  seats_used: number;
  max_activations: number;
}

// A license whose status or expiry changes between the read and the lock is read again; more than a few changes
// within one activation means something rewrites it in a loop.
export const MAX_READS = 3;

/**
 * Registers an installation. The entitlement is decided here on the license as read; then one statement
 * (activation_register) locks the license row, checks it is still as read, spends the nonce and takes the seat,
 * writes the activation and its webhook event, in one short transaction. The row lock makes "same deviceId reuses
 * its seat" and "never more than maxActivations" hold under concurrency, and makes a retry after an uncertain
 * timeout (same deviceId) safe. A rejected activation spends its nonce too.
 *
 * The product check (`product` sent) is one of those decisions on the license as read, so a key of another product
 * is refused before activation_register runs: no seat is taken. A license's product never changes, and the names it
 * is matched against are those of the same read that status and expiry are re-checked from under the lock.
 */
export async function activateLicense(ctx: LicensingContext, input: ActivateInput) {
  const version = input.version === undefined ? null : parseVersion(input.version);
  const nonce = requireNonce(input.nonce);
  for (let read = 1; ; read++) {
    const license = await findLicenseByKey(ctx.db.sql, ctx.secrets, input.licenseKey, ctx.now);
    // One activation is charged once against its company's and license's limits, whatever the re-reads.
    if (license && read === 1) await ctx.chargeTenant(license.tenantId, license.id);
    const rejection = license ? activationRejection(license, ctx.now, version, input) : LICENSE_NOT_FOUND;
    if (!license || rejection) {
      await consumeNonce(ctx.db.prisma, nonce, ctx.now);
      return rejected(rejection!);
    }

    const activationId = randomUUID();
    const eventId = randomUUID();
    const activation = { id: activationId, licenseId: license.id, deviceId: input.deviceId ?? null, deviceName: input.deviceName ?? null, createdAt: ctx.now };
    const body = eventBody({ id: eventId, type: 'activation.created', createdAt: ctx.now, tenantId: license.tenantId, data: activationData(activation) });
    const [registration] = await ctx.db.sql.query<Registration>(
      ACTIVATION_REGISTER,
      [license.id, license.status, license.expiresAt, sha256(nonce), ctx.now, activationId, input.deviceId ?? null, input.deviceName ?? null, input.version ?? null, input.userEmail ?? null, input.ip ?? null, eventId, body],
    );
    switch (registration.outcome) {
      case 'changed':
        if (read < MAX_READS) continue;
        throw new AppError('ServiceUnavailable', 'The license is being changed right now; retry shortly.', { retryAfterSeconds: 1 });
      case 'nonce_invalid':
        throw new AppError('NonceInvalid', NONCE_INVALID);
      case 'seats_exhausted':
        return rejected(await seatsExhausted(ctx, license, registration));
    }
    return {
      isValid: true as const,
      productName: license.productName,
      remainingActivations: remainingActivations({ maxActivations: registration.max_activations, currentActivations: registration.seats_used }),
      expiresAt: license.expiresAt?.toISOString() ?? null,
      features: license.features,
      isTrial: license.isTrial,
      ...(license.isTrial ? { trialDaysRemaining: license.expiresAt ? daysRemaining(license.expiresAt, ctx.now) : null } : {}),
      nodeLocked: license.nodeLocked,
      offlineGraceDays: license.offlineGraceDays,
      vendorWarning: vendorWarning(license.subscriptionEndsAt, ctx.now),
    };
  }
}

/** The SeatsExhausted rejection, and its webhook event (throttled: at most one per license per hour, however often clients retry). */
export async function seatsExhausted(ctx: Pick<LicensingContext, 'db' | 'now'>, license: Pick<LicenseRecord, 'id' | 'tenantId' | 'productId'>, registration: Registration): Promise<Rejection> {
  const data = { licenseId: license.id, productId: license.productId, maxActivations: registration.max_activations, currentActivations: registration.seats_used };
  await emitEvent(ctx.db.prisma, license.tenantId, 'license.seats_exhausted', data, ctx.now, { throttleKey: license.id });
  return {
    errorCode: 'SeatsExhausted',
    message: `All ${registration.max_activations} activations of this license are in use. Deactivate an installation to free a seat.`,
  };
}

export function activationRejection(license: LicenseRecord, now: Date, version: ReturnType<typeof parseVersion> | null, input: Pick<ActivateInput, 'deviceId' | 'product'>): Rejection | null {
  return (
    productMismatch(license, input.product) ??
    checkEntitlement(license, now, version) ??
    (license.nodeLocked && !input.deviceId
      ? { errorCode: 'DeviceIdRequired', message: 'This license is node-locked: send the deviceId (SHA-256 hardware fingerprint) of this machine.' }
      : null)
  );
}

/** lastSeenAt is written at most once per device per this interval: device-scoped validates do not write per request. */
export const LAST_SEEN_INTERVAL_MS = 5 * 60_000;

export const DEVICE_NOT_ACTIVATED: Rejection = {
  errorCode: 'DeviceNotActivated',
  message: 'This device holds no activation of this license (never activated, or deactivated since). Activate it again.',
};

/**
 * The device-scoped check of validate in one statement (also bench/floor.ts's): the device's active activation of the
 * license, its lastSeenAt refreshed when older than $5. $1 tenant, $2 license, $3 device, $4 now.
 */
export const TOUCH_ACTIVE_DEVICE = `WITH device AS (
       SELECT id FROM activations
        WHERE tenant_id = $1 AND license_id = $2 AND device_id = $3 AND deactivated_at IS NULL
        LIMIT 1
     ), seen AS (
       UPDATE activations a SET last_seen_at = $4 FROM device WHERE a.id = device.id AND a.last_seen_at < $5
     )
     SELECT id FROM device`;

/**
 * Whether `deviceId` holds an active activation of the license (validate's device-scoped opt-in). In the same
 * statement its lastSeenAt moves to now when older than LAST_SEEN_INTERVAL_MS: the condition sits on the updated row,
 * so concurrent validates of one device write it once, and a device validating every second writes once per interval.
 */
export async function touchActiveDevice(ctx: LicensingContext, license: Pick<LicenseRecord, 'id' | 'tenantId'>, deviceId: string): Promise<boolean> {
  const rows = await ctx.db.sql.query<{ id: string }>(TOUCH_ACTIVE_DEVICE, [license.tenantId, license.id, deviceId, ctx.now, new Date(ctx.now.getTime() - LAST_SEEN_INTERVAL_MS)]);
  return rows.length > 0;
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
    const license = await lockLicenseByKey(tx, ctx.secrets, input.licenseKey, ctx.now);
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
