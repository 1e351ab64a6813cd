import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerSecrets } from '../server/src/crypto/secrets.js';
import { GENESIS, entryHash } from '../server/src/services/audit/audit-log.js';
import { signCheckpoint, verifyAuditExport, type AuditExport } from '../server/src/services/audit/checkpoints.js';
import { auditVerifyJob } from '../server/src/jobs/audit-integrity.js';
import { checkAuditIntegrity } from '../server/src/services/audit/verification.js';
import { loadTokenSigner } from '../server/src/services/signing/signing-keys.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { runCli } from './support/processes.js';

// Keyed hashes and signed checkpoints detect what the owner role (or a one-URL
// setup) can still do to the table; the app role cannot even try (security-db-roles.test.ts).
let t: TestApp;
let admin: Awaited<ReturnType<TestApp['setupAdmin']>>;
let owner: pg.Client;
const INTEGRITY = '{ activityLogIntegrity { valid entries brokenAtSeq } }';
const integrity = async (token = admin.token) => (await t.gql(INTEGRITY, {}, { token })).data.activityLogIntegrity as { valid: boolean; entries: number; brokenAtSeq: number | null };

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.setupAdmin();
  owner = new pg.Client({ connectionString: t.ownerUrl });
  await owner.connect();
});
afterAll(async () => {
  await owner.end();
  await t.close();
});

/** A company with its own chain of `n` product entries and an admin token. */
async function company(prefix: string, n: number) {
  const tenant = await t.seedTenant({ name: prefix, keyPrefix: prefix });
  const user = await t.seedUser(tenant.id, { email: `admin@${prefix.toLowerCase()}.test` });
  const { token } = await t.login(user.email);
  for (let i = 0; i < n; i++) await t.seedProduct(tenant.id, `Product ${i}`);
  const entries = await t.prisma.auditLogEntry.count({ where: { tenantId: tenant.id } });
  return { tenantId: tenant.id, token, entries };
}

/** Owner-level tampering: the triggers are switched off around the statement, as the attacker did. */
async function asOwner(sql: string, values: unknown[] = []) {
  await owner.query('ALTER TABLE audit_log DISABLE TRIGGER USER');
  try {
    await owner.query(sql, values);
  } finally {
    await owner.query('ALTER TABLE audit_log ENABLE TRIGGER USER');
  }
}

