import { createHash } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/database.js';

type Tx = Prisma.TransactionClient;

/** Every action the activity log records (spec §2.6). */
export const AUDIT_ACTIONS = [
  'CreateLicense',
  'UpdateLicense',
  'RevokeLicense',
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
  'CreateProduct',
  'UpdateProduct',
  'DeleteProduct',
  'UpdateCompanySettings',
  'CreateApiKey',
  'RevokeApiKey',
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

const GENESIS = '0'.repeat(64);

/** Deterministic JSON (sorted keys): PostgreSQL's jsonb does not keep key order, the hash must not care. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

interface Hashable {
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

export function entryHash(entry: Hashable): string {
  const { createdAt, ...rest } = entry;
  return createHash('sha256').update(canonical({ ...rest, createdAt: createdAt.toISOString() })).digest('hex');
}

/**
 * Appends one entry, inside the caller's transaction (so it commits or rolls back with the change).
 * A per-tenant advisory lock orders concurrent writers; each entry's hash covers the previous one's.
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
    data: { ...entry, details: (entry.details ?? undefined) as Prisma.InputJsonValue | undefined, hash: entryHash(entry) },
  });
}

/** Recomputes the tenant's chain; reports the first entry whose content or link does not match. */
export async function verifyAuditChain(db: Db, tenantId: string): Promise<{ valid: boolean; entries: number; brokenAtSeq: number | null }> {
  let prevHash = GENESIS;
  let expectedSeq = 1;
  let entries = 0;
  for (let cursor = 0; ; ) {
    const batch = await db.auditLogEntry.findMany({ where: { tenantId, seq: { gt: cursor } }, orderBy: { seq: 'asc' }, take: 1000 });
    if (batch.length === 0) break;
    for (const row of batch) {
      const { id: _id, hash, ...content } = row;
      if (row.seq !== expectedSeq || row.prevHash !== prevHash || entryHash(content) !== hash) {
        return { valid: false, entries, brokenAtSeq: row.seq };
      }
      prevHash = hash;
      expectedSeq++;
      entries++;
    }
    cursor = batch[batch.length - 1].seq;
  }
  return { valid: true, entries, brokenAtSeq: null };
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
