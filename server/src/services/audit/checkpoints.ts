import { createLocalJWKSet, decodeJwt, jwtVerify, type JWK } from 'jose';
import type { Prisma } from '../../generated/prisma/client.js';
import { currentServerSecrets } from '../../crypto/secrets.js';
import { requireOperator } from '../auth/actor.js';
import type { SecretsContext, ServiceContext, TokenSigner } from '../context.js';
import { trustedSigningKeys } from '../signing/signing-keys.js';
import { emitEvent } from '../webhooks/events.js';
import { GENESIS, entryHash, recordedLegacyBoundary, type Hashable } from './audit-log.js';

// Signed anchors of the activity log's head. The chain is keyed (HMAC), so rows cannot be forged without the
// server secret; a checkpoint (Ed25519, the offline-token keys of /.well-known/jwks.json) additionally pins what
// the chain was at a position — and leaves the database as it is made (the `audit.checkpoint` webhook event, a line
// in the process log, the console's download), like a transparency log's signed tree heads handed to witnesses.
// Whoever keeps one detects any later rewrite of the entries it covers (verification.ts), whatever is done to
// the database meanwhile.

const CHECKPOINT_KIND = 'keyforge-audit-checkpoint';
const HUNDRED_YEARS_MS = 100 * 365 * 86_400_000;

export interface Checkpoint {
  tenantId: string;
  seq: number;
  hash: string;
  kid: string;
  /** The compact JWS (EdDSA) over { kind, tid, seq, hash, iat }: the checkpoint as it travels. */
  signature: string;
  createdAt: Date;
}

export async function signCheckpoint(signer: TokenSigner, tenantId: string, head: { seq: number; hash: string }, now: Date): Promise<Checkpoint> {
  const signature = await signer.sign({ kind: CHECKPOINT_KIND, tid: tenantId, seq: head.seq, hash: head.hash }, { issuedAt: now, expiresAt: new Date(now.getTime() + HUNDRED_YEARS_MS) });
  return { tenantId, seq: head.seq, hash: head.hash, kid: signer.kid, signature, createdAt: now };
}

/** True when the checkpoint's signature is valid under one of `keys` and covers exactly its tenant, seq and hash. */
export async function checkpointSignatureValid(keys: JWK[], checkpoint: Pick<Checkpoint, 'tenantId' | 'seq' | 'hash' | 'signature'>): Promise<boolean> {
  const claims = await verifiedCheckpoint(keys, checkpoint.signature);
  return claims !== null && claims.tenantId === checkpoint.tenantId && claims.seq === checkpoint.seq && claims.hash === checkpoint.hash;
}

/** What a checkpoint token (a compact JWS) says, when its signature verifies under one of `keys`; else null. */
export async function verifiedCheckpoint(keys: JWK[], token: string): Promise<{ tenantId: string; seq: number; hash: string; issuedAt: Date | null; kid: string | null } | null> {
  try {
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet({ keys }), { algorithms: ['EdDSA'] });
    if (payload.kind !== CHECKPOINT_KIND || typeof payload.tid !== 'string' || !Number.isInteger(payload.seq) || typeof payload.hash !== 'string') return null;
    return { tenantId: payload.tid, seq: payload.seq as number, hash: payload.hash, issuedAt: typeof payload.iat === 'number' ? new Date(payload.iat * 1000) : null, kid: protectedHeader.kid ?? null };
  } catch {
    return null;
  }
}

/** What a checkpoint token claims, unverified (to say which checkpoint could not be verified); null when it is not one. */
export function checkpointClaims(token: string): { tenantId: string; seq: number; issuedAt: Date | null } | null {
  try {
    const payload = decodeJwt(token);
    if (payload.kind !== CHECKPOINT_KIND || typeof payload.tid !== 'string' || !Number.isInteger(payload.seq)) return null;
    return { tenantId: payload.tid, seq: payload.seq as number, issuedAt: typeof payload.iat === 'number' ? new Date(payload.iat * 1000) : null };
  } catch {
    return null;
  }
}

