import { createLocalJWKSet, jwtVerify, type JWK } from 'jose';
import { currentServerSecrets } from '../../crypto/secrets.js';
import type { ServiceContext } from '../context.js';
import { trustedSigningKeys, type TokenSigner } from '../signing/signing-keys.js';
import { GENESIS, entryHash, legacyBoundary, verifyChainFrom, type ChainResult, type Hashable } from './audit-log.js';

// Signed anchors of the activity log's head. The chain is keyed (HMAC), so rows cannot be forged without the
// server secret; a checkpoint (Ed25519, the offline-token keys of /.well-known/jwks.json) additionally pins
// how long the chain was, so deleting the newest rows or truncating is detected, also offline.

type Ctx = Pick<ServiceContext, 'db' | 'secrets' | 'now'>;
const CHECKPOINT_KIND = 'keyforge-audit-checkpoint';
const HUNDRED_YEARS_MS = 100 * 365 * 86_400_000;

export interface Checkpoint {
  tenantId: string;
  seq: number;
  hash: string;
  kid: string;
  signature: string;
  createdAt: Date;
}

export async function signCheckpoint(signer: TokenSigner, tenantId: string, head: { seq: number; hash: string }, now: Date): Promise<Checkpoint> {
  const signature = await signer.sign({ kind: CHECKPOINT_KIND, tid: tenantId, seq: head.seq, hash: head.hash }, { issuedAt: now, expiresAt: new Date(now.getTime() + HUNDRED_YEARS_MS) });
  return { tenantId, seq: head.seq, hash: head.hash, kid: signer.kid, signature, createdAt: now };
}

/** True when the checkpoint's signature is valid under one of `keys` and covers exactly its tenant, seq and hash. */
export async function checkpointSignatureValid(keys: JWK[], checkpoint: Pick<Checkpoint, 'tenantId' | 'seq' | 'hash' | 'signature'>): Promise<boolean> {
  try {
    const { payload } = await jwtVerify(checkpoint.signature, createLocalJWKSet({ keys }), { algorithms: ['EdDSA'] });
    return payload.kind === CHECKPOINT_KIND && payload.tid === checkpoint.tenantId && payload.seq === checkpoint.seq && payload.hash === checkpoint.hash;
  } catch {
    return false;
  }
}

async function writeCheckpoint(ctx: Ctx, signer: TokenSigner, tenantId: string, head: { seq: number; hash: string }) {
  await ctx.db.prisma.auditCheckpoint.create({ data: await signCheckpoint(signer, tenantId, head, ctx.now) });
}

/**
 * The integrity check the console asks on every Activity visit, incremental: it starts from the newest
 * checkpoint whose signature verifies (a row the app's role could plant would not), checks that the row it
 * pins still exists with the same hash, re-hashes only the rows after it, and (with a signer) anchors the
 * new head in a fresh checkpoint.
 */
export async function checkAuditIntegrity(ctx: Ctx, tenantId: string, signer: TokenSigner | null): Promise<ChainResult> {
  const db = ctx.db.prisma;
  const keys = (await trustedSigningKeys(ctx)).map((row) => row.publicJwk as JWK);
  const recent = await db.auditCheckpoint.findMany({ where: { tenantId }, orderBy: [{ seq: 'desc' }, { createdAt: 'desc' }], take: 10 });
  let anchor: (typeof recent)[number] | undefined;
  for (const checkpoint of recent) {
    if (await checkpointSignatureValid(keys, checkpoint)) {
      anchor = checkpoint;
      break;
    }
  }
  let from = { seq: 0, hash: GENESIS };
  if (anchor) {
    const pinned = await db.auditLogEntry.findUnique({ where: { tenantId_seq: { tenantId, seq: anchor.seq } }, select: { hash: true } });
    if (!pinned || pinned.hash !== anchor.hash) {
      // Rewritten (hash differs) or deleted newest rows / truncated (the pinned row is gone).
      const last = pinned ? null : await db.auditLogEntry.findFirst({ where: { tenantId }, orderBy: { seq: 'desc' }, select: { seq: true } });
      const brokenAtSeq = pinned ? anchor.seq : Math.min((last?.seq ?? 0) + 1, anchor.seq);
      return { valid: false, entries: brokenAtSeq - 1, brokenAtSeq };
    }
    from = { seq: anchor.seq, hash: anchor.hash };
  }
  const { head, ...result } = await verifyChainFrom(db, tenantId, ctx.secrets.auditChainKey, from);
  if (result.valid && signer && head.seq > from.seq) await writeCheckpoint(ctx, signer, tenantId, head);
  return result;
}

/** Full re-verification of every tenant's chain (the daily job): logs and records each result. */
export async function verifyAllChains(ctx: Ctx): Promise<{ tenants: number; broken: { tenantId: string; brokenAtSeq: number | null }[] }> {
  const tenants = await ctx.db.prisma.auditLogEntry.findMany({ distinct: ['tenantId'], select: { tenantId: true } });
  const broken: { tenantId: string; brokenAtSeq: number | null }[] = [];
  for (const { tenantId } of tenants) {
    const result = await verifyChainFrom(ctx.db.prisma, tenantId, ctx.secrets.auditChainKey);
    // A broken chain is recorded at the first bad seq with the marker hash BROKEN.
    const record = result.valid ? { seq: result.head.seq, hash: result.head.hash } : { seq: result.brokenAtSeq ?? 0, hash: 'BROKEN' };
    await ctx.db.prisma.auditVerification.upsert({ where: { tenantId }, create: { tenantId, ...record, verifiedAt: ctx.now }, update: { ...record, verifiedAt: ctx.now } });
    if (!result.valid) broken.push({ tenantId, brokenAtSeq: result.brokenAtSeq });
  }
  return { tenants: tenants.length, broken };
}

