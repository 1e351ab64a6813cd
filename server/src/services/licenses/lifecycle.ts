import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { diffChanges, lockTenantAudit, recordAudit, type AuditAction } from '../audit/audit-log.js';
import { auditActor, requireAdmin } from '../auth/actor.js';
import type { ServiceContext } from '../context.js';
import { parseInput, StorableDate } from '../validation.js';
import { emitEvent, licenseData } from '../webhooks/events.js';
import { licenseEntity } from './license-record.js';
import { findTenantLicense } from './management.js';

// The license lifecycle beyond create/update/revoke: suspend and reinstate (a reversible pause:
// refused by validate/activate/floating/meter with errorCode Suspended, seats kept), renew (a later expiresAt;
// the sent expiry notices are cleared so the thresholds fire again for the new period) and transfer (another
// customer email). Revocation stays final: a revoked license cannot be suspended, reinstated, renewed or
// transferred. CompanyAdmin only; another tenant's license is NotFound. Each change writes one activity entry
// with a `{ before, after }` diff in the same transaction; a call that changes nothing writes nothing.

type Tx = Prisma.TransactionClient;
type License = Awaited<ReturnType<typeof findTenantLicense>>;

export type LicenseLifecycleEventType = 'license.suspended' | 'license.reinstated' | 'license.renewed' | 'license.transferred' | 'license.key_reissued';

export interface LicenseLifecycleEvent {
  type: LicenseLifecycleEventType;
  tenantId: string;
  licenseId: string;
  /** The activity entry's diff. */
  changes: { before: Record<string, unknown>; after: Record<string, unknown> };
}

/**
 * THE place a lifecycle change announces itself, called inside the change's own transaction (after the update
 * and its activity entry). Outbound webhooks write their outbox row here, so an event exists
 * exactly when the change committed (and only for companies with a subscribed endpoint).
 */
export async function emitLicenseLifecycleEvent(tx: Tx, event: LicenseLifecycleEvent, now: Date): Promise<void> {
  const license = await tx.license.findUniqueOrThrow({ where: { id: event.licenseId } });
  await emitEvent(tx, event.tenantId, event.type, { ...licenseData(license), changes: event.changes }, now);
}

export function refuseRevoked(license: License, what: string) {
  if (license.status === 'revoked') {
    throw new AppError('Conflict', `This license is revoked and cannot be ${what}: revocation is final. Create a new license instead.`);
  }
}

/** One lifecycle change of a license: the update (applied only while the license is still `where`), its activity entry and event. */
export interface LifecycleChange {
  action: AuditAction;
  type: LicenseLifecycleEventType;
  where: Prisma.LicenseWhereInput;
  data: Prisma.LicenseUpdateManyMutationInput;
  changes: { before: Record<string, unknown>; after: Record<string, unknown> };
  afterUpdate?: (tx: Tx) => Promise<void>;
}

/** Suspending an active license (the console's action and a payment provider's refund). */
export const suspension = (now: Date): LifecycleChange => ({
  action: 'SuspendLicense',
  type: 'license.suspended',
  where: { status: 'active' },
  data: { status: 'suspended', suspendedAt: now },
  changes: { before: { status: 'active' }, after: { status: 'suspended' } },
});

/** Renewing a license to `expiresAt`; its sent expiry notices are deleted so the thresholds fire again (the console's action and a provider's renewal). */
export const renewal = (license: Pick<License, 'id' | 'expiresAt'>, expiresAt: Date): LifecycleChange => ({
  action: 'RenewLicense',
  type: 'license.renewed',
  where: { expiresAt: license.expiresAt },
  data: { expiresAt },
  changes: diffChanges({ expiresAt: license.expiresAt }, { expiresAt })!,
  afterUpdate: async (tx) => {
    await tx.expiryNotice.deleteMany({ where: { licenseId: license.id } });
  },
});

/** Applies a change in its own transaction and answers the license as it is after it. */
async function change(ctx: ServiceContext, license: License, lifecycle: LifecycleChange) {
  await ctx.db.prisma.$transaction((tx) => writeLifecycleChange(tx, ctx, license, lifecycle));
  return findTenantLicense(ctx, license.tenantId, license.id);
}