/** The public keys checkpoints are verified with: this server's genuine signing keys. */
export async function checkpointKeys(ctx: Pick<ServiceContext, 'db' | 'secrets'>): Promise<JWK[]> {
  return (await trustedSigningKeys(ctx)).map((row) => row.publicJwk as JWK);
}

/** A checkpoint as it leaves the database: the `audit.checkpoint` webhook payload, the log line, the console's download. */
export const checkpointData = (checkpoint: Checkpoint) => ({ seq: checkpoint.seq, hash: checkpoint.hash, createdAt: checkpoint.createdAt.toISOString(), checkpoint: checkpoint.signature });

/** A stored checkpoint, with its row's id (what the GraphQL layer's `ActivityLogCheckpoint` resolves from). */
export type CheckpointRow = Prisma.AuditCheckpointGetPayload<object>;

/** Stores a checkpoint and, in the same transaction, its `audit.checkpoint` webhook event; returns the stored row. */
async function writeCheckpoint(ctx: SecretsContext, signer: TokenSigner, tenantId: string, head: { seq: number; hash: string }): Promise<CheckpointRow> {
  const checkpoint = await signCheckpoint(signer, tenantId, head, ctx.now);
  return ctx.db.prisma.$transaction(async (tx) => {
    const row = await tx.auditCheckpoint.create({ data: checkpoint });
    await emitEvent(tx, tenantId, 'audit.checkpoint', checkpointData(row), ctx.now);
    return row;
  });
}

/**
 * The tenant's newest checkpoint whose signature verifies (a row the app's role could plant would not), looking
 * further back while the newest rows do not verify.
 */
export async function newestValidCheckpoint(ctx: Pick<ServiceContext, 'db'>, tenantId: string, keys: JWK[]): Promise<CheckpointRow | null> {
  for (let skip = 0; skip < 1000; skip += 20) {
    const rows = await ctx.db.prisma.auditCheckpoint.findMany({ where: { tenantId }, orderBy: [{ seq: 'desc' }, { createdAt: 'desc' }], skip, take: 20 });
    for (const row of rows) if (await checkpointSignatureValid(keys, row)) return row;
    if (rows.length < 20) return null;
  }
  return null;
}

/** Writes a checkpoint of a verified head when it is newer than the newest one (returns it, for the caller to log). */
export async function anchorHead(ctx: SecretsContext, signer: TokenSigner, tenantId: string, head: { seq: number; hash: string }, newestSeq: number | null): Promise<CheckpointRow | null> {
  if (head.seq === 0 || (newestSeq !== null && head.seq <= newestSeq)) return null;
  return writeCheckpoint(ctx, signer, tenantId, head);
}

/** Re-checks the entry a checkpoint pins: it must exist with the signed hash and its content must still give that hash. */
export async function pinnedEntryHolds(ctx: SecretsContext, tenantId: string, pin: { seq: number; hash: string }, legacyUpTo: number): Promise<boolean> {
  const row = await ctx.db.prisma.auditLogEntry.findUnique({ where: { tenantId_seq: { tenantId, seq: pin.seq } }, omit: { id: true } });
  if (!row || row.hash !== pin.hash) return false;
  const { hash, ...content } = row;
  return entryHash(content, row.seq <= legacyUpTo ? null : ctx.secrets.auditChainKey) === hash;
}

// ─── Export and offline verification ───────────────────────────────────────────────────────────────

export const EXPORT_FORMAT = 'keyforge-audit-export/1';

export interface AuditExport {
  format: typeof EXPORT_FORMAT;
  tenantId: string;
  exportedAt: string;
  /** Rows up to this seq carry plain SHA-256 hashes (written before the chain was keyed), as recorded. */
  legacyUpToSeq: number;
  /** The public keys of the server at export time; verify against a copy you trust (--jwks). */
  jwks: { keys: JWK[] };
  checkpoints: { seq: number; hash: string; kid: string; signature: string; createdAt: string }[];
  entries: (Omit<Hashable, 'createdAt'> & { createdAt: string; hash: string })[];
}

