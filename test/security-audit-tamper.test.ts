import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entryHash } from '../server/src/services/audit/audit-log.js';
import { auditCheckpointJob, auditVerifyJob } from '../server/src/jobs/audit-integrity.js';
import type { JobContext } from '../server/src/jobs/types.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { MAX_CHECKPOINT_TEXT, MAX_KEPT_CHECKPOINTS } from '../server/src/services/audit/verification.js';
import { runCli } from './support/processes.js';

// The tamper matrix, played as the database's owner (the schema owner, here also a superuser:
// it switches the append-only triggers off, rewrites, deletes and truncates at will). Whoever kept one signed
// checkpoint from before the tampering detects it — the checkpoint file downloaded from the console, the line of the
// process log, the `audit.checkpoint` webhook payload — and so does every check inside the database that can: the
// Activity page's incremental check, the nightly full verification (which records a sealed verdict), and the
// Activity page again, which shows that verdict.

let t: TestApp;
let owner: pg.Client;
beforeAll(async () => {
  t = await startTestApp();
  await t.setupAdmin();
  owner = new pg.Client({ connectionString: t.ownerUrl });
  await owner.connect();
});
afterAll(async () => {
  await owner.end();
  await t.close();
});

const INTEGRITY = '{ activityLogIntegrity { valid entries brokenAtSeq problem lastFullVerification { valid brokenAtSeq verifiedAt } latestCheckpoint { seq checkpoint } } }';
const VERIFY = 'query($checkpoints: String!) { activityLogVerification(checkpoints: $checkpoints) { valid entries brokenAtSeq problem checkpoints { seq status message } } }';
const jobCtx = (): JobContext => ({ db: t.deps.db, now: t.clock.now(), publicUrl: t.config.publicUrl, transport: undefined as never, webhookAllowPrivate: false, logger: t.deps.logger });

interface Company {
  prefix: string;
  tenantId: string;
  /** A read-only API key of the company. */
  apiKey: string;
  /** The entry the console's checkpoint file pins. */
  c1: number;
  /** The head when the 15-minute job signed its checkpoint (and the nightly job verified). */
  n: number;
  /** What the company kept, as it arrived: the downloaded file, the log line, the webhook event body. */
  kept: string;
}

