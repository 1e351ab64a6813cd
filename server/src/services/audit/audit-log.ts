import { createHash, createHmac } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/database.js';
import { currentServerSecrets } from '../../crypto/secrets.js';

type Tx = Prisma.TransactionClient;

/** Every action the activity log records (spec §2.6). */
export const AUDIT_ACTIONS = [
  'CreateLicense',
  'UpdateLicense',
  'RevokeLicense',
  'SuspendLicense',
  'ReinstateLicense',
  'RenewLicense',
  'TransferLicense',
  'DeactivateActivation',
  'Login',
  'Logout',
  'FailedLogin',
  'LockAccount',
  'EnableMfa',
  'DisableMfa',
  'UseBackupCode',
  'ChangePassword',
  'CreateUser',
  'UpdateUser',
  'DeactivateUser',
  'ReactivateUser',
  'UnlockAccount',
  'CreateProduct',
  'UpdateProduct',
  'DeleteProduct',
  'UpdateCompanySettings',
  'CreateApiKey',
  'RevokeApiKey',
  'InviteUser',
  'RevokeInvitation',
  'CreateWebhookEndpoint',
  'UpdateWebhookEndpoint',
  'DeleteWebhookEndpoint',
  'RotateWebhookSecret',
  'DisableWebhookEndpoint',
  'ResendWebhookDelivery',
  'SendTestWebhookEvent',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Who acted: a user, an API key, or the system. */
export interface AuditActor {
  id: string | null;
  label: string;
  ip: string | null;
}

export interface AuditEvent {
  tenantId: string;
  action: AuditAction;
  entityType: string;
  entityId?: string | null;
  /** Human-readable: a product name, a user email, a key hint. Never a secret. */
  entity: string;
  details?: Record<string, unknown> | null;
}

export const GENESIS = '0'.repeat(64);

/** Deterministic JSON (sorted keys): PostgreSQL's jsonb does not keep key order, the hash must not care. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

export interface Hashable {
  tenantId: string;
  seq: number;
  action: string;
  entityType: string;
  entityId: string | null;
  entity: string;
  actorId: string | null;
  actor: string;
  ip: string | null;
  details: unknown;
  createdAt: Date;
  prevHash: string;
}

/**
 * An entry's hash: HMAC-SHA256 under the server's audit-chain key (ServerSecrets.auditChainKey), or plain
 * SHA-256 for rows written before the chain was keyed (key null; see audit_chain_legacy). Exported for seeds.
 */
export function entryHash(entry: Hashable, key: Buffer | null): string {
  const { createdAt, ...rest } = entry;
  const data = canonical({ ...rest, createdAt: createdAt.toISOString() });
  return (key ? createHmac('sha256', key) : createHash('sha256')).update(data).digest('hex');
}

/**
 * Appends one entry, inside the caller's transaction (so it commits or rolls back with the change).
 * A per-tenant advisory lock orders concurrent writers; each entry's keyed hash covers the previous one's.
 */
export async function recordAudit(tx: Tx, event: AuditEvent, actor: AuditActor, now: Date): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('keyforge.audit'), hashtext(${event.tenantId}))`;
  const last = await tx.auditLogEntry.findFirst({ where: { tenantId: event.tenantId }, orderBy: { seq: 'desc' }, select: { seq: true, hash: true } });
  const entry: Hashable = {
    tenantId: event.tenantId,
    seq: (last?.seq ?? 0) + 1,
    action: event.action,
    entityType: event.entityType,
    entityId: event.entityId ?? null,
    entity: event.entity,
    actorId: actor.id,
    actor: actor.label,
    ip: actor.ip,
    details: event.details ?? null,
    createdAt: now,
    prevHash: last?.hash ?? GENESIS,
  };
  await tx.auditLogEntry.create({
    data: { ...entry, details: (entry.details ?? undefined) as Prisma.InputJsonValue | undefined, hash: entryHash(entry, currentServerSecrets().auditChainKey) },
  });
}

export interface ChainResult {
  valid: boolean;
  /** Entries verified (the head's seq when valid). */
  entries: number;
  brokenAtSeq: number | null;
}

/** The last seq of a tenant's rows hashed before the chain was keyed (0: all keyed). */
export async function legacyBoundary(db: Db, tenantId: string): Promise<number> {
  return (await db.auditChainLegacy.findUnique({ where: { tenantId } }))?.lastLegacySeq ?? 0;
}

/**
 * Re-hashes a tenant's chain from a known-good position (after `fromSeq`, whose hash is `fromHash`) to the
 * head; reports the first entry whose content, link or position does not match.
 */
export async function verifyChainFrom(db: Db, tenantId: string, key: Buffer, from: { seq: number; hash: string } = { seq: 0, hash: GENESIS }): Promise<ChainResult & { head: { seq: number; hash: string } }> {
  const legacyUpTo = await legacyBoundary(db, tenantId);
  let prevHash = from.hash;
  let expectedSeq = from.seq + 1;
  for (let cursor = from.seq; ; ) {
    const batch = await db.auditLogEntry.findMany({ where: { tenantId, seq: { gt: cursor } }, orderBy: { seq: 'asc' }, take: 5000, omit: { id: true } });
    if (batch.length === 0) break;
    for (const row of batch) {
      const { hash, ...content } = row;
      if (row.seq !== expectedSeq || row.prevHash !== prevHash || entryHash(content, row.seq <= legacyUpTo ? null : key) !== hash) {
        return { valid: false, entries: expectedSeq - 1, brokenAtSeq: Math.min(row.seq, expectedSeq), head: { seq: expectedSeq - 1, hash: prevHash } };
      }
      prevHash = hash;
      expectedSeq++;
    }
    cursor = batch[batch.length - 1].seq;
  }
  return { valid: true, entries: expectedSeq - 1, brokenAtSeq: null, head: { seq: expectedSeq - 1, hash: prevHash } };
}

/** Recomputes the tenant's whole chain; reports the first entry whose content or link does not match. */
export async function verifyAuditChain(db: Db, tenantId: string, key: Buffer = currentServerSecrets().auditChainKey): Promise<ChainResult> {
  const { head: _head, ...result } = await verifyChainFrom(db, tenantId, key);
  return result;
}

/** Before/after of the fields that changed, for an update's details. Secrets must not be passed in. */
export function diffChanges<T extends Record<string, unknown>>(before: T, after: Partial<T>): { before: Partial<T>; after: Partial<T> } | null {
  const changedBefore: Partial<T> = {};
  const changedAfter: Partial<T> = {};
  for (const key of Object.keys(after) as (keyof T)[]) {
    if (after[key] === undefined) continue;
    if (canonical(normalise(before[key])) !== canonical(normalise(after[key]))) {
      changedBefore[key] = normalise(before[key]) as T[keyof T];
      changedAfter[key] = normalise(after[key]) as T[keyof T];
    }
  }
  return Object.keys(changedAfter).length ? { before: changedBefore, after: changedAfter } : null;
}

const normalise = (value: unknown) => (value instanceof Date ? value.toISOString() : value ?? null);
