import { createHmac, timingSafeEqual } from 'node:crypto';
import type { JWK } from 'jose';
import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { requireMember, requireOperator } from '../auth/actor.js';
import type { SecretsContext, ServiceContext, TokenSigner } from '../context.js';
import { parseInput } from '../validation.js';
import { GENESIS, canonical, entryHash, recordedLegacyBoundary, walkChain, type ChainResult, type ChainWalk } from './audit-log.js';
import {
  anchorHead,
  checkpointClaims,
  checkpointData,
  checkpointKeys,
  checkpointSignatureValid,
  findCheckpointTokens,
  newestValidCheckpoint,
  pinnedEntryHolds,
  verifiedCheckpoint,
  type CheckpointRow,
} from './checkpoints.js';

// Verifying the activity log: against checkpoints a company kept (they left the database as they were made, so
// nothing done inside it can change them), against what the database itself holds (its newest signed checkpoint,
// and the newest sealed verdict of an earlier verification), and entry by entry under the HMAC key. Whatever
// disagrees is reported at the first entry it concerns, in words.
//
// Rows written before the chain was keyed (audit_chain_legacy) are taken as plain SHA-256 only up to a position
// that something the server signed or sealed covers: a checkpoint, or a verdict. A boundary planted later, past
// every such anchor, switches nothing off, and one below an anchor cannot hide a rewrite, since the anchor pins the
// hash the rewritten rows would have to reproduce.

type VerdictRow = Prisma.AuditVerdictGetPayload<object>;

/** What something trusted says the chain was at a position. */
interface Anchor {
  seq: number;
  hash: string;
  at: Date | null;
  source: 'kept' | 'database' | 'verdict';
}

/** What became of one checkpoint given to the verification. */
export interface CheckpointReport {
  /** The position it pins (null when the token could not even be read). */
  seq: number | null;
  /** When it was signed. */
  signedAt: Date | null;
  /** extends: the log still holds what it pins; missing: entries it covers are gone; differs: they were changed;
   * unverifiable: not signed by this server (or altered); otherCompany: another company's checkpoint. */
  status: 'extends' | 'missing' | 'differs' | 'unverifiable' | 'otherCompany';
  message: string;
}

export interface LogVerification extends ChainResult {
  /** The stored hash of the newest entry. */
  headHash: string;
  /** What is wrong, in words, at the first entry concerned (null when valid). */
  problem: string | null;
  /** One report per checkpoint given, in the order given. */
  checkpoints: CheckpointReport[];
  verifiedAt: Date;
}

interface Finding {
  /** The first entry concerned; null for findings about no entry (a forged verdict, an unusable checkpoint). */
  seq: number | null;
  problem: string;
}

