import { randomBytes } from 'node:crypto';
import type { RejectionCode } from '../../domain/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import type { LicensingContext, SecretsContext, SystemContext } from '../context.js';
import { leaseHeldFilter, leaseLapsed, leaseLapsedSql } from '../leases.js';
import { emitEvent } from '../webhooks/events.js';
import { lockLicenseByKey } from '../licenses/license-record.js';
import type { StoredLicenseStatus } from '../licenses/predicates.js';
import { LICENSE_NOT_FOUND, checkEntitlement, parseVersion, productMismatch, rejected, vendorWarning, type Rejection } from '../licenses/rules.js';

type Tx = Prisma.TransactionClient;

/**
 * Lease timing. A checkout or heartbeat grants a 5-minute lease; clients heartbeat every 60 s, so four
 * heartbeats in a row can be lost (a flaky network, a sleeping laptop) before the seat is freed. A crashed
 * client holds its seat for at most LEASE_SECONDS.
 */
export const LEASE_SECONDS = 300;
export const HEARTBEAT_INTERVAL_SECONDS = 60;

/** Why a session ended (`FloatingSession.endReason`). */
export type EndReason = 'checkin' | 'expired' | 'replaced' | 'revoked' | 'suspended' | 'license_expired' | 'floating_disabled' | 'admin';

/** The end reason of a session its license no longer entitles (a heartbeat's refusal). */
const END_REASON: Partial<Record<RejectionCode, EndReason>> = {
  LicenseRevoked: 'revoked',
  Suspended: 'suspended',
  LicenseExpired: 'license_expired',
  FloatingNotEnabled: 'floating_disabled',
};

/** `kfs_` + 256 random bits (base64url). The prefix makes a leaked token recognisable (secret scanners, URL guard). */
export const SESSION_TOKEN_PATTERN = /^kfs_[A-Za-z0-9_-]{43}$/;
/** Something that looks like a session token anywhere in a string (used to refuse and mask tokens in URLs). */
export const SESSION_TOKEN_LIKE_PATTERN = /kfs_[A-Za-z0-9_-]{20,}/i;

// Checkouts of one license queue on its row lock; give a burst of them time to get through.
const CHECKOUT_TRANSACTION = { maxWait: 20_000, timeout: 20_000 } as const;

const SESSION_INVALID: Rejection = { errorCode: 'SessionInvalid', message: 'Unknown session token: check out a new session.' };
const leaseEnd = (now: Date) => new Date(now.getTime() + LEASE_SECONDS * 1000);

/** A session whose lease has lapsed holds no seat, whether or not a sweep has recorded it as ended yet. */
export const sessionLapsed = (session: { leaseExpiresAt: Date }, now: Date) => leaseLapsed(session.leaseExpiresAt, now);
const lapsedSql = (now: Date) => leaseLapsedSql(Prisma.sql`lease_expires_at`, now);
/** The Prisma `where` of the sessions holding a seat at `now`: not ended, lease not lapsed. */
export const heldSessionWhere = (now: Date) => ({ endedAt: null, leaseExpiresAt: leaseHeldFilter(now) }) satisfies Prisma.FloatingSessionWhereInput;

export interface CheckoutInput {
  licenseKey: string;
  deviceId?: string;
  deviceName?: string;
  version?: string;
  /** The application's product name(s): a key of another product is refused before a seat is taken. */
  product?: string | string[];
  ip?: string;
}

/**
 * Takes a floating seat. Under the license row lock: expired leases of the license are recorded as ended,
 * a previous session of the same deviceId is replaced (so a retry after a timeout never takes a second
 * seat), then the active sessions are counted against the pool. Concurrent checkouts therefore never
 * exceed `floatingSeats`.
 */