/** A company whose checkpoints left the database through all three channels, verified once by the nightly job. */
async function prepare(prefix: string): Promise<Company> {
  const tenant = await t.seedTenant({ name: prefix, keyPrefix: prefix });
  const user = await t.seedUser(tenant.id, { email: `admin@${prefix.toLowerCase()}.test` });
  const { token } = await t.login(user.email);
  const hook = await t.gql('mutation { createWebhookEndpoint(input: { url: "https://receiver.example/hooks", eventTypes: [AUDIT_CHECKPOINT] }) { endpoint { id } } }', {}, { token });
  expect(hook.errors).toBeUndefined();
  // The checks below run as a read-only member would (an API key: the test clock outlives access tokens).
  const key = await t.gql('mutation { createApiKey(input: { name: "auditor", role: READ_ONLY }) { key } }', {}, { token });
  const apiKey = key.data.createApiKey.key as string;
  for (let i = 0; i < 3; i++) await t.seedProduct(tenant.id, `Product ${i}`);
  t.clock.advance(60_000);
  // 1. The console's download: the newest checkpoint (the head anchored first) with the public keys.
  const download = await t.gql('{ activityLogCheckpointFile }', {}, { apiKey });
  expect(download.errors).toBeUndefined();
  const file = download.data.activityLogCheckpointFile;
  expect(file).toMatchObject({ format: 'keyforge-audit-checkpoints/1', company: { keyPrefix: prefix }, jwks: { keys: [expect.objectContaining({ kty: 'OKP' })] } });
  const c1 = file.checkpoints[0].seq as number;
  for (let i = 3; i < 6; i++) await t.seedProduct(tenant.id, `Product ${i}`);
  t.clock.advance(15 * 60_000);
  // 2. The 15-minute job: a checkpoint per grown log, logged and sent as a webhook event as it is made.
  const run = await auditCheckpointJob.run(jobCtx());
  expect(run.checkpoints).toBeGreaterThanOrEqual(1);
  const n = (await t.prisma.auditLogEntry.count({ where: { tenantId: tenant.id } })) as number;
  const logLine = t.logs.filter((line) => line.includes('"msg":"activity log checkpoint"') && line.includes(tenant.id)).at(-1)!;
  expect(JSON.parse(logLine).auditCheckpoint).toMatchObject({ seq: n, checkpoint: expect.stringMatching(/^eyJ/) });
  const event = await t.prisma.webhookEvent.findFirstOrThrow({ where: { tenantId: tenant.id, type: 'audit.checkpoint' }, orderBy: { createdAt: 'desc' } });
  expect(JSON.parse(event.body)).toMatchObject({ type: 'audit.checkpoint', data: { seq: n, checkpoint: JSON.parse(logLine).auditCheckpoint.checkpoint } });
  expect(await t.prisma.webhookDelivery.count({ where: { eventId: event.id } })).toBe(1);
  // 3. The nightly full verification, before anything happens.
  t.clock.advance(60 * 60_000);
  await auditVerifyJob.run(jobCtx());
  expect(await t.prisma.auditVerdict.findFirstOrThrow({ where: { tenantId: tenant.id } })).toMatchObject({ valid: true, headSeq: n });
  t.clock.advance(60_000);
  const company = { prefix, tenantId: tenant.id, apiKey, c1, n, kept: [JSON.stringify(file, null, 2), logLine, event.body].join('\n') };
  // Before: everything holds, and the kept checkpoints verify.
  expect(await integrity(company)).toMatchObject({ valid: true, brokenAtSeq: null, problem: null, lastFullVerification: { valid: true } });
  const before = await external(company);
  expect(before).toMatchObject({ valid: true, brokenAtSeq: null, problem: null });
  // Two checkpoints: the file's, and the job's (the log line and the webhook event carry the same one).
  expect(before.checkpoints.map((c: { seq: number; status: string }) => [c.seq, c.status])).toEqual([[c1, 'EXTENDS'], [n, 'EXTENDS']]);
  return company;
}

const integrity = async (c: Company) => {
  const response = await t.gql(INTEGRITY, {}, { apiKey: c.apiKey });
  expect(response.errors).toBeUndefined();
  return response.data.activityLogIntegrity;
};
const external = async (c: Company) => {
  const response = await t.gql(VERIFY, { checkpoints: c.kept }, { apiKey: c.apiKey });
  expect(response.errors).toBeUndefined();
  return response.data.activityLogVerification;
};
const nightly = async (c: Company) => {
  t.clock.advance(24 * 3600_000);
  await auditVerifyJob.run(jobCtx());
  return t.prisma.auditVerdict.findFirstOrThrow({ where: { tenantId: c.tenantId }, orderBy: { verifiedAt: 'desc' } });
};

/** The owner's statements, with the append-only triggers of the log and its checkpoints switched off around them. */
async function asOwner(statements: [string, unknown[]?][]) {
  await owner.query('BEGIN');
  try {
    await owner.query('ALTER TABLE audit_log DISABLE TRIGGER USER');
    await owner.query('ALTER TABLE audit_checkpoints DISABLE TRIGGER USER');
    for (const [sql, values] of statements) await owner.query(sql, values);
    await owner.query('ALTER TABLE audit_log ENABLE TRIGGER USER');
    await owner.query('ALTER TABLE audit_checkpoints ENABLE TRIGGER USER');
    await owner.query('COMMIT');
  } catch (error) {
    await owner.query('ROLLBACK');
    throw error;
  }
}

