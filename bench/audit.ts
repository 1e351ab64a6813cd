// `pnpm bench:audit`: the activity-log integrity check at scale. Seeds one tenant with AUDIT_ROWS (500,000)
// keyed audit entries into a scratch database, then times activityLogIntegrity's incremental check (what
// each console Activity visit asks) after a few new entries, against the goal of p95 ≤ 100 ms, and one full
// verification for reference. Env: BENCH_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres),
// AUDIT_ROWS, AUDIT_RUNS.
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ServerSecrets } from '../server/src/crypto/secrets.js';
import { openDatabase } from '../server/src/db/database.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { GENESIS, entryHash, recordAudit, verifyAuditChain, type Hashable } from '../server/src/services/audit/audit-log.js';
import { checkAuditIntegrity, INTEGRITY_VISIT_ENTRIES } from '../server/src/services/audit/verification.js';
import { loadTokenSigner } from '../server/src/services/signing/signing-keys.js';
import { seeder as servicesSeeder } from '../test/support/seed.js';

const ROWS = Number(process.env.AUDIT_ROWS ?? 500_000);
const RUNS = Number(process.env.AUDIT_RUNS ?? 40);
const adminUrl = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `kf_bench_audit_${randomBytes(4).toString('hex')}`;
const url = Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();

const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-bench-audit-'));
const secrets = new ServerSecrets(randomBytes(32).toString('base64url')).useForProcess();
const db = await openDatabase({ databaseUrl: url, dataDir, poolSize: 4 });
const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)];

try {
  await applyMigrations({ kind: 'pg', url });
  const ctx = { db, secrets, now: new Date(), actor: systemActor(null), meta: NO_META };
  const tenant = await servicesSeeder({ db, secrets, now: () => ctx.now }).tenant({ name: 'Audit Bench', keyPrefix: 'AUDIT' });

  // Seed: keyed entries computed here (the same entryHash the server uses), inserted 10,000 at a time.
  let started = process.hrtime.bigint();
  const seeder = new pg.Client({ connectionString: url });
  await seeder.connect();
  let prevHash = GENESIS;
  const base = Date.now() - ROWS * 1000;
  for (let from = 1; from <= ROWS; from += 10_000) {
    const cols: unknown[][] = [[], [], [], [], [], [], [], [], [], []];
    for (let seq = from; seq < Math.min(from + 10_000, ROWS + 1); seq++) {
      const entry: Hashable = { tenantId: tenant.id, seq, action: 'UpdateLicense', entityType: 'License', entityId: null, entity: `ACME-…-${seq % 10_000}`, actorId: null, actor: 'admin@audit.test', ip: '203.0.113.5', details: { before: { maxActivations: 1 }, after: { maxActivations: 2 } }, createdAt: new Date(base + seq * 1000), prevHash };
      const hash = entryHash(entry, secrets.auditChainKey);
      [randomUUID(), seq, entry.action, entry.entityType, entry.entity, entry.actor, entry.ip, entry.createdAt, prevHash, hash].forEach((value, i) => cols[i].push(value));
      prevHash = hash;
    }
    await seeder.query(
      `INSERT INTO audit_log (id, tenant_id, seq, action, entity_type, entity, actor, ip, details, created_at, prev_hash, hash)
       SELECT id, $11::uuid, seq, action, entity_type, entity, actor, ip, '{"after":{"maxActivations":2},"before":{"maxActivations":1}}'::jsonb, created_at, prev_hash, hash
         FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::text[], $10::text[])
           AS t(id, seq, action, entity_type, entity, actor, ip, created_at, prev_hash, hash)`,
      [...cols, tenant.id],
    );
  }
  await seeder.query('ANALYZE audit_log');
  await seeder.end();
  const seedMs = ms(started);

  const signer = await loadTokenSigner(ctx, 'http://bench.test');
  // An Activity visit (at most INTEGRITY_VISIT_ENTRIES re-hashed) and the 15-minute job's check (everything).
  const check = () => checkAuditIntegrity({ db, secrets, now: new Date() }, tenant.id, signer, { maxEntries: INTEGRITY_VISIT_ENTRIES });
  const jobCheck = () => checkAuditIntegrity({ db, secrets, now: new Date() }, tenant.id, signer);

  // No checkpoint yet (a large log just after upgrading): each visit verifies and anchors the next part.
  const firstVisits: number[] = [];
  for (let visit = 1; visit <= 20; visit++) {
    started = process.hrtime.bigint();
    const result = await check();
    firstVisits.push(ms(started));
    if (!result.valid || result.entries !== visit * INTEGRITY_VISIT_ENTRIES || result.pendingEntries !== ROWS - result.entries) throw new Error(`visit ${visit}: ${JSON.stringify(result)}`);
  }
  started = process.hrtime.bigint();
  const first = await jobCheck(); // the checkpoint job: the rest of the chain, then a checkpoint at the head
  const firstMs = ms(started);
  if (!first.valid || first.entries !== ROWS || first.pendingEntries !== 0) throw new Error(`seeded chain did not verify: ${JSON.stringify(first)}`);

  const idle: number[] = [];
  const afterWrites: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    // Some activity between two visits: 1–20 new entries through the real write path.
    const writes = 1 + (run % 20);
    for (let i = 0; i < writes; i++) {
      await db.prisma.$transaction((tx) => recordAudit(tx, { tenantId: tenant.id, action: 'UpdateLicense', entityType: 'License', entity: `bench ${run}.${i}`, details: { run } }, { id: null, label: 'bench', ip: null }, new Date()));
    }
    started = process.hrtime.bigint();
    const result = await check();
    afterWrites.push(ms(started));
    if (!result.valid) throw new Error(`chain broken during the bench: ${JSON.stringify(result)}`);
    started = process.hrtime.bigint();
    await check();
    idle.push(ms(started));
  }

  started = process.hrtime.bigint();
  const full = await verifyAuditChain(db.prisma, tenant.id, secrets.auditChainKey);
  const fullMs = ms(started);

  const row = (label: string, values: number[]) => `| ${label} | ${values.length} | ${pct(values, 50).toFixed(1)} | ${pct(values, 95).toFixed(1)} | ${pct(values, 95) <= 100 ? 'yes' : 'NO'} |`;
  console.log(`\nActivity-log integrity, one tenant with ${ROWS.toLocaleString('en')} entries (seeded in ${(seedMs / 1000).toFixed(1)} s)\n`);
  console.log('| activityLogIntegrity | runs | p50 ms | p95 ms | p95 ≤ 100 ms |');
  console.log('|---|---|---|---|---|');
  console.log(row('incremental, after 1–20 new entries', afterWrites));
  console.log(row('incremental, nothing new', idle));
  console.log(row(`first visits, no checkpoint yet (${INTEGRITY_VISIT_ENTRIES.toLocaleString('en')} entries each, the rest pending)`, firstVisits));
  console.log(`| the checkpoint job after them (the remaining ${(ROWS - 20 * INTEGRITY_VISIT_ENTRIES).toLocaleString('en')} entries, once) | 1 | ${firstMs.toFixed(0)} | – | (background) |`);
  console.log(`| full verification (daily job), ${full.entries.toLocaleString('en')} entries | 1 | ${fullMs.toFixed(0)} | – | (background) |`);
} finally {
  await db.close();
  rmSync(dataDir, { recursive: true, force: true });
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