describe('keyed chain', () => {
  it('new entries carry an HMAC: a recomputed plain SHA-256 chain is detected', async () => {
    const c = await company('SHA', 4);
    // No integrity visit yet, so no checkpoint: only the key can catch this.
    expect(await t.prisma.auditCheckpoint.count({ where: { tenantId: c.tenantId } })).toBe(0);
    // The attacker rewrites entry 2 and recomputes every later hash the way the old, unkeyed chain did.
    const rows = await t.prisma.auditLogEntry.findMany({ where: { tenantId: c.tenantId }, orderBy: { seq: 'asc' }, omit: { id: true } });
    let prev = rows[0].hash;
    for (const row of rows.slice(1)) {
      const { hash: _hash, ...content } = row;
      const forged = { ...content, entity: row.seq === 2 ? 'innocent' : row.entity, prevHash: prev };
      prev = entryHash(forged, null);
      await asOwner('UPDATE audit_log SET entity = $1, prev_hash = $2, hash = $3 WHERE tenant_id = $4 AND seq = $5', [forged.entity, forged.prevHash, prev, c.tenantId, row.seq]);
    }
    expect(await integrity(c.token)).toEqual({ valid: false, entries: 1, brokenAtSeq: 2 });
  });

  it('rows from before the chain was keyed verify with SHA-256 up to the recorded legacy boundary, not after', async () => {
    const tenant = await t.seedTenant({ name: 'Legacy', keyPrefix: 'LEGACY' });
    const user = await t.seedUser(tenant.id, { email: 'admin@legacy.test' }); // seq 1, keyed… so start a fresh tenant chain below
    await asOwner('DELETE FROM audit_log WHERE tenant_id = $1', [tenant.id]);
    let prev = GENESIS;
    for (let seq = 1; seq <= 2; seq++) {
      const content = { tenantId: tenant.id, seq, action: 'CreateProduct', entityType: 'Product', entityId: null, entity: `old ${seq}`, actorId: null, actor: 'system', ip: null, details: null, createdAt: new Date('2026-01-01T00:00:00Z'), prevHash: prev };
      prev = entryHash(content, null);
      await owner.query(`INSERT INTO audit_log (id, tenant_id, seq, action, entity_type, entity, actor, created_at, prev_hash, hash) VALUES (gen_random_uuid(), $1, $2, 'CreateProduct', 'Product', $3, 'system', $4, $5, $6)`, [tenant.id, seq, content.entity, content.createdAt, content.prevHash, prev]);
    }
    await owner.query('INSERT INTO audit_chain_legacy (tenant_id, last_legacy_seq) VALUES ($1, 2)', [tenant.id]);
    await t.seedProduct(tenant.id, 'New'); // seq 3, keyed
    const { token } = await t.login(user.email);
    // The boundary alone is not believed: nothing the server signed covers those rows yet.
    expect(await integrity(token)).toMatchObject({ valid: false, brokenAtSeq: 1 });
    // A checkpoint signed when the rows were written (by the version that keyed the chain) covers them: then they verify.
    const signer = await loadTokenSigner({ db: t.deps.db, secrets: t.deps.secrets, now: t.clock.now() }, t.config.publicUrl);
    await t.prisma.auditCheckpoint.create({ data: await signCheckpoint(signer, tenant.id, { seq: 2, hash: prev }, t.clock.now()) });
    expect(await integrity(token)).toEqual({ valid: true, entries: 4, brokenAtSeq: null }); // + the Login entry
    // An unkeyed row past the boundary is a forgery.
    const head = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { tenantId: tenant.id }, orderBy: { seq: 'desc' }, omit: { id: true } });
    const { hash: headHash, ...headContent } = head;
    const forged = { ...headContent, seq: head.seq + 1, entity: 'forged', prevHash: headHash };
    await owner.query(`INSERT INTO audit_log (id, tenant_id, seq, action, entity_type, entity, actor, created_at, prev_hash, hash, actor_id, entity_id, ip, details)
      SELECT gen_random_uuid(), tenant_id, $2, action, entity_type, 'forged', actor, created_at, $3, $4, actor_id, entity_id, ip, details FROM audit_log WHERE tenant_id = $1 AND seq = $5`,
      [tenant.id, forged.seq, headHash, entryHash(forged, null), head.seq]);
    expect(await integrity(token)).toMatchObject({ valid: false, brokenAtSeq: head.seq + 1 });
  });
});

describe('signed checkpoints', () => {
  it('deleting the newest rows is detected against the latest checkpoint', async () => {
    const c = await company('DELNEW', 5);
    expect((await integrity(c.token)).valid).toBe(true); // writes a checkpoint at the head
    expect(await t.prisma.auditCheckpoint.count({ where: { tenantId: c.tenantId, seq: c.entries } })).toBe(1);
    await asOwner('DELETE FROM audit_log WHERE tenant_id = $1 AND seq > $2', [c.tenantId, c.entries - 2]);
    expect(await integrity(c.token)).toEqual({ valid: false, entries: c.entries - 2, brokenAtSeq: c.entries - 1 });
  });

  it('dropping the truncate trigger and truncating is detected', async () => {
    const c = await company('TRUNC', 2);
    expect((await integrity(c.token)).valid).toBe(true);
    await owner.query('DROP TRIGGER audit_log_no_truncate ON audit_log');
    try {
      await owner.query('TRUNCATE audit_log');
    } finally {
      await owner.query('CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse_change()');
    }
    expect(await integrity(c.token)).toEqual({ valid: false, entries: 0, brokenAtSeq: 1 });
  });

  it('a checkpoint or signing key planted by the app role is ignored: not published, not used', async () => {
    const c = await company('PLANT', 2);
    expect((await integrity(c.token)).valid).toBe(true);
    const [real] = await t.prisma.signingKey.findMany({ where: { active: true } });
    // A row with a working-looking private key blob copied from the real key, but the attacker's own public key.
    const forgedJwk = { kty: 'OKP', crv: 'Ed25519', x: Buffer.alloc(32, 7).toString('base64url'), kid: 'planted', alg: 'EdDSA', use: 'sig' };
    await t.prisma.signingKey.create({ data: { kid: 'planted', publicJwk: forgedJwk, privateKeyEncrypted: real.privateKeyEncrypted, active: true, createdAt: new Date('2099-01-01') } });
    await t.prisma.signingKey.create({ data: { kid: 'garbage', publicJwk: { ...forgedJwk, kid: 'garbage' }, privateKeyEncrypted: 'v1.AAAA.BBBB.CCCC', active: true, createdAt: new Date('2099-01-02') } });
    const jwks = await t.get('/.well-known/jwks.json');
    expect(jwks.json.keys.map((key: { kid: string }) => key.kid)).toEqual([real.kid]);
    // A restarted server would still sign with the real key, not the newer planted "active" rows.
    expect((await loadTokenSigner({ db: t.deps.db, secrets: t.deps.secrets, now: t.clock.now() }, t.config.publicUrl)).kid).toBe(real.kid);
    // A forged checkpoint at a later seq (attacker-signed) does not become the anchor.
    await t.prisma.auditCheckpoint.create({ data: { tenantId: c.tenantId, seq: c.entries + 50, hash: 'f'.repeat(64), kid: 'planted', signature: 'eyJhbGciOiJFZERTQSJ9.e30.AAAA', createdAt: new Date() } });
    expect(await integrity(c.token)).toEqual({ valid: true, entries: c.entries, brokenAtSeq: null });
  });
});