/** Entry `from` gets new content; it and every later entry get plain SHA-256 hashes that link up (the unkeyed chain). */
async function recomputeUnkeyed(c: Company, from: number) {
  const rows = await t.prisma.auditLogEntry.findMany({ where: { tenantId: c.tenantId }, orderBy: { seq: 'asc' }, omit: { id: true } });
  let prev = rows[from - 2].hash;
  const statements: [string, unknown[]][] = [];
  for (const row of rows.slice(from - 1)) {
    const { hash: _hash, ...content } = row;
    const forged = { ...content, entity: row.seq === from ? 'innocent' : row.entity, prevHash: prev };
    prev = entryHash(forged, null);
    statements.push(['UPDATE audit_log SET entity = $1, prev_hash = $2, hash = $3 WHERE tenant_id = $4 AND seq = $5', [forged.entity, forged.prevHash, prev, c.tenantId, row.seq]]);
  }
  return statements;
}

interface TamperCase {
  name: string;
  tamper(c: Company): Promise<void>;
  /** The first entry that differs, as each check reports it. */
  expected(c: Company): { external: number; incremental: number | 'only after the nightly verification'; nightly: number };
  problem: RegExp;
}

const CASES: TamperCase[] = [
  {
    name: 'edit an old entry (keeping its stored hash)',
    tamper: (c) => asOwner([[`UPDATE audit_log SET entity = 'innocent' WHERE tenant_id = $1 AND seq = 2`, [c.tenantId]]]),
    expected: () => ({ external: 2, incremental: 'only after the nightly verification', nightly: 2 }),
    problem: /^Entry #2 was changed: its content no longer gives its hash\./,
  },
  {
    name: 'edit the newest entry',
    tamper: (c) => asOwner([[`UPDATE audit_log SET details = '{"forged":true}' WHERE tenant_id = $1 AND seq = $2`, [c.tenantId, c.n]]]),
    expected: (c) => ({ external: c.n, incremental: c.n, nightly: c.n }),
    problem: /^Entry #\d+ was changed/,
  },
  {
    name: 'delete the newest entries',
    tamper: (c) => asOwner([['DELETE FROM audit_log WHERE tenant_id = $1 AND seq > $2', [c.tenantId, c.n - 2]]]),
    expected: (c) => ({ external: c.n - 1, incremental: c.n - 1, nightly: c.n - 1 }),
    problem: /^Entries #\d+–#\d+ are missing: the log ends at #\d+, but the checkpoint you kept \(signed .*\) covers up to #\d+\.$/,
  },
  {
    name: 'delete entries back through a checkpoint',
    tamper: (c) => asOwner([['DELETE FROM audit_log WHERE tenant_id = $1 AND seq >= $2', [c.tenantId, c.c1]]]),
    expected: (c) => ({ external: c.c1, incremental: c.c1, nightly: c.c1 }),
    problem: /^Entry #\d+ is missing: the log ends at #\d+, but the checkpoint you kept \(signed .*\) covers up to #\d+\.$/,
  },
  {
    name: 'edit an entry and recompute the chain unkeyed (plain SHA-256)',
    tamper: async (c) => asOwner(await recomputeUnkeyed(c, 2)),
    // The incremental check sees the newest checkpoint's entry changed; the full verifications find the first one.
    expected: (c) => ({ external: 2, incremental: c.n, nightly: 2 }),
    problem: /^Entry #2 was changed/,
  },
  {
    name: 'recompute unkeyed and record the company as written before the chain was keyed (audit_chain_legacy)',
    tamper: async (c) => asOwner([...(await recomputeUnkeyed(c, 2)), ['INSERT INTO audit_chain_legacy (tenant_id, last_legacy_seq) VALUES ($1, $2)', [c.tenantId, c.n]]]),
    expected: (c) => ({ external: 2, incremental: c.n, nightly: 2 }),
    problem: /^Entry #2 was changed/,
  },
  {
    name: "all of that, and delete the company's checkpoints (the issue's attack)",
    tamper: async (c) =>
      asOwner([...(await recomputeUnkeyed(c, 2)), ['INSERT INTO audit_chain_legacy (tenant_id, last_legacy_seq) VALUES ($1, $2)', [c.tenantId, c.n]], ['DELETE FROM audit_checkpoints WHERE tenant_id = $1', [c.tenantId]]]),
    expected: () => ({ external: 2, incremental: 2, nightly: 2 }),
    problem: /^Entry #2 was changed/,
  },
  {
    name: 'delete the newest entries together with the checkpoints',
    tamper: (c) => asOwner([['DELETE FROM audit_log WHERE tenant_id = $1 AND seq > $2', [c.tenantId, c.n - 3]], ['DELETE FROM audit_checkpoints WHERE tenant_id = $1', [c.tenantId]]]),
    // Inside the database only the sealed verdict of the last nightly verification remembers the head.
    expected: (c) => ({ external: c.n - 2, incremental: c.n - 2, nightly: c.n - 2 }),
    problem: /^Entries #\d+–#\d+ are missing/,
  },
  {
    name: 'truncate the log and the checkpoints',
    // Last: TRUNCATE empties every company's log.
    tamper: () => asOwner([['TRUNCATE audit_log, audit_checkpoints']]),
    expected: () => ({ external: 1, incremental: 1, nightly: 1 }),
    problem: /^Entries #1–#\d+ are missing: the log is empty, but the checkpoint you kept/,
  },
];