export async function checkoutFloatingSeat(ctx: LicensingContext, input: CheckoutInput) {
  const version = input.version === undefined ? null : parseVersion(input.version);
  return ctx.db.prisma.$transaction(async (tx) => {
    const license = await lockLicenseByKey(tx, ctx.secrets, input.licenseKey, ctx.now);
    if (!license) return rejected(LICENSE_NOT_FOUND);
    await ctx.chargeTenant(license.tenantId, license.id);
    const rejection = productMismatch(license, input.product) ?? checkEntitlement(license, ctx.now, version);
    if (rejection) return rejected(rejection);
    const { floatingSeats } = await tx.license.findUniqueOrThrow({ where: { id: license.id }, select: { floatingSeats: true } });
    if (floatingSeats === null) {
      return rejected({ errorCode: 'FloatingNotEnabled', message: 'This license has no floating seats: activate it instead.' });
    }

    await sweepLicense(tx, license.id, ctx.now);
    if (input.deviceId) {
      await tx.floatingSession.updateMany({
        where: { licenseId: license.id, deviceId: input.deviceId, endedAt: null },
        data: { endedAt: ctx.now, endReason: 'replaced' satisfies EndReason },
      });
    }
    // After the sweep, every session not ended is active.
    const inUse = await tx.floatingSession.count({ where: { licenseId: license.id, endedAt: null } });
    if (inUse >= floatingSeats) {
      // Denials are throttled: at most one event per license per hour, however often clients retry.
      await emitEvent(tx, license.tenantId, 'floating.checkout_denied', { licenseId: license.id, productId: license.productId, floatingSeats, inUse }, ctx.now, { throttleKey: license.id });
      return rejected({
        errorCode: 'FloatingSeatsExhausted',
        message: `All ${floatingSeats} floating seats of this license are in use. Try again when a session is checked in or its lease expires.`,
      });
    }

    const sessionToken = `kfs_${randomBytes(32).toString('base64url')}`;
    const session = await tx.floatingSession.create({
      data: {
        tenantId: license.tenantId,
        licenseId: license.id,
        tokenDigest: ctx.secrets.digest(sessionToken),
        deviceId: input.deviceId,
        deviceName: input.deviceName,
        ip: input.ip,
        createdAt: ctx.now,
        lastHeartbeatAt: ctx.now,
        leaseExpiresAt: leaseEnd(ctx.now),
      },
      select: { id: true, leaseExpiresAt: true },
    });
    return {
      isValid: true as const,
      sessionToken,
      sessionId: session.id,
      leaseExpiresAt: session.leaseExpiresAt.toISOString(),
      leaseSeconds: LEASE_SECONDS,
      heartbeatIntervalSeconds: HEARTBEAT_INTERVAL_SECONDS,
      floatingSeats,
      remainingFloatingSeats: floatingSeats - inUse - 1,
      productName: license.productName,
      expiresAt: license.expiresAt?.toISOString() ?? null,
      features: license.features,
      vendorWarning: vendorWarning(license.subscriptionEndsAt, ctx.now),
    };
  }, CHECKOUT_TRANSACTION);
}

interface SessionRow {
  id: string;
  tenantId: string;
  licenseId: string;
  endedAt: Date | null;
  endReason: string | null;
  leaseExpiresAt: Date;
  license: { status: StoredLicenseStatus; expiresAt: Date | null; minVersion: string | null; maxVersion: string | null; floatingSeats: number | null };
}

async function findSession(ctx: SecretsContext, sessionToken: string): Promise<SessionRow | null> {
  if (!SESSION_TOKEN_PATTERN.test(sessionToken)) return null;
  return ctx.db.prisma.floatingSession.findUnique({
    where: { tokenDigest: ctx.secrets.digest(sessionToken) },
    select: {
      id: true,
      tenantId: true,
      licenseId: true,
      endedAt: true,
      endReason: true,
      leaseExpiresAt: true,
      license: { select: { status: true, expiresAt: true, minVersion: true, maxVersion: true, floatingSeats: true } },
    },
  });
}

/** Ends a session that has not ended yet; false when it already had (a concurrent checkin, sweep or heartbeat). */
async function endSession(ctx: SystemContext, sessionId: string, endedAt: Date, endReason: EndReason): Promise<boolean> {
  const { count } = await ctx.db.prisma.floatingSession.updateMany({ where: { id: sessionId, endedAt: null }, data: { endedAt, endReason } });
  return count === 1;
}

const sessionExpired = (endReason: string | null) =>
  rejected({
    errorCode: 'SessionExpired',
    message: `This floating session has ended (${endReason ?? 'expired'}): check out a new session.`,
  });

/**
 * Renews a lease. An ended or lapsed lease cannot be revived (SessionExpired: check out again). A revoked
 * or expired license, or one whose floating pool was removed, ends the session here.
 */