describe('incremental check and the daily full verification', () => {
  it('a visit re-hashes only rows after the newest checkpoint; the daily job re-verifies everything, logs and records a break, which the visit then shows', async () => {
    const c = await company('INCR', 3);
    expect((await integrity(c.token)).valid).toBe(true); // checkpoint at the head
    // Owner-level rewrite of an old row, keeping its stored hash: invisible to the incremental check
    // (it trusts what the last checkpoint covered), caught by the full verification.
    await asOwner(`UPDATE audit_log SET entity = 'rewritten' WHERE tenant_id = $1 AND seq = 2`, [c.tenantId]);
    await t.seedProduct(c.tenantId, 'After');
    expect(await integrity(c.token)).toEqual({ valid: true, entries: c.entries + 1, brokenAtSeq: null });
    const healthy = await company('HEALTHY', 1);
    const logs: string[] = [];
    const result = await auditVerifyJob.run({ db: t.deps.db, now: t.clock.now(), publicUrl: t.config.publicUrl, transport: undefined as never, webhookAllowPrivate: false, logger: { error: (obj: unknown, msg: string) => logs.push(`${msg} ${JSON.stringify(obj)}`) } as never });
    expect(result.broken).toBeGreaterThanOrEqual(1);
    expect(logs.join('\n')).toContain('full verification failed');
    expect(await t.prisma.auditVerdict.findFirstOrThrow({ where: { tenantId: c.tenantId } })).toMatchObject({ valid: false, brokenAtSeq: 2, problem: 'Entry #2 was changed: its content no longer gives its hash.' });
    expect(await t.prisma.auditVerdict.findFirstOrThrow({ where: { tenantId: healthy.tenantId } })).toMatchObject({ valid: true, headSeq: healthy.entries, headHash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    // The Activity page now shows the full verification's verdict, not only its own incremental check.
    expect(await integrity(c.token)).toEqual({ valid: false, entries: 1, brokenAtSeq: 2 });
    expect(await integrity(healthy.token)).toEqual({ valid: true, entries: healthy.entries, brokenAtSeq: null });
  });
});

describe('a bounded visit (a long log without a checkpoint)', () => {
  it('verifies a part per check, anchors it in a checkpoint, says how much is left, and catches a rewrite in a later part', async () => {
    const c = await company('PART', 11);
    const ctx = { db: t.deps.db, secrets: t.deps.secrets, now: t.clock.now() };
    const check = () => checkAuditIntegrity(ctx, c.tenantId, t.deps.signer, { maxEntries: 5 });
    expect(await t.prisma.auditCheckpoint.count({ where: { tenantId: c.tenantId } })).toBe(0);
    const first = await check();
    expect(first).toMatchObject({ valid: true, entries: 5, pendingEntries: c.entries - 5, brokenAtSeq: null, written: { seq: 5 } });
    const second = await check();
    expect(second).toMatchObject({ valid: true, entries: 10, pendingEntries: c.entries - 10, written: { seq: 10 } });
    // Entry 12 (not yet reached) is rewritten: the next part finds it.
    expect(c.entries).toBeGreaterThan(12);
    await asOwner(`UPDATE audit_log SET entity = 'rewritten' WHERE tenant_id = $1 AND seq = 12`, [c.tenantId]);
    expect(await check()).toMatchObject({ valid: false, entries: 11, brokenAtSeq: 12, written: null });
    // Over GraphQL (1,000 entries per visit) a small log is checked whole: nothing pending.
    const healthy = await company('WHOLE', 2);
    expect((await t.gql('{ activityLogIntegrity { valid pendingEntries } }', {}, { token: healthy.token })).data.activityLogIntegrity).toEqual({ valid: true, pendingEntries: 0 });
  });
});

describe('export and offline verification (pnpm cli audit:export / audit:verify)', () => {
  it('exports a verifiable file; verification needs only the public key and catches deleted newest rows', async () => {
    const c = await company('EXPORT', 4);
    const dir = mkdtempSync(path.join(tmpdir(), 'kf-audit-'));
    const file = path.join(dir, 'export.json');
    const jwksFile = path.join(dir, 'jwks.json');
    writeFileSync(jwksFile, (await t.get('/.well-known/jwks.json')).text);
    const env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, PUBLIC_URL: t.config.publicUrl };
    const exported = runCli(['audit:export', '--tenant', 'EXPORT', '--out', file, '--json'], env);
    expect(exported.status, exported.stderr + exported.stdout).toBe(0);
    expect(exported.json).toMatchObject({ entries: c.entries, latestCheckpointSeq: c.entries });

    // Offline: no database, no server secret.
    const offline = { DATA_DIR: dir, SERVER_SECRET: 'another-secret-entirely-0123456789abcdef' };
    const verified = runCli(['audit:verify', '--file', file, '--jwks', jwksFile, '--json'], offline);
    expect(verified.status, verified.stderr + verified.stdout).toBe(0);
    expect(verified.json).toMatchObject({ valid: true, entries: c.entries, checkpointsVerified: 1, contentVerified: false, problems: [] });

    const doc = JSON.parse(readFileSync(file, 'utf8')) as AuditExport;
    const jwks = JSON.parse(readFileSync(jwksFile, 'utf8'));
    const truncated = { ...doc, entries: doc.entries.slice(0, -2) };
    writeFileSync(file, JSON.stringify(truncated));
    const refused = runCli(['audit:verify', '--file', file, '--jwks', jwksFile, '--json'], offline);
    expect(refused.status).toBe(1);
    expect(refused.json.problems.join('\n')).toMatch(/missing \(newest rows deleted or log truncated\)/);

    // A checkpoint kept apart from the export (--checkpoints) is checked too: the export must extend it.
    const keptToken = doc.checkpoints.at(-1)!.signature;
    expect((await verifyAuditExport(doc, { jwks, kept: [keptToken] })).keptCheckpointsVerified).toBe(1);
    const withoutAnchors = { ...truncated, checkpoints: [] };
    expect((await verifyAuditExport(withoutAnchors, { jwks, kept: [keptToken] })).problems).toEqual([`kept checkpoint at seq ${doc.checkpoints.at(-1)!.seq}: the entry is missing (newest rows deleted or log truncated)`]);
    // With the server secret, each entry's content is checked too.
    const key = new ServerSecrets(t.config.serverSecret!).auditChainKey;
    expect(await verifyAuditExport(doc, { jwks, key })).toMatchObject({ valid: true, contentVerified: true });
    const edited = { ...doc, entries: doc.entries.map((entry, i) => (i === 1 ? { ...entry, entity: 'edited' } : entry)) };
    expect((await verifyAuditExport(edited, { jwks, key })).problems).toEqual(['seq 2: content does not match its hash']);
    // A checkpoint signed by another key (the export's own embedded set swapped) does not verify against the trusted JWKS.
    expect((await verifyAuditExport(doc, { jwks: { keys: [{ ...jwks.keys[0], x: Buffer.alloc(32, 1).toString('base64url') }] } })).valid).toBe(false);
  });
});