describe('the tamper matrix, as the owner role', () => {
  CASES.forEach((tamperCase, index) => {
    it(tamperCase.name, async () => {
      const c = await prepare(`TAMPER${index}`);
      await tamperCase.tamper(c);
      const expected = tamperCase.expected(c);

      // The Activity page's own incremental check.
      const seen = await integrity(c);
      if (expected.incremental === 'only after the nightly verification') {
        // It trusts what its newest checkpoint covers (that is what makes it fast); the nightly job re-hashes all.
        expect(seen).toMatchObject({ valid: true });
      } else {
        expect(seen).toMatchObject({ valid: false, brokenAtSeq: expected.incremental });
        expect(seen.problem).toEqual(expect.any(String));
      }

      // Whoever kept a checkpoint: every entry re-hashed, every kept checkpoint checked, the first difference named.
      const verified = await external(c);
      expect(verified).toMatchObject({ valid: false, brokenAtSeq: expected.external });
      expect(verified.problem).toMatch(tamperCase.problem);
      expect(verified.checkpoints.map((report: { status: string }) => report.status)).not.toContain('UNVERIFIABLE');
      expect(verified.checkpoints.some((report: { status: string }) => report.status !== 'EXTENDS')).toBe(true);

      // The nightly job: it records a sealed verdict, which the Activity page shows from then on.
      const verdict = await nightly(c);
      expect(verdict).toMatchObject({ valid: false, brokenAtSeq: expected.nightly });
      const after = await integrity(c);
      expect(after).toMatchObject({ valid: false, lastFullVerification: { valid: false, brokenAtSeq: expected.nightly } });
      expect(after.brokenAtSeq).toBeLessThanOrEqual(expected.nightly);
    });
  });
});

