import { createHash, createHmac } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.js';
import type { Db } from '../../db/database.js';
import { currentServerSecrets } from '../../crypto/secrets.js';

type Tx = Prisma.TransactionClient;

/** Every action the activity log records (docs/integrate/management-api.md "Activity log"). */
export const AUDIT_ACTIONS = [
  'CreateLicense',
  'UpdateLicense',
  'RevokeLicense',
  'SuspendLicense',
  'ReinstateLicense',
  'RenewLicense',
  'TransferLicense',
  'ReissueLicenseKey',
  'DeactivateActivation',
  'IssueLicenseFile',
  'ActivateOffline',
  'DeactivateOffline',
  'Login',
  'Logout',
  'FailedLogin',
  'LockAccount',
  'Reauthenticate',
  'FailedReauthentication',
  'EnableMfa',
  'DisableMfa',
  'UseBackupCode',
  'ChangePassword',
  'CreateUser',
  'UpdateUser',
  'DeactivateUser',
  'ReactivateUser',
  'UnlockAccount',
  'SendPasswordResetLink',
  'ResetPassword',
  'CreateProduct',
  'UpdateProduct',
  'DeleteProduct',
  'CreatePlan',
  'UpdatePlan',
  'DeletePlan',
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
  'CustomerSignIn',
  'CustomerSignOut',
  'CreatePaymentConnection',
  'UpdatePaymentConnection',
  'DeletePaymentConnection',
  'MapPaymentPrice',
  'UnmapPaymentPrice',
  'CreateRelease',
  'UpdateRelease',
  'PublishRelease',
  'YankRelease',
  'DeleteRelease',
  'UploadArtifact',
  'DeleteArtifact',
  'ImportKeygenAccount',
  'SetArtifactTauriSignature',
  'SetMeterQuota',
  'RemoveMeterQuota',
  'EndFloatingSession',
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
export function canonical(value: unknown): string {
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
 * The tenant's activity-log lock, until the transaction ends. recordAudit takes it; a transaction that locks rows and
 * then writes entries takes it first, so that it never waits for it while holding rows another writer of the tenant
 * needs (a deadlock). One order for every writer: this lock, then the rows. payments/apply.ts holds it while it
 * changes licenses, so every change of a license row that is audited (licenses/lifecycle.ts, management.ts,
 * reissue.ts) takes it before its first write of the row. Taking it again in the same transaction is free.
 * Users, products, plans, webhook endpoints and payment connections are the exception, one order among their own
 * writers: the row first (their edits lock it FOR NO KEY UPDATE, their deletes delete it), then this lock. So a new
 * license, or a license moved to another plan, takes its product and plan rows (FOR KEY SHARE, licenses/management.ts
 * lockLicenseParents) before this lock, a payment event its connection's row too (payments/apply.ts), and an event
 * takes its subscribers' endpoint rows without waiting (migration webhook_subscribers_skip_deleted). The company's
 * own row is never locked against the inserts that reference it (migration tenant_unique_partial).
 */
export async function lockTenantAudit(tx: Pick<Tx, '$executeRaw'>, tenantId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('keyforge.audit'), hashtext(${tenantId}))`;
}

/**
 * Appends one entry, inside the caller's transaction (so it commits or rolls back with the change).
 * A per-tenant advisory lock orders concurrent writers; each entry's keyed hash covers the previous one's.
 */
export async function recordAudit(tx: Tx, event: AuditEvent, actor: AuditActor, now: Date): Promise<void> {
  await recordAudits(tx, event.tenantId, [event], actor, now);
}

/**
 * Appends entries of one tenant in order, in one statement (a bulk path's batch: the importer's licenses), chained
 * as recordAudit chains them one by one: the same lock, the head read once, each hash covering the one before.
 */
export async function recordAudits(tx: Tx, tenantId: string, events: readonly AuditEvent[], actor: AuditActor, now: Date): Promise<void> {
  if (!events.length) return;
  if (events.some((event) => event.tenantId !== tenantId)) throw new Error('recordAudits: every entry is of the tenant whose chain it extends');
  await lockTenantAudit(tx, tenantId);
  const last = await tx.auditLogEntry.findFirst({ where: { tenantId }, orderBy: { seq: 'desc' }, select: { seq: true, hash: true } });
  const key = currentServerSecrets().auditChainKey;
  let seq = last?.seq ?? 0;
  let prevHash = last?.hash ?? GENESIS;
  const rows = events.map((event) => {
    const entry: Hashable = {
      tenantId,
      seq: ++seq,
      action: event.action,
      entityType: event.entityType,
      entityId: event.entityId ?? null,
      entity: event.entity,
      actorId: actor.id,
      actor: actor.label,
      ip: actor.ip,
      details: event.details ?? null,
      createdAt: now,
      prevHash,
    };
    prevHash = entryHash(entry, key);
    return { ...entry, details: (entry.details ?? undefined) as Prisma.InputJsonValue | undefined, hash: prevHash };
  });
  await tx.auditLogEntry.createMany({ data: rows });
}

export interface ChainResult {
  valid: boolean;
  /** Entries verified (the head's seq when valid). */
  entries: number;
  brokenAtSeq: number | null;
}

/**
 * The last seq of a tenant's rows hashed before the chain was keyed (0: all keyed), as recorded. Not to be trusted
 * alone (the owner can write the table): services/audit/verification.ts honours it only below a signed checkpoint.
 */
export async function recordedLegacyBoundary(db: Db, tenantId: string): Promise<number> {
  return (await db.auditChainLegacy.findUnique({ where: { tenantId } }))?.lastLegacySeq ?? 0;
}

/** Why an entry does not verify: its content differs from its hash, it does not link to the one before, or the one before is missing. */
export type ChainProblem = 'content' | 'link' | 'missing';

export interface ChainWalk {
  /** The last entry's seq and stored hash (seq 0 and GENESIS for an empty log); with `maxEntries`, the last one walked. */
  head: { seq: number; hash: string };
  /** Entries newer than `head` were left unwalked (`maxEntries` reached). */
  more: boolean;
  /** The first entry that does not verify; null when every entry does. */
  firstBreak: { seq: number; problem: ChainProblem } | null;
  /** The stored hashes at the positions asked for (`at`), of the entries that exist. */
  hashes: Map<number, string>;
}

/**
 * Re-hashes a tenant's chain from a known-good position (after `from.seq`, whose hash is `from.hash`; the genesis by
 * default) to the head and reports the first entry that does not verify. Rows up to `legacyUpTo` are checked with
 * plain SHA-256 (written before the chain was keyed), the others with the HMAC key.
 */
export async function walkChain(
  db: Db,
  tenantId: string,
  key: Buffer,
  options: { from?: { seq: number; hash: string }; legacyUpTo?: number; at?: Iterable<number>; maxEntries?: number } = {},
): Promise<ChainWalk> {
  const { from = { seq: 0, hash: GENESIS }, legacyUpTo = 0, maxEntries = Infinity } = options;
  const wanted = new Set(options.at ?? []);
  const hashes = new Map<number, string>();
  let prevHash = from.hash;
  let expectedSeq = from.seq + 1;
  let firstBreak: ChainWalk['firstBreak'] = null;
  let more = false;
  walk: for (let cursor = from.seq; ; ) {
    const left = maxEntries - (expectedSeq - 1 - from.seq);
    // One row past the budget says whether there is more.
    const batch = await db.auditLogEntry.findMany({ where: { tenantId, seq: { gt: cursor } }, orderBy: { seq: 'asc' }, take: Math.min(5000, left + 1), omit: { id: true } });
    if (batch.length > left) {
      more = true;
      batch.length = left;
    }
    if (batch.length === 0) break;
    for (const row of batch) {
      const { hash, ...content } = row;
      if (wanted.has(row.seq)) hashes.set(row.seq, hash);
      if (row.seq !== expectedSeq) firstBreak = { seq: expectedSeq, problem: 'missing' };
      else if (row.prevHash !== prevHash) firstBreak = { seq: row.seq, problem: 'link' };
      else if (entryHash(content, row.seq <= legacyUpTo ? null : key) !== hash) firstBreak = { seq: row.seq, problem: 'content' };
      if (firstBreak) break walk;
      prevHash = hash;
      expectedSeq++;
    }
    if (more) break;
    cursor = batch[batch.length - 1].seq;
  }
  if (!firstBreak) return { head: { seq: expectedSeq - 1, hash: prevHash }, more, firstBreak, hashes };
  // Broken: the head and the asked-for hashes as they are stored, without hashing further.
  const [last, rest] = await Promise.all([
    db.auditLogEntry.findFirst({ where: { tenantId }, orderBy: { seq: 'desc' }, select: { seq: true, hash: true } }),
    wanted.size ? db.auditLogEntry.findMany({ where: { tenantId, seq: { in: [...wanted] } }, select: { seq: true, hash: true } }) : [],
  ]);
  for (const row of rest) hashes.set(row.seq, row.hash);
  return { head: last ?? { seq: 0, hash: GENESIS }, more: false, firstBreak, hashes };
}

/** Re-hashes from `from` to the head (legacy rows as given); the first entry that does not verify. */
export async function verifyChainFrom(db: Db, tenantId: string, key: Buffer, from: { seq: number; hash: string } = { seq: 0, hash: GENESIS }, legacyUpTo = 0): Promise<ChainResult & { head: { seq: number; hash: string } }> {
  const walk = await walkChain(db, tenantId, key, { from, legacyUpTo });
  if (!walk.firstBreak) return { valid: true, entries: walk.head.seq, brokenAtSeq: null, head: walk.head };
  return { valid: false, entries: walk.firstBreak.seq - 1, brokenAtSeq: walk.firstBreak.seq, head: walk.head };
}

/**
 * Recomputes the tenant's whole keyed chain (every row under the HMAC key; see services/audit/verification.ts for the
 * full verification with checkpoints, verdicts and rows from before the chain was keyed).
 */
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