/** change() in the caller's transaction (payments/apply.ts applies a provider's event this way); false when the license was no longer in `where`. */
export async function writeLifecycleChange(tx: Tx, ctx: ServiceContext, license: License, { action, type, where, data, changes, afterUpdate }: LifecycleChange): Promise<boolean> {
  await lockTenantAudit(tx, license.tenantId); // before the row: see lockTenantAudit
  const { count } = await tx.license.updateMany({ where: { AND: [{ id: license.id, tenantId: license.tenantId }, where] }, data });
  if (!count) return false;
  await afterUpdate?.(tx);
  const event = { tenantId: license.tenantId, action, entityType: 'License', entityId: license.id, entity: licenseEntity(license, license.product.name), details: changes };
  await recordAudit(tx, event, auditActor(ctx), ctx.now);
  await emitLicenseLifecycleEvent(tx, { type, tenantId: license.tenantId, licenseId: license.id, changes }, ctx.now);
  return true;
}

const IdInput = z.object({ id: z.string().trim().min(1) });

/**
 * Suspends an active (or expired) license: validate, activate, floating checkout/heartbeat and meter answer
 * `Suspended`; its activations keep their seats; no customer expiry emails while suspended. Suspending a suspended
 * license changes nothing. A revoked license: Conflict.
 */
export async function suspendLicense(ctx: ServiceContext, input: { id: string }) {
  const { tenantId } = requireAdmin(ctx);
  const { id } = parseInput(IdInput, input);
  const license = await findTenantLicense(ctx, tenantId, id);
  refuseRevoked(license, 'suspended');
  if (license.status === 'suspended') return license;
  return change(ctx, license, suspension(ctx.now));
}

/** Lifts a suspension: the license is what it was before (its seats were kept). Reinstating an unsuspended license changes nothing; a revoked one: Conflict. */
export async function reinstateLicense(ctx: ServiceContext, input: { id: string }) {
  const { tenantId } = requireAdmin(ctx);
  const { id } = parseInput(IdInput, input);
  const license = await findTenantLicense(ctx, tenantId, id);
  refuseRevoked(license, 'reinstated');
  if (license.status !== 'suspended') return license;
  return change(ctx, license, {
    action: 'ReinstateLicense',
    type: 'license.reinstated',
    where: { status: 'suspended' },
    data: { status: 'active', suspendedAt: null },
    changes: { before: { status: 'suspended' }, after: { status: 'active' } },
  });
}

const RenewInput = z.object({ id: z.string().trim().min(1), expiresAt: StorableDate });

/**
 * Renews/extends: a new expiresAt later than both now and the current one. The license's sent expiry notices are
 * deleted in the same transaction, so the 30/7/1-day thresholds fire again for the new period. A perpetual license
 * has nothing to renew (give it an expiry with updateLicense); a revoked one: Conflict. Allowed while suspended.
 */
export async function renewLicense(ctx: ServiceContext, input: { id: string; expiresAt: Date | string }) {
  const { tenantId } = requireAdmin(ctx);
  const { id, expiresAt } = parseInput(RenewInput, input);
  const license = await findTenantLicense(ctx, tenantId, id);
  refuseRevoked(license, 'renewed');
  const refuse = (reason: string) => {
    throw new AppError('InvalidRequest', `Invalid input: expiresAt: ${reason}`, { fields: { expiresAt: reason } });
  };
  if (license.expiresAt === null) refuse('the license is perpetual (no expiry to extend); set an expiry date with updateLicense instead');
  if (expiresAt.getTime() <= ctx.now.getTime()) refuse('must be in the future');
  if (expiresAt.getTime() <= license.expiresAt!.getTime()) refuse(`must be later than the current expiry (${license.expiresAt!.toISOString()})`);
  return change(ctx, license, renewal(license, expiresAt));
}

const TransferInput = z.object({ id: z.string().trim().min(1), customerEmail: z.string().trim().pipe(z.email().max(320)) });

/** Transfers the license to another customer email (expiry notices go there from now on). The same address changes nothing; a revoked license: Conflict. */
export async function transferLicense(ctx: ServiceContext, input: { id: string; customerEmail: string }) {
  const { tenantId } = requireAdmin(ctx);
  const { id, customerEmail } = parseInput(TransferInput, input);
  const license = await findTenantLicense(ctx, tenantId, id);
  refuseRevoked(license, 'transferred');
  const changes = diffChanges({ customerEmail: license.customerEmail }, { customerEmail });
  if (!changes) return license;
  return change(ctx, license, { action: 'TransferLicense', type: 'license.transferred', where: { customerEmail: license.customerEmail }, data: { customerEmail }, changes });
}
