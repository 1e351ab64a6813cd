import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, databaseUrl, dropDatabase, uniqueName, withAdmin } from './support/pg.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { publicJwks, rotateSigningKey } from '../server/src/services/signing/signing-keys.js';

// The server's own database role cannot rewrite the activity log.
let t: TestApp;
let app: pg.Client;
beforeAll(async () => {
  t = await startTestApp(); // connects as the app role, like production
  await t.setupAdmin();
  app = new pg.Client({ connectionString: t.databaseUrl });
  await app.connect();
});
afterAll(async () => {
  await app.end();
  await t.close();
});

const attempt = (sql: string) => app.query(sql).then(() => 'succeeded', (error: Error) => error.message);

describe('the app role', () => {
  it('is what the server connects as, and it owns nothing', async () => {
    const { rows } = await app.query(`SELECT current_user AS me, (SELECT count(*)::int FROM pg_tables WHERE schemaname = 'public' AND tableowner = current_user) AS owned`);
    expect(rows[0]).toEqual({ me: 'keyforge_test_app', owned: 0 });
  });

  it("the issue's attacks fail: disable or drop the triggers, delete the newest rows, rewrite hashes, truncate", async () => {
    expect(await t.prisma.auditLogEntry.count()).toBeGreaterThan(0);
    const attacks = [
      'ALTER TABLE audit_log DISABLE TRIGGER ALL',
      'ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update_delete',
      'DROP TRIGGER audit_log_no_truncate ON audit_log',
      'DELETE FROM audit_log WHERE seq = (SELECT max(seq) FROM audit_log)',
      `UPDATE audit_log SET hash = repeat('0', 64)`,
      'TRUNCATE audit_log',
      'ALTER TABLE audit_log OWNER TO keyforge_test_app',
      'DELETE FROM audit_checkpoints',
      'TRUNCATE audit_checkpoints',
      `INSERT INTO audit_chain_legacy (tenant_id, last_legacy_seq) SELECT id, 1000000 FROM tenants`,
      'UPDATE audit_chain_legacy SET last_legacy_seq = 1000000',
      'DROP FUNCTION audit_log_refuse_change() CASCADE',
      // The checkpoints and the verification verdicts are append-only too.
      'UPDATE audit_checkpoints SET seq = 1',
      'ALTER TABLE audit_checkpoints DISABLE TRIGGER ALL',
      'DELETE FROM audit_verdicts',
      `UPDATE audit_verdicts SET valid = true, problem = NULL`,
      'TRUNCATE audit_verdicts',
      'ALTER TABLE audit_verdicts DISABLE TRIGGER ALL',
      'DROP FUNCTION audit_refuse_change() CASCADE',
    ];
    for (const sql of attacks) expect(await attempt(sql), sql).toMatch(/permission denied|must be owner/);
  });

  it('cannot change or delete a signing key (retiring every key would make every check UNVERIFIABLE); rotation still works', async () => {
    const before = await t.prisma.signingKey.findMany({ orderBy: { createdAt: 'asc' } });
    expect(before.length).toBeGreaterThan(0);
    for (const sql of [
      'UPDATE signing_keys SET retired_at = now()',
      `UPDATE signing_keys SET public_jwk = '{}'::jsonb`,
      'DELETE FROM signing_keys',
      'TRUNCATE signing_keys',
      'ALTER TABLE signing_keys DISABLE TRIGGER ALL',
    ]) {
      expect(await attempt(sql), sql).toMatch(/permission denied|must be owner/);
    }
    expect(await t.prisma.signingKey.findMany({ orderBy: { createdAt: 'asc' } })).toEqual(before);
    // The app role rotates with an INSERT alone; the old keys stay published.
    const rotated = await rotateSigningKey({ db: t.deps.db, secrets: t.deps.secrets, now: new Date() }, { immediately: true });
    const jwks = await publicJwks(t.deps);
    expect(jwks.keys.map((key) => key.kid)).toEqual(expect.arrayContaining([rotated.kid, ...before.map((row) => row.kid)]));
  });

  it('keeps read/write on ordinary tables, including tables a later migration creates (default privileges)', async () => {
    expect(await attempt(`UPDATE tenants SET name = name`)).toBe('succeeded');
    const owner = new pg.Client({ connectionString: t.ownerUrl });
    await owner.connect();
    try {
      await owner.query('CREATE TABLE later_feature (id int PRIMARY KEY, note text)');
    } finally {
      await owner.end();
    }
    expect(await attempt(`INSERT INTO later_feature VALUES (1, 'x')`)).toBe('succeeded');
    expect(await attempt(`DELETE FROM later_feature`)).toBe('succeeded');
    expect(await attempt('ALTER TABLE later_feature ADD COLUMN evil int')).toMatch(/must be owner/);
  });

  it('the server warns at start when it runs as the owner (one-URL setups keep working)', async () => {
    const single = await startTestApp({ dbRole: 'owner' });
    try {
      expect(single.logs.join('')).toMatch(/owns or may rewrite the activity log/);
      await single.setupAdmin();
    } finally {
      await single.close();
    }
    expect(t.logs.join('')).not.toMatch(/owns or may rewrite the activity log/);
  });
});

describe('pnpm db:migrate with MIGRATION_DATABASE_URL and DATABASE_URL', () => {
  it('migrates as the owner, creates the app role and grants it append-only access to the audit log', async () => {
    const name = uniqueName('kf_roles');
    const role = uniqueName('kf_role_app');
    const ownerUrl = await createDatabase(name);
    const appUrl = new URL(databaseUrl(name));
    appUrl.username = role;
    appUrl.password = 'app-secret';
    try {
      const result = spawnSync('pnpm', ['-s', 'db:migrate'], { env: { ...process.env, MIGRATION_DATABASE_URL: ownerUrl, DATABASE_URL: appUrl.toString() }, encoding: 'utf8', timeout: 120_000 });
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout).toContain(`Created the app role ${role}`);
      const client = new pg.Client({ connectionString: appUrl.toString() });
      await client.connect();
      try {
        const { rows } = await client.query(`SELECT has_table_privilege('audit_log', 'INSERT') AS ins, has_table_privilege('audit_log', 'DELETE') AS del,
          has_table_privilege('audit_log', 'TRUNCATE') AS trunc, has_table_privilege('licenses', 'DELETE') AS lic,
          has_table_privilege('audit_verdicts', 'INSERT') AS verdict_ins, has_table_privilege('audit_verdicts', 'UPDATE') AS verdict_upd,
          has_table_privilege('audit_checkpoints', 'DELETE') AS checkpoint_del, has_table_privilege('signing_keys', 'INSERT') AS key_ins,
          has_table_privilege('signing_keys', 'UPDATE') AS key_upd, has_table_privilege('signing_keys', 'DELETE') AS key_del`);
        expect(rows[0]).toEqual({ ins: true, del: false, trunc: false, lic: true, verdict_ins: true, verdict_upd: false, checkpoint_del: false, key_ins: true, key_upd: false, key_del: false });
      } finally {
        await client.end();
      }
    } finally {
      await dropDatabase(name);
      await withAdmin((client) => client.query(`DROP ROLE IF EXISTS ${role}`));
    }
  });
});