export async function heartbeatFloatingSession(ctx: LicensingContext, sessionToken: string) {
  const session = await findSession(ctx, sessionToken);
  if (!session) return rejected(SESSION_INVALID);
  await ctx.chargeTenant(session.tenantId, session.licenseId);
  if (session.endedAt) return sessionExpired(session.endReason);
  if (sessionLapsed(session, ctx.now)) {
    await endSession(ctx, session.id, session.leaseExpiresAt, 'expired');
    return sessionExpired('expired');
  }

  // The checkout's entitlement rule (rules.ts; the version was checked at checkout), then the pool itself.
  const { license } = session;
  const refusal: Rejection | null =
    checkEntitlement(license, ctx.now, null) ?? (license.floatingSeats === null ? { errorCode: 'FloatingNotEnabled', message: 'This license no longer has floating seats.' } : null);
  if (refusal) {
    await endSession(ctx, session.id, ctx.now, END_REASON[refusal.errorCode] ?? 'admin');
    return rejected({ errorCode: refusal.errorCode, message: `${refusal.message} The floating session has ended.` });
  }

  // Conditional on the lease still running, so a concurrent sweep or checkin wins cleanly.
  const leaseExpiresAt = leaseEnd(ctx.now);
  const { count } = await ctx.db.prisma.floatingSession.updateMany({
    where: { id: session.id, ...heldSessionWhere(ctx.now) },
    data: { lastHeartbeatAt: ctx.now, leaseExpiresAt },
  });
  if (count === 0) return sessionExpired('expired');
  return {
    isValid: true as const,
    sessionId: session.id,
    leaseExpiresAt: leaseExpiresAt.toISOString(),
    leaseSeconds: LEASE_SECONDS,
    heartbeatIntervalSeconds: HEARTBEAT_INTERVAL_SECONDS,
  };
}

/**
 * Releases the seat. Idempotent: checking in an ended session answers `checkedIn: true` with how and when
 * it ended. A lease that had already lapsed is recorded as having ended at its expiry.
 */
export async function checkinFloatingSession(ctx: LicensingContext, sessionToken: string) {
  const session = await findSession(ctx, sessionToken);
  if (!session) return { checkedIn: false as const, message: SESSION_INVALID.message, errorCode: SESSION_INVALID.errorCode };
  await ctx.chargeTenant(session.tenantId, session.licenseId);
  let { endedAt, endReason } = session;
  if (!endedAt) {
    const [at, reason]: [Date, EndReason] = sessionLapsed(session, ctx.now) ? [session.leaseExpiresAt, 'expired'] : [ctx.now, 'checkin'];
    if (await endSession(ctx, session.id, at, reason)) {
      [endedAt, endReason] = [at, reason];
    } else {
      ({ endedAt, endReason } = await ctx.db.prisma.floatingSession.findUniqueOrThrow({ where: { id: session.id }, select: { endedAt: true, endReason: true } }));
    }
  }
  return { checkedIn: true as const, sessionId: session.id, endedAt: endedAt!.toISOString(), endReason: endReason ?? 'expired' };
}

/** Inside a checkout: waits for row locks, so a heartbeat racing the sweep is either seen or refused. */
async function sweepLicense(tx: Tx, licenseId: string, now: Date): Promise<void> {
  await tx.$executeRaw`
    UPDATE floating_sessions SET ended_at = lease_expires_at, end_reason = 'expired'
     WHERE license_id = ${licenseId}::uuid AND ended_at IS NULL AND ${lapsedSql(now)}`;
}

/**
 * Records lapsed leases as ended (`endedAt = leaseExpiresAt`, `endReason = 'expired'`) so pool consumption
 * can be charted. Correctness never depends on it: a lapsed lease stops counting by itself. Safe to run
 * on every replica at any time: rows locked by a request in flight are skipped (the next run gets them).
 */
export async function sweepExpiredFloatingSessions(ctx: SystemContext): Promise<number> {
  return ctx.db.prisma.$executeRaw`
    UPDATE floating_sessions SET ended_at = lease_expires_at, end_reason = 'expired'
     WHERE id IN (SELECT id FROM floating_sessions WHERE ended_at IS NULL AND ${lapsedSql(ctx.now)} FOR UPDATE SKIP LOCKED)`;
}