/** A time in messages: `2026-06-01 12:00:00 UTC`. */
const iso = (date: Date | null) => (date ? date.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC') : 'an unknown time');
const sentence = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

function describeAnchor(anchor: Anchor): string {
  if (anchor.source === 'kept') return `the checkpoint you kept (signed ${iso(anchor.at)})`;
  if (anchor.source === 'database') return `the newest checkpoint in the database (signed ${iso(anchor.at)})`;
  return `the full verification of ${iso(anchor.at)}`;
}

function describeBreak(firstBreak: NonNullable<ChainWalk['firstBreak']>): string {
  const { seq, problem } = firstBreak;
  if (problem === 'content') return `Entry #${seq} was changed: its content no longer gives its hash.`;
  if (problem === 'link') return `Entry #${seq} does not follow entry #${seq - 1}: an entry before it was removed, replaced or reordered.`;
  return `Entry #${seq} is missing.`;
}

/** Whether the chain as walked still holds what an anchor pins; where and why not. */
function judge(anchor: Anchor, walk: ChainWalk): { status: 'extends' | 'missing' | 'differs'; seq: number; message: string } {
  const head = walk.head.seq;
  if (anchor.seq > head) {
    const gone = head + 1 === anchor.seq ? `Entry #${anchor.seq} is missing` : `Entries #${head + 1}–#${anchor.seq} are missing`;
    const now = head === 0 ? 'the log is empty' : `the log ends at #${head}`;
    return { status: 'missing', seq: head + 1, message: `${gone}: ${now}, but ${describeAnchor(anchor)} covers up to #${anchor.seq}.` };
  }
  if (walk.firstBreak && walk.firstBreak.seq <= anchor.seq) {
    return { status: 'differs', seq: walk.firstBreak.seq, message: `${describeBreak(walk.firstBreak)} ${sentence(describeAnchor(anchor))} covers it.` };
  }
  if (walk.hashes.get(anchor.seq) !== anchor.hash) {
    return { status: 'differs', seq: anchor.seq, message: `Entry #${anchor.seq} is not the one ${describeAnchor(anchor)} signed: its hash differs.` };
  }
  return { status: 'extends', seq: anchor.seq, message: `The log extends it: entries #1–#${anchor.seq} are unchanged.` };
}

/** The first finding (by entry; findings about no entry last), as a ChainResult. */
function conclude(findings: Finding[], head: { seq: number }): ChainResult & { problem: string | null } {
  if (findings.length === 0) return { valid: true, entries: head.seq, brokenAtSeq: null, problem: null };
  const [first] = [...findings].sort((a, b) => (a.seq ?? Infinity) - (b.seq ?? Infinity));
  return { valid: false, entries: first.seq === null ? head.seq : first.seq - 1, brokenAtSeq: first.seq, problem: first.problem };
}

// ─── Verdicts ───────────────────────────────────────────────────────────────────────────────────────

type VerdictContent = Omit<VerdictRow, 'id' | 'mac'>;

/** The seal of a verdict: an HMAC under the audit-chain key, so only the server can write one that holds. */
function verdictMac(ctx: Pick<ServiceContext, 'secrets'>, verdict: VerdictContent): string {
  const { verifiedAt, ...rest } = verdict;
  return createHmac('sha256', ctx.secrets.auditChainKey).update(`keyforge-audit-verdict:${canonical({ ...rest, verifiedAt: verifiedAt.toISOString() })}`).digest('hex');
}

function sealed(ctx: Pick<ServiceContext, 'secrets'>, row: VerdictRow): boolean {
  const { id: _id, mac, ...content } = row;
  const expected = Buffer.from(verdictMac(ctx, content));
  const given = Buffer.from(mac);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The tenant's newest verdict, and its newest one that found the log whole (the witness), each with whether the server wrote it. */
async function verdicts(ctx: SecretsContext, tenantId: string) {
  const order = [{ verifiedAt: 'desc' as const }, { id: 'desc' as const }];
  const [newest, newestValid] = await Promise.all([
    ctx.db.prisma.auditVerdict.findFirst({ where: { tenantId }, orderBy: order }),
    ctx.db.prisma.auditVerdict.findFirst({ where: { tenantId, valid: true }, orderBy: order }),
  ]);
  const read = (row: VerdictRow | null) => row && { row, sealed: sealed(ctx, row) };
  return { newest: read(newest), witness: read(newestValid) };
}

async function recordVerdict(ctx: SecretsContext, tenantId: string, content: Omit<VerdictContent, 'tenantId' | 'verifiedAt'>): Promise<void> {
  const verdict: VerdictContent = { tenantId, verifiedAt: ctx.now, ...content };
  await ctx.db.prisma.auditVerdict.create({ data: { ...verdict, mac: verdictMac(ctx, verdict) } });
}

export interface VerdictSummary {
  verifiedAt: Date;
  valid: boolean;
  entries: number;
  brokenAtSeq: number | null;
  problem: string | null;
  /** Checkpoints given from outside (0: the nightly verification against the database's own). */
  keptCheckpoints: number;
  /** False when the record was not written by this server (then it says nothing). */
  genuine: boolean;
}

const summary = (verdict: { row: VerdictRow; sealed: boolean }): VerdictSummary => ({
  verifiedAt: verdict.row.verifiedAt,
  valid: verdict.sealed && verdict.row.valid,
  entries: verdict.row.valid ? verdict.row.headSeq : Math.max(0, (verdict.row.brokenAtSeq ?? 1) - 1),
  brokenAtSeq: verdict.row.brokenAtSeq,
  problem: verdict.sealed ? verdict.row.problem : 'This verification record was not written by this server.',
  keptCheckpoints: verdict.row.externalCheckpoints,
  genuine: verdict.sealed,
});

type ReadVerdict = { row: VerdictRow; sealed: boolean } | null;

/** A verdict the server did not write (the newest, or the newest that found the log whole) is itself a finding. */
function forgedVerdictFindings(found: { newest: ReadVerdict; witness: ReadVerdict }): Finding[] {
  const forged = [found.newest, found.witness].find((verdict) => verdict && !verdict.sealed);
  return forged ? [{ seq: null, problem: `A verification record dated ${iso(forged.row.verifiedAt)} was not written by this server: the database was written to directly.` }] : [];
}

/**
 * What the newest verification that found the log whole saw must still be there: its head entry with the same hash,
 * and the newest checkpoint it saw (so deleting the newest entries together with the checkpoints shows, as long as
 * the verdict is left).
 */
async function witnessFindings(ctx: SecretsContext, tenantId: string, witness: ReadVerdict, keys: JWK[], walkHashes: Map<number, string>): Promise<Finding[]> {
  if (!witness?.sealed) return [];
  const { row } = witness;
  const findings: Finding[] = [];
  if (row.checkpointSeq !== null && row.checkpointHash !== null) {
    const candidates = await ctx.db.prisma.auditCheckpoint.findMany({ where: { tenantId, seq: row.checkpointSeq, hash: row.checkpointHash }, take: 5 });
    let present = false;
    for (const candidate of candidates) if (await checkpointSignatureValid(keys, candidate)) present = true;
    if (!present) findings.push({ seq: row.checkpointSeq, problem: `The checkpoint of entry #${row.checkpointSeq}, seen by the full verification of ${iso(row.verifiedAt)}, was deleted from the database.` });
  }
  if (row.headSeq > 0) {
    const anchor: Anchor = { seq: row.headSeq, hash: row.headHash, at: row.verifiedAt, source: 'verdict' };
    const hash = walkHashes.get(row.headSeq) ?? (await ctx.db.prisma.auditLogEntry.findUnique({ where: { tenantId_seq: { tenantId, seq: row.headSeq } }, select: { hash: true } }))?.hash;
    if (hash === undefined) {
      const last = await ctx.db.prisma.auditLogEntry.findFirst({ where: { tenantId }, orderBy: { seq: 'desc' }, select: { seq: true } });
      const head = last?.seq ?? 0;
      if (head < row.headSeq) findings.push({ seq: head + 1, problem: judge(anchor, { head: { seq: head, hash: GENESIS }, more: false, firstBreak: null, hashes: new Map() }).message });
      else findings.push({ seq: row.headSeq, problem: `Entry #${row.headSeq}, which ${describeAnchor(anchor)} saw, is missing.` });
    } else if (hash !== row.headHash) {
      findings.push({ seq: row.headSeq, problem: `Entry #${row.headSeq} is not the one ${describeAnchor(anchor)} saw: its hash differs.` });
    }
  }
  return findings;
}

/** Why a break inside the recorded pre-key rows was not excused: nothing the server signed or sealed covers them. */
const legacyNote = (recorded: number, honoured: number, seq: number) =>
  recorded > 0 && honoured === 0 && seq <= recorded ? ` Entries up to #${recorded} are recorded as written before the chain was keyed, but nothing this server signed or sealed covers them.` : '';

/**
 * The recorded legacy boundary, when it can be believed: something the server signed or sealed covers it, and the
 * chain does begin with a pre-key entry (a first entry that verifies under the key shows the company never had any,
 * so a boundary recorded for it was planted, and is ignored: the rewritten entries then show as what they are).
 */
async function honouredLegacy(ctx: SecretsContext, tenantId: string, recorded: number, anchors: Anchor[]): Promise<number> {
  if (recorded <= 0 || !anchors.some((anchor) => anchor.seq >= recorded)) return 0;
  const first = await ctx.db.prisma.auditLogEntry.findUnique({ where: { tenantId_seq: { tenantId, seq: 1 } }, omit: { id: true } });
  if (!first) return recorded;
  const { hash, ...content } = first;
  return entryHash(content, ctx.secrets.auditChainKey) === hash ? 0 : recorded;
}

// ─── Full verification ──────────────────────────────────────────────────────────────────────────────

/**
 * Verifies a tenant's whole log: every entry under the HMAC key from the first, and that it still holds what every
 * given checkpoint (`kept`: tokens), the database's newest signed checkpoint and the newest sealed verdict pin.
 * Records the outcome as a new sealed verdict.
 */
export async function verifyLog(ctx: SecretsContext, tenantId: string, kept: string[] = []): Promise<LogVerification> {
  const keys = await checkpointKeys(ctx);
  const [recordedLegacy, newest, found] = await Promise.all([recordedLegacyBoundary(ctx.db.prisma, tenantId), newestValidCheckpoint(ctx, tenantId, keys), verdicts(ctx, tenantId)]);
  const findings: Finding[] = [];
  const reports: (CheckpointReport | Anchor)[] = [];
  for (const token of kept) {
    const verified = await verifiedCheckpoint(keys, token);
    if (!verified) {
      const claims = checkpointClaims(token);
      const report: CheckpointReport = {
        seq: claims?.seq ?? null,
        signedAt: claims?.issuedAt ?? null,
        status: 'unverifiable',
        message: "Its signature does not verify with this server's keys: it was altered, signed elsewhere, or the server's signing keys were replaced.",
      };
      reports.push(report);
      findings.push({ seq: null, problem: `A checkpoint you kept${claims ? ` (entry #${claims.seq})` : ''} cannot be verified: ${report.message}` });
    } else if (verified.tenantId !== tenantId) {
      reports.push({ seq: verified.seq, signedAt: verified.issuedAt, status: 'otherCompany', message: "It is another company's checkpoint." });
      findings.push({ seq: null, problem: "A checkpoint you gave is another company's: it proves nothing about this log." });
    } else {
      reports.push({ seq: verified.seq, hash: verified.hash, at: verified.issuedAt, source: 'kept' });
    }
  }
  const anchors = reports.filter((report): report is Anchor => 'source' in report);
  const own: Anchor[] = [];
  if (newest) own.push({ seq: newest.seq, hash: newest.hash, at: newest.createdAt, source: 'database' });
  const witness = found.witness?.sealed ? found.witness.row : null;
  const trusted = [...anchors, ...own, ...(witness ? [{ seq: witness.headSeq, hash: witness.headHash, at: witness.verifiedAt, source: 'verdict' as const }] : [])];
  const legacyUpTo = await honouredLegacy(ctx, tenantId, recordedLegacy, trusted);
  const walk = await walkChain(ctx.db.prisma, tenantId, ctx.secrets.auditChainKey, { legacyUpTo, at: [...anchors, ...own].map((anchor) => anchor.seq).concat(witness ? [witness.headSeq] : []) });
  if (walk.firstBreak) findings.push({ seq: walk.firstBreak.seq, problem: describeBreak(walk.firstBreak) + legacyNote(recordedLegacy, legacyUpTo, walk.firstBreak.seq) });
  const judged = new Map<Anchor, ReturnType<typeof judge>>();
  for (const anchor of [...anchors, ...own]) {
    const outcome = judge(anchor, walk);
    judged.set(anchor, outcome);
    if (outcome.status !== 'extends') findings.push({ seq: outcome.seq, problem: outcome.message });
  }
  findings.push(...forgedVerdictFindings(found), ...(await witnessFindings(ctx, tenantId, found.witness, keys, walk.hashes)));
  const result = conclude(findings, walk.head);
  const newestHolds = newest && judged.get(own[0])?.status === 'extends';
  await recordVerdict(ctx, tenantId, {
    valid: result.valid,
    headSeq: walk.head.seq,
    headHash: walk.head.hash,
    brokenAtSeq: result.brokenAtSeq,
    problem: result.problem,
    checkpointSeq: newestHolds ? newest.seq : null,
    checkpointHash: newestHolds ? newest.hash : null,
    externalCheckpoints: kept.length,
  });
  return {
    ...result,
    headHash: walk.head.hash,
    verifiedAt: ctx.now,
    checkpoints: reports.map((report) => {
      if (!('source' in report)) return report;
      const outcome = judged.get(report)!;
      return { seq: report.seq, signedAt: report.at, status: outcome.status, message: outcome.message };
    }),
  };
}

/** The kept checkpoints one verification checks, at most (the first ones found in the text). */
export const MAX_KEPT_CHECKPOINTS = 500;
/**
 * The most text a verification takes, refused (InvalidRequest) past it before it is scanned: MAX_KEPT_CHECKPOINTS bare
 * checkpoints (~450 characters each), or about 370 as `audit:checkpoints --all` writes them (with their seq, hash and
 * date); the console's download holds one. Just under the management API's body limit (256 KiB).
 */
export const MAX_CHECKPOINT_TEXT = 250_000;
const VerifyInput = z.object({ checkpoints: z.string().max(MAX_CHECKPOINT_TEXT, `must be at most ${MAX_CHECKPOINT_TEXT.toLocaleString('en-US')} characters: give the checkpoints you kept, not whole logs`) });

/**
 * The console's and CLI's "verify against the checkpoints you kept": `checkpoints` is any text holding checkpoint
 * tokens (a downloaded checkpoint file, `audit.checkpoint` webhook payloads, log lines). Any member may verify.
 */
export async function verifyActivityLog(ctx: ServiceContext, input: { checkpoints: string }): Promise<LogVerification> {
  const tenantId = requireMember(ctx);
  const { checkpoints } = parseInput(VerifyInput, input);
  const tokens = findCheckpointTokens(checkpoints, MAX_KEPT_CHECKPOINTS);
  if (tokens.length === 0) {
    const problem = 'holds no checkpoint: paste or upload the checkpoint files, webhook payloads or log lines you kept';
    throw new AppError('InvalidRequest', `Invalid input: checkpoints: ${problem}`, { fields: { checkpoints: problem } });
  }
  return verifyLog(ctx, tenantId, tokens);
}

/**
 * The nightly full verification of every company (those whose log is empty too: a truncated log is one). Every
 * tenant's log: the server's own job (the system actor) only.
 */
export async function verifyAllChains(ctx: ServiceContext): Promise<{ tenants: number; broken: { tenantId: string; brokenAtSeq: number | null; problem: string | null }[] }> {
  requireOperator(ctx);
  const tenants = await ctx.db.prisma.tenant.findMany({ select: { id: true }, orderBy: { id: 'asc' } });
  const broken: { tenantId: string; brokenAtSeq: number | null; problem: string | null }[] = [];
  for (const { id } of tenants) {
    const result = await verifyLog(ctx, id);
    if (!result.valid) broken.push({ tenantId: id, brokenAtSeq: result.brokenAtSeq, problem: result.problem });
  }
  return { tenants: tenants.length, broken };
}

// ─── The incremental check (every Activity visit, every 15 minutes) ──────────────────────────────────

export interface IntegrityReport extends ChainResult {
  problem: string | null;
  /** The newest full verification's verdict (null before the first). */
  lastFullVerification: VerdictSummary | null;
  /** The newest checkpoint's row, as it leaves the database (null while the log is empty). */
  latestCheckpoint: CheckpointRow | null;
  /** The checkpoint row this check wrote (the head moved on since the newest). */
  written: CheckpointRow | null;
  /**
   * Entries newer than the ones this check reached (0: it reached the head). A visit re-hashes at most
   * INTEGRITY_VISIT_ENTRIES; a longer stretch since the newest checkpoint (a large log never checkpointed, e.g. just
   * after upgrading) is verified a part per visit, each part anchored in a checkpoint, and wholly by the 15-minute job.
   */
  pendingEntries: number;
}

/** Entries one Activity visit re-hashes at most (~25 ms on an idle machine): the rest waits for the next visit or the checkpoint job. */
export const INTEGRITY_VISIT_ENTRIES = 1_000;

/**
 * The check the console asks on every Activity visit, incremental: it starts from the newest checkpoint whose
 * signature verifies, re-checks the entry it pins (present, same hash, content still giving it), re-hashes only
 * newer entries, and holds the log to the sealed verdicts (the head and checkpoint the newest whole one saw still
 * there; the newest one's finding, if it found one). With a signer, a verified new head is anchored in a fresh checkpoint.
 */
export async function checkAuditIntegrity(ctx: SecretsContext, tenantId: string, signer: TokenSigner | null, options: { maxEntries?: number } = {}): Promise<IntegrityReport> {
  const keys = await checkpointKeys(ctx);
  const [recordedLegacy, anchor, found] = await Promise.all([recordedLegacyBoundary(ctx.db.prisma, tenantId), newestValidCheckpoint(ctx, tenantId, keys), verdicts(ctx, tenantId)]);
  const witness = found.witness?.sealed ? found.witness.row : null;
  const described: Anchor | null = anchor && { seq: anchor.seq, hash: anchor.hash, at: anchor.createdAt, source: 'database' };
  const trusted: Anchor[] = described ? [described] : [];
  if (witness) trusted.push({ seq: witness.headSeq, hash: witness.headHash, at: witness.verifiedAt, source: 'verdict' });
  const legacyUpTo = await honouredLegacy(ctx, tenantId, recordedLegacy, trusted);
  const findings: Finding[] = [];
  let from = { seq: 0, hash: GENESIS };
  if (anchor && described) {
    if (await pinnedEntryHolds(ctx, tenantId, anchor, legacyUpTo)) from = { seq: anchor.seq, hash: anchor.hash };
    else findings.push(await pinnedEntryFinding(ctx, tenantId, described));
  }
  let walk: ChainWalk | null = null;
  if (findings.length === 0) {
    walk = await walkChain(ctx.db.prisma, tenantId, ctx.secrets.auditChainKey, { from, legacyUpTo, at: witness && witness.headSeq > from.seq ? [witness.headSeq] : [], maxEntries: options.maxEntries });
    if (walk.firstBreak) findings.push({ seq: walk.firstBreak.seq, problem: describeBreak(walk.firstBreak) + legacyNote(recordedLegacy, legacyUpTo, walk.firstBreak.seq) });
  }
  findings.push(...forgedVerdictFindings(found), ...(await witnessFindings(ctx, tenantId, found.witness, keys, walk?.hashes ?? new Map())));
  // The newest full verification's finding stands until a later one: the Activity page shows it.
  const last = found.newest;
  if (last?.sealed && !last.row.valid) findings.push({ seq: last.row.brokenAtSeq, problem: `The full verification of ${iso(last.row.verifiedAt)} found: ${last.row.problem ?? 'the log does not verify.'}` });
  const storedHead = () => ctx.db.prisma.auditLogEntry.findFirst({ where: { tenantId }, orderBy: { seq: 'desc' }, select: { seq: true, hash: true } });
  const head = (walk && !walk.more ? walk.head : await storedHead()) ?? { seq: 0, hash: GENESIS };
  // When the walk stopped short, what it verified is what this check vouches for (and anchors).
  const verified = walk?.more ? walk.head : head;
  const result = conclude(findings, verified);
  // A head is anchored when the entries since the newest checkpoint verify (that checkpoint's entry included), even
  // while an older finding stands: a checkpoint pins what the log is, and new entries keep leaving the database.
  const written = walk && !walk.firstBreak && signer ? await anchorHead(ctx, signer, tenantId, verified, anchor?.seq ?? null) : null;
  return { ...result, lastFullVerification: last && summary(last), latestCheckpoint: written ?? anchor, written, pendingEntries: head.seq - verified.seq };
}

/** Why the entry the newest checkpoint pins does not hold: gone with the newest entries, gone alone, another hash, or edited. */
async function pinnedEntryFinding(ctx: SecretsContext, tenantId: string, anchor: Anchor): Promise<Finding> {
  const [pinned, last] = await Promise.all([
    ctx.db.prisma.auditLogEntry.findUnique({ where: { tenantId_seq: { tenantId, seq: anchor.seq } }, select: { hash: true } }),
    ctx.db.prisma.auditLogEntry.findFirst({ where: { tenantId }, orderBy: { seq: 'desc' }, select: { seq: true } }),
  ]);
  const head = last?.seq ?? 0;
  if (!pinned && head < anchor.seq) return { seq: head + 1, problem: judge(anchor, { head: { seq: head, hash: GENESIS }, more: false, firstBreak: null, hashes: new Map() }).message };
  if (!pinned) return { seq: anchor.seq, problem: `Entry #${anchor.seq}, which ${describeAnchor(anchor)} pins, is missing.` };
  if (pinned.hash !== anchor.hash) return { seq: anchor.seq, problem: `Entry #${anchor.seq} is not the one ${describeAnchor(anchor)} signed: its hash differs.` };
  return { seq: anchor.seq, problem: `Entry #${anchor.seq} was changed: its content no longer gives its hash. ${sentence(describeAnchor(anchor))} covers it.` };
}

/**
 * Checkpoints every company whose log grew since its newest checkpoint (the 15-minute job); returns them to be logged.
 * Every tenant's log: the server's own job (the system actor) only.
 */
export async function checkpointAllChains(ctx: ServiceContext, signer: TokenSigner): Promise<{ tenants: number; broken: string[]; written: CheckpointRow[] }> {
  requireOperator(ctx);
  const tenants = await ctx.db.prisma.tenant.findMany({ select: { id: true }, orderBy: { id: 'asc' } });
  const broken: string[] = [];
  const written: CheckpointRow[] = [];
  for (const { id } of tenants) {
    const result = await checkAuditIntegrity(ctx, id, signer);
    if (!result.valid) broken.push(id);
    if (result.written) written.push(result.written);
  }
  return { tenants: tenants.length, broken, written };
}

/** The caller's company's incremental check (the console's Activity page), at most INTEGRITY_VISIT_ENTRIES re-hashed. */
export async function activityLogIntegrity(ctx: ServiceContext, signer: TokenSigner | null): Promise<IntegrityReport> {
  return checkAuditIntegrity(ctx, requireMember(ctx), signer, { maxEntries: INTEGRITY_VISIT_ENTRIES });
}

export const CHECKPOINT_FILE_FORMAT = 'keyforge-audit-checkpoints/1';

/**
 * What a company keeps apart from the database: its newest checkpoint (every one with `all`), with the public keys
 * that verify it. The head is anchored first, so the newest checkpoint covers every entry written so far. Give the
 * file back to the console's or CLI's verification later: the log must still extend it.
 */
export async function checkpointFile(ctx: ServiceContext, signer: TokenSigner, options: { all?: boolean } = {}) {
  const tenantId = requireMember(ctx);
  const report = await checkAuditIntegrity(ctx, tenantId, signer);
  const [company, keys, rows] = await Promise.all([
    ctx.db.prisma.tenant.findUniqueOrThrow({ where: { id: tenantId }, select: { name: true, keyPrefix: true } }),
    checkpointKeys(ctx),
    options.all ? ctx.db.prisma.auditCheckpoint.findMany({ where: { tenantId }, orderBy: [{ seq: 'asc' }, { createdAt: 'asc' }] }) : Promise.resolve(null),
  ]);
  const kept = rows ? (await Promise.all(rows.map(async (row) => ((await checkpointSignatureValid(keys, row)) ? row : null)))).filter((row) => row !== null) : report.latestCheckpoint ? [report.latestCheckpoint] : [];
  return {
    format: CHECKPOINT_FILE_FORMAT,
    company: { id: tenantId, name: company.name, keyPrefix: company.keyPrefix },
    savedAt: ctx.now.toISOString(),
    note: 'Signed checkpoints of the activity log. Keep this file outside the service; later, verify the log against it (console: Activity log → Verify against kept checkpoints; or pnpm cli audit:check --tenant <PREFIX> --checkpoints <this file>).',
    jwks: { keys },
    checkpoints: kept.map(checkpointData),
  };
}