/**
 * A tenant's whole log with its checkpoints (run after an integrity check, so the head is anchored). The
 * operator's (the CLI's `audit:export`): the export holds every entry's details, across the tenant's history.
 */
export async function exportAuditLog(ctx: ServiceContext, tenantId: string): Promise<AuditExport> {
  requireOperator(ctx);
  const db = ctx.db.prisma;
  const [entries, checkpoints, keys, legacyUpToSeq] = await Promise.all([
    db.auditLogEntry.findMany({ where: { tenantId }, orderBy: { seq: 'asc' }, omit: { id: true } }),
    db.auditCheckpoint.findMany({ where: { tenantId }, orderBy: { seq: 'asc' } }),
    checkpointKeys(ctx),
    recordedLegacyBoundary(db, tenantId),
  ]);
  return {
    format: EXPORT_FORMAT,
    tenantId,
    exportedAt: ctx.now.toISOString(),
    legacyUpToSeq,
    jwks: { keys },
    checkpoints: checkpoints.map(({ seq, hash, kid, signature, createdAt }) => ({ seq, hash, kid, signature, createdAt: createdAt.toISOString() })),
    entries: entries.map((entry) => ({ ...entry, createdAt: entry.createdAt.toISOString() })),
  };
}

export interface ExportVerification {
  valid: boolean;
  entries: number;
  checkpointsVerified: number;
  /** Of those, checkpoints kept apart from the export (--checkpoints). */
  keptCheckpointsVerified: number;
  latestCheckpointSeq: number | null;
  /** Whether each entry's HMAC was recomputed (needs the server secret); otherwise links and checkpoints only. */
  contentVerified: boolean;
  problems: string[];
}

/**
 * Verifies an export offline: every checkpoint's Ed25519 signature (public keys only) — the export's own and any
 * kept apart from it (`kept`: checkpoint tokens) — the chain's links and order, every checkpoint's entry present
 * with the signed hash (so deleting the newest rows or truncating shows), and, when the audit-chain key is given,
 * each entry's content. Rows before the recorded legacy boundary are taken as SHA-256 only below a checkpoint.
 */