/** Checkpoints every tenant whose log grew since its last checkpoint (the periodic job). */
export async function checkpointAllChains(ctx: Ctx, signer: TokenSigner): Promise<{ tenants: number; broken: string[] }> {
  const tenants = await ctx.db.prisma.auditLogEntry.findMany({ distinct: ['tenantId'], select: { tenantId: true } });
  const broken: string[] = [];
  for (const { tenantId } of tenants) {
    if (!(await checkAuditIntegrity(ctx, tenantId, signer)).valid) broken.push(tenantId);
  }
  return { tenants: tenants.length, broken };
}

// ─── Export and offline verification ───────────────────────────────────────────────────────────────

export const EXPORT_FORMAT = 'keyforge-audit-export/1';

export interface AuditExport {
  format: typeof EXPORT_FORMAT;
  tenantId: string;
  exportedAt: string;
  /** Rows up to this seq carry plain SHA-256 hashes (written before the chain was keyed). */
  legacyUpToSeq: number;
  /** The public keys of the server at export time; verify against a copy you trust (--jwks). */
  jwks: { keys: JWK[] };
  checkpoints: { seq: number; hash: string; kid: string; signature: string; createdAt: string }[];
  entries: (Omit<Hashable, 'createdAt'> & { createdAt: string; hash: string })[];
}

/** A tenant's whole log with its checkpoints (a fresh one at the head, when a signer is given). */
export async function exportAuditLog(ctx: Ctx, tenantId: string, signer: TokenSigner | null): Promise<AuditExport> {
  await checkAuditIntegrity(ctx, tenantId, signer);
  const db = ctx.db.prisma;
  const [entries, checkpoints, keys, legacyUpToSeq] = await Promise.all([
    db.auditLogEntry.findMany({ where: { tenantId }, orderBy: { seq: 'asc' }, omit: { id: true } }),
    db.auditCheckpoint.findMany({ where: { tenantId }, orderBy: { seq: 'asc' } }),
    trustedSigningKeys(ctx),
    legacyBoundary(db, tenantId),
  ]);
  return {
    format: EXPORT_FORMAT,
    tenantId,
    exportedAt: ctx.now.toISOString(),
    legacyUpToSeq,
    jwks: { keys: keys.map((row) => row.publicJwk as JWK) },
    checkpoints: checkpoints.map(({ seq, hash, kid, signature, createdAt }) => ({ seq, hash, kid, signature, createdAt: createdAt.toISOString() })),
    entries: entries.map((entry) => ({ ...entry, createdAt: entry.createdAt.toISOString() })),
  };
}

export interface ExportVerification {
  valid: boolean;
  entries: number;
  checkpointsVerified: number;
  latestCheckpointSeq: number | null;
  /** Whether each entry's HMAC was recomputed (needs the server secret); otherwise links and checkpoints only. */
  contentVerified: boolean;
  problems: string[];
}

/**
 * Verifies an export offline: every checkpoint's Ed25519 signature (public keys only), the chain's links and
 * order, every checkpoint's row present with the signed hash (so deleting the newest rows or truncating
 * shows), and, when the audit-chain key is given, each entry's content.
 */
export async function verifyAuditExport(doc: AuditExport, options: { jwks?: { keys: JWK[] }; key?: Buffer | null } = {}): Promise<ExportVerification> {
  const problems: string[] = [];
  if (doc.format !== EXPORT_FORMAT) problems.push(`unknown format ${String(doc.format)}`);
  const keys = (options.jwks ?? doc.jwks).keys;
  let checkpointsVerified = 0;
  let latestCheckpointSeq: number | null = null;
  for (const checkpoint of doc.checkpoints) {
    if (!(await checkpointSignatureValid(keys, { ...checkpoint, tenantId: doc.tenantId }))) {
      problems.push(`checkpoint at seq ${checkpoint.seq}: signature does not verify`);
      continue;
    }
    checkpointsVerified++;
    latestCheckpointSeq = Math.max(latestCheckpointSeq ?? 0, checkpoint.seq);
  }
  const bySeq = new Map<number, string>();
  let prevHash = GENESIS;
  doc.entries.forEach((entry, index) => {
    const { hash, ...content } = entry;
    if (entry.seq !== index + 1) problems.push(`entry ${index + 1}: seq ${entry.seq} out of order`);
    if (entry.tenantId !== doc.tenantId) problems.push(`seq ${entry.seq}: another tenant's entry`);
    if (entry.prevHash !== prevHash) problems.push(`seq ${entry.seq}: link to the previous entry broken`);
    if (options.key && entryHash({ ...content, createdAt: new Date(content.createdAt) }, entry.seq <= doc.legacyUpToSeq ? null : options.key) !== hash) {
      problems.push(`seq ${entry.seq}: content does not match its hash`);
    }
    bySeq.set(entry.seq, hash);
    prevHash = hash;
  });
  for (const checkpoint of doc.checkpoints) {
    const hash = bySeq.get(checkpoint.seq);
    if (hash === undefined) problems.push(`checkpoint at seq ${checkpoint.seq}: the entry is missing (newest rows deleted or log truncated)`);
    else if (hash !== checkpoint.hash) problems.push(`checkpoint at seq ${checkpoint.seq}: the entry's hash differs from the signed one`);
  }
  if (checkpointsVerified === 0 && doc.entries.length > 0) problems.push('no checkpoint verifies: the head of the log is not anchored');
  return { valid: problems.length === 0, entries: doc.entries.length, checkpointsVerified, latestCheckpointSeq, contentVerified: Boolean(options.key), problems: problems.slice(0, 50) };
}

/** The audit-chain key of this process (for CLI verification on the server's host). */
export const processAuditChainKey = () => currentServerSecrets().auditChainKey;