describe('the verifier outside the console', () => {
  it('pnpm cli audit:check proves the live log extends the kept checkpoints, and names the first entry that differs (exit 1)', async () => {
    const c = await prepare('CLICHECK');
    const dir = mkdtempSync(path.join(tmpdir(), 'kf-kept-'));
    const keptFile = path.join(dir, 'kept.txt');
    writeFileSync(keptFile, c.kept);
    const env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, PUBLIC_URL: t.config.publicUrl };
    const holds = runCli(['audit:check', '--tenant', 'CLICHECK', '--checkpoints', keptFile, '--json'], env);
    expect(holds.status, holds.stderr + holds.stdout).toBe(0);
    expect(holds.json).toMatchObject({ valid: true, entries: c.n, checkpoints: [{ status: 'extends' }, { status: 'extends' }] });
    // The operator's copy: every checkpoint so far, with the public keys, written to a file.
    const operatorFile = path.join(dir, 'operator.json');
    const saved = runCli(['audit:checkpoints', '--tenant', 'CLICHECK', '--all', '--out', operatorFile, '--json'], env);
    expect(saved.status, saved.stderr + saved.stdout).toBe(0);
    expect(saved.json).toMatchObject({ tenant: 'CLICHECK', file: operatorFile, latestCheckpointSeq: c.n });
    expect(saved.json.checkpoints).toBeGreaterThanOrEqual(2);
    await asOwner(await recomputeUnkeyed(c, 3));
    const broken = runCli(['audit:check', '--tenant', 'CLICHECK', '--checkpoints', keptFile, '--json'], env);
    expect(broken.status).toBe(1);
    expect(broken.json).toMatchObject({ valid: false, brokenAtSeq: 3, problem: expect.stringMatching(/^Entry #3 was changed/) });
    expect(broken.json.checkpoints.map((report: { status: string }) => report.status)).toEqual(['differs', 'differs']);
    const againstOperatorCopy = runCli(['audit:check', '--tenant', 'CLICHECK', '--checkpoints', operatorFile, '--json'], env);
    expect(againstOperatorCopy.status).toBe(1);
    expect(againstOperatorCopy.json).toMatchObject({ valid: false, brokenAtSeq: 3 });
  });

  it("a checkpoint that is not this server's, or not this company's, proves nothing and says so", async () => {
    const c = await prepare('FOREIGN');
    const other = await prepare('FOREIGNB');
    const [header, payload, signature] = /eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+/.exec(c.kept)![0].split('.');
    const altered = `${header}.${payload}.${signature.slice(0, -4)}AAAA`;
    const response = await t.gql(VERIFY, { checkpoints: `${altered}\n${other.kept}` }, { apiKey: c.apiKey });
    const result = response.data.activityLogVerification;
    expect(result.valid).toBe(false);
    expect(result.brokenAtSeq).toBeNull(); // the log itself is fine
    expect(result.checkpoints.map((report: { status: string }) => report.status)).toEqual(['UNVERIFIABLE', 'OTHER_COMPANY', 'OTHER_COMPANY']);
    const nothing = await t.gql(VERIFY, { checkpoints: 'no checkpoints here' }, { apiKey: c.apiKey });
    expect(nothing.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { checkpoints: expect.stringContaining('holds no checkpoint') } });
  });

  it('hostile text is scanned in linear time up to the cap (a run of "eyJ" fills it), and refused past it', async () => {
    const c = await prepare('HOSTILE');
    // The whole cap of a run that made a backtracking expression take minutes: answered at once, with no checkpoint in it.
    const run = await t.gql(VERIFY, { checkpoints: 'eyJ'.repeat(MAX_CHECKPOINT_TEXT / 3) }, { apiKey: c.apiKey });
    expect(run.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { checkpoints: expect.stringContaining('holds no checkpoint') } });
    const over = await t.gql(VERIFY, { checkpoints: `${c.kept}\n${'x'.repeat(MAX_CHECKPOINT_TEXT)}` }, { apiKey: c.apiKey });
    expect(over.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { checkpoints: expect.stringContaining('at most 250,000 characters') } });
    // The cap holds as many bare checkpoints, one a line, as one verification reads.
    const token = /eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+/.exec(c.kept)![0];
    expect(MAX_KEPT_CHECKPOINTS * (token.length + 1)).toBeLessThanOrEqual(MAX_CHECKPOINT_TEXT);
  });

  it('a verdict the server did not write is itself reported', async () => {
    const c = await prepare('FORGED');
    await owner.query(
      `INSERT INTO audit_verdicts (id, tenant_id, verified_at, valid, head_seq, head_hash, external_checkpoints, mac) VALUES (gen_random_uuid(), $1, $2, true, 1, 'x', 0, 'forged')`,
      [c.tenantId, new Date(t.clock.now().getTime() + 1000)],
    );
    const seen = await integrity(c);
    expect(seen).toMatchObject({ valid: false, problem: expect.stringMatching(/was not written by this server/) });
  });
});