export async function verifyAuditExport(doc: AuditExport, options: { jwks?: { keys: JWK[] }; key?: Buffer | null; kept?: string[] } = {}): Promise<ExportVerification> {
  const problems: string[] = [];
  if (doc.format !== EXPORT_FORMAT) problems.push(`unknown format ${String(doc.format)}`);
  const keys = (options.jwks ?? doc.jwks).keys;
  const anchors: { seq: number; hash: string; kept: boolean }[] = [];
  for (const checkpoint of doc.checkpoints) {
    if (await checkpointSignatureValid(keys, { ...checkpoint, tenantId: doc.tenantId })) anchors.push({ seq: checkpoint.seq, hash: checkpoint.hash, kept: false });
    else problems.push(`checkpoint at seq ${checkpoint.seq}: signature does not verify`);
  }
  for (const token of options.kept ?? []) {
    const claims = await verifiedCheckpoint(keys, token);
    if (!claims) problems.push(`kept checkpoint${describeClaims(token)}: signature does not verify with these keys`);
    else if (claims.tenantId !== doc.tenantId) problems.push(`kept checkpoint at seq ${claims.seq}: of another company`);
    else anchors.push({ seq: claims.seq, hash: claims.hash, kept: true });
  }
  const latestCheckpointSeq = anchors.length ? Math.max(...anchors.map((anchor) => anchor.seq)) : null;
  const legacyUpTo = latestCheckpointSeq !== null && doc.legacyUpToSeq <= latestCheckpointSeq ? doc.legacyUpToSeq : 0;
  const bySeq = new Map<number, string>();
  let prevHash = GENESIS;
  doc.entries.forEach((entry, index) => {
    const { hash, ...content } = entry;
    if (entry.seq !== index + 1) problems.push(`entry ${index + 1}: seq ${entry.seq} out of order`);
    if (entry.tenantId !== doc.tenantId) problems.push(`seq ${entry.seq}: another tenant's entry`);
    if (entry.prevHash !== prevHash) problems.push(`seq ${entry.seq}: link to the previous entry broken`);
    if (options.key && entryHash({ ...content, createdAt: new Date(content.createdAt) }, entry.seq <= legacyUpTo ? null : options.key) !== hash) {
      problems.push(`seq ${entry.seq}: content does not match its hash`);
    }
    bySeq.set(entry.seq, hash);
    prevHash = hash;
  });
  for (const anchor of anchors) {
    const what = anchor.kept ? 'kept checkpoint' : 'checkpoint';
    const hash = bySeq.get(anchor.seq);
    if (hash === undefined) problems.push(`${what} at seq ${anchor.seq}: the entry is missing (newest rows deleted or log truncated)`);
    else if (hash !== anchor.hash) problems.push(`${what} at seq ${anchor.seq}: the entry's hash differs from the signed one`);
  }
  if (anchors.length === 0 && doc.entries.length > 0) problems.push('no checkpoint verifies: the head of the log is not anchored');
  return {
    valid: problems.length === 0,
    entries: doc.entries.length,
    checkpointsVerified: anchors.length,
    keptCheckpointsVerified: anchors.filter((anchor) => anchor.kept).length,
    latestCheckpointSeq,
    contentVerified: Boolean(options.key),
    problems: problems.slice(0, 50),
  };
}

/** " at seq N" for a token that claims to be a checkpoint, else "" (for messages about tokens that do not verify). */
function describeClaims(token: string): string {
  const claims = checkpointClaims(token);
  return claims ? ` at seq ${claims.seq}` : '';
}

/** Runs of the characters a compact JWS is made of (base64url and its dots): one pass, nothing to backtrack into. */
const JWS_RUNS = /[A-Za-z0-9_.-]+/g;

/**
 * Checkpoint tokens (compact JWS) anywhere in a text: a file of them, webhook payloads, log lines, the console's
 * download. A hand-rolled scan, linear in the text: each run of base64url characters and dots is split at its dots,
 * and three consecutive segments make a candidate when the first holds `eyJ` followed by at least 10 characters (a
 * JSON header; what comes before it in the segment, such as the `n` of an escaped `\n`, is not part of the token),
 * the second is a whole `eyJ…` segment of at least 13 characters and the third at least 20 (an Ed25519 signature is
 * 86). A regular expression over the whole text with `{10,}` before a `.` backtracks over every `eyJ` of a long run
 * (quadratic); this never looks at a character more than a fixed number of times.
 */
export function findCheckpointTokens(text: string, limit = 1000): string[] {
  const found = new Set<string>();
  for (const run of text.matchAll(JWS_RUNS)) {
    const segments = run[0].split('.'); // base64url only, by construction of the run
    for (let i = 0; i + 2 < segments.length; i += 1) {
      const [header, payload, signature] = [segments[i], segments[i + 1], segments[i + 2]];
      const start = header.indexOf('eyJ');
      if (start < 0 || header.length - start < 13 || !payload.startsWith('eyJ') || payload.length < 13 || signature.length < 20) continue;
      const token = `${header.slice(start)}.${payload}.${signature}`;
      if (checkpointClaims(token)) found.add(token);
      if (found.size >= limit) return [...found];
      i += 2;
    }
  }
  return [...found];
}

/** The audit-chain key of this process (for CLI verification on the server's host). */
export const processAuditChainKey = () => currentServerSecrets().auditChainKey;
