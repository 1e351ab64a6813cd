// EXPLAIN ANALYZE of the keyset list queries in both directions (first/after and last/before) on a seeded
// database: one tenant with LICENSES licenses (plus a second tenant of the same size), a license with many
// activations, a long activity log and outbox. Prints each SQL the list services send with its plan.
// Needs PostgreSQL at TEST_DATABASE_URL (as the tests); creates and drops its own database.
// Run: pnpm tsx bench/explain-paging.ts [LICENSES=100000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ServerSecrets } from '../server/src/crypto/secrets.js';
import { openDatabase } from '../server/src/db/database.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { listActivity } from '../server/src/services/audit/activity.js';
import { NO_META, operatorIn, systemActor } from '../server/src/services/auth/actor.js';
import { listLicenseActivations, listLicenses } from '../server/src/services/licenses/management.js';
import type { PageArgs } from '../server/src/services/listing.js';
import { listOutbox } from '../server/src/services/notifications/outbox.js';
import { createDatabase, dropDatabase, uniqueName } from '../test/support/pg.js';
import { seeder } from '../test/support/seed.js';

const COUNT = Number(process.argv[2] ?? 100_000);
const name = uniqueName('kf_explain');
const url = await createDatabase(name);
const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-explain-'));
const raw = new pg.Client({ connectionString: url });
try {
  await applyMigrations({ kind: 'pg', url });
  await raw.connect();
  const db = await openDatabase({ databaseUrl: url, dataDir });
  const ctx = { db, secrets: new ServerSecrets('explain-secret-0123456789abcdef0123456789abcdef'), now: new Date(), actor: systemActor(null), meta: NO_META };
  const seed = seeder({ ...ctx, now: () => ctx.now });
  const tenants: { id: string; productId: string }[] = [];
  for (const prefix of ['ONE', 'TWO']) {
    const tenant = await seed.tenant({ name: `${prefix} Corp`, keyPrefix: prefix });
    const product = await seed.product(tenant.id, `${prefix} Studio`);
    tenants.push({ id: tenant.id, productId: product.id });
  }
  for (const { id, productId } of tenants) {
    await raw.query(
      `INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, status, revoked_at, customer_email, created_at, updated_at)
       SELECT gen_random_uuid(), $1::uuid, $2::uuid, md5(random()::text || n), 'BULK-…-' || n, 1,
              CASE WHEN n % 10 = 0 THEN 'revoked' ELSE 'active' END::license_status, CASE WHEN n % 10 = 0 THEN now() END,
              'buyer-' || n || CASE WHEN n % 100 = 0 THEN '@rare.test' ELSE '@bulk.test' END, now() - interval '400 days' + (n / 3) * interval '1 second', now()
         FROM generate_series(1, $3::int) AS n`,
      [id, productId, COUNT],
    );
    await raw.query(
      `INSERT INTO audit_log (id, tenant_id, seq, action, entity_type, entity_id, entity, actor, created_at, prev_hash, hash)
       SELECT gen_random_uuid(), $1::uuid, n + 10, CASE WHEN n % 5 = 0 THEN 'RevokeLicense' ELSE 'CreateLicense' END, 'License', NULL,
              'BULK-…-' || n || CASE WHEN n % 100 = 0 THEN ' rare' ELSE '' END, 'system', now() - interval '400 days' + n * interval '1 second', '', ''
         FROM generate_series(1, $2::int) AS n`,
      [id, COUNT],
    );
    await raw.query(
      `INSERT INTO email_outbox (id, tenant_id, kind, idempotency_key, to_address, subject, html, text, status, created_at)
       SELECT gen_random_uuid(), $1::uuid, CASE WHEN n % 4 = 0 THEN 'test' ELSE 'weekly-digest' END, $1 || ':' || n, 'x@y.test', 's', '<p>x</p>', 'x',
              CASE WHEN n % 3 = 0 THEN 'failed' ELSE 'sent' END::email_status, now() - interval '400 days' + (n / 2) * interval '1 second'
         FROM generate_series(1, $2::int) AS n`,
      [id, COUNT / 2],
    );
  }
  const [{ id: licenseId }] = (await raw.query(`SELECT id FROM licenses WHERE tenant_id = $1 ORDER BY created_at DESC LIMIT 1`, [tenants[0].id])).rows;
  await raw.query(
    `INSERT INTO activations (id, tenant_id, license_id, device_id, created_at)
     SELECT gen_random_uuid(), $1::uuid, $2::uuid, 'device-' || n, now() - interval '100 days' + (n / 2) * interval '1 second' FROM generate_series(1, 20000) AS n`,
    [tenants[0].id, licenseId],
  );
  await raw.query(
    `INSERT INTO activations (id, tenant_id, license_id, device_id, created_at)
     SELECT gen_random_uuid(), $1::uuid, l.id, 'd', l.created_at FROM licenses l WHERE l.tenant_id = $1::uuid`,
    [tenants[0].id],
  );
  await raw.query('ANALYZE');

  // Record what the services send, then explain each SELECT of the listed table (counts are explained too).
  const sent: { text: string; values: unknown[] }[] = [];
  const query = pg.Client.prototype.query as (...args: any[]) => any;
  pg.Client.prototype.query = function (this: pg.Client, ...args: any[]) {
    const [config, values] = args;
    if (this !== raw) {
      if (typeof config === 'string') sent.push({ text: config, values: values ?? [] });
      else if (config && typeof config.text === 'string') sent.push({ text: config.text, values: config.values ?? values ?? [] });
    }
    return query.apply(this, args);
  } as any;

  const scoped = operatorIn(ctx, tenants[0].id);
  const cases: [string, (page: PageArgs) => Promise<{ nodes: unknown[]; cursors: string[] }>][] = [
    ['licenses', (page) => listLicenses(scoped, {}, page)],
    ['licenses status=revoked', (page) => listLicenses(scoped, { status: 'revoked' }, page)],
    ['licenses search (rare)', (page) => listLicenses(scoped, { search: 'rare.test' }, page)],
    ['licenses search (common: index walk)', (page) => listLicenses(scoped, { search: 'bulk.test' }, page)],
    ['activityLog', (page) => listActivity(scoped, {}, page)],
    ['activityLog action=RevokeLicense', (page) => listActivity(scoped, { action: 'RevokeLicense' }, page)],
    ['activityLog entity text (rare)', (page) => listActivity(scoped, { entity: 'rare' }, page)],
    ['emails kind=test', (page) => listOutbox(scoped, { kind: 'test', ...page })],
    ['License.activations', async (page) => (await listLicenseActivations(scoped, [{ id: licenseId, tenantId: tenants[0].id }], page))[0]],
  ];
  for (const [label, list] of cases) {
    const deep = await list({ first: 100 });
    const middle = deep.cursors[50];
    for (const [direction, page] of [
      ['first: 20, after: (row 51)', { first: 20, after: middle }],
      ['last: 20, before: (row 51)', { last: 20, before: middle }],
      ['last: 20 (the oldest rows)', { last: 20 }],
    ] as const) {
      sent.length = 0;
      const started = performance.now();
      await list(page);
      const ms = performance.now() - started;
      console.log(`\n=== ${label} — ${direction}: ${ms.toFixed(1)} ms`);
      for (const { text, values } of sent.filter((q) => /^\s*(SELECT|WITH)/i.test(q.text))) {
        const plan = await raw.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) ${text}`, values as unknown[]);
        console.log(`--- ${text.replace(/\s+/g, ' ').slice(0, 400)}`);
        for (const row of plan.rows) console.log(`    ${row['QUERY PLAN']}`);
      }
    }
  }
  pg.Client.prototype.query = query as any;
  await db.close();
} finally {
  await raw.end().catch(() => {});
  await dropDatabase(name);
  rmSync(dataDir, { recursive: true, force: true });
}
