// `pnpm bench:export`: the license export at a million rows. Seeds (once) one company with
// EXPORT_LICENSES licenses (default 1,000,000) in its own database, builds the real app and
// downloads POST /api/licenses/export through its fetch handler (the body is a stream read chunk by chunk) while sampling this process's heap (after a full GC) every 100,000 rows,
// and reports heap against rows exported: a streamed export's heap stays flat however many rows went out.
// Run with --expose-gc (the script does). Env: BENCH_DATABASE_URL (admin URL), EXPORT_DB (default
// keyforge_bench_export), EXPORT_LICENSES. Writes bench/results/export-latest.{json,md}.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../server/src/config.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { createApp } from '../server/src/app.js';
import { createLogger } from '../server/src/logger.js';
import { openDeps } from '../server/src/deps.js';
import { NO_META } from '../server/src/services/auth/actor.js';
import { createApiKey } from '../server/src/services/auth/api-keys.js';
import { sql } from './sql.js';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DB = process.env.EXPORT_DB ?? 'keyforge_bench_export';
const LICENSES = Number(process.env.EXPORT_LICENSES ?? 1_000_000);
const SAMPLE_EVERY = Math.max(1, Math.floor(LICENSES / 10));
const TENANT = '00000000-0000-4000-8000-00000000e001';
const USER = '00000000-0000-4000-8000-00000000e002';

async function seed(url: string) {
  if (!(await sql(ADMIN_URL, 'SELECT 1 FROM pg_database WHERE datname = $1', [DB])).length) {
    await sql(ADMIN_URL, `CREATE DATABASE "${DB}"`);
    await applyMigrations({ kind: 'pg', url });
  }
  const [{ n }] = await sql(url, 'SELECT count(*)::int AS n FROM licenses WHERE tenant_id = $1', [TENANT]);
  if (n === LICENSES) return console.log(`Reusing ${n} seeded licenses (DROP DATABASE ${DB} to rebuild).`);
  const t0 = Date.now();
  await sql(url, `
    -- A bench database of its own: its triggers (the license tallies) and trigram indexes are left out while
    -- seeding (a million rows through them takes the better part of an hour on a small machine), then rebuilt.
    SET session_replication_role = replica;
    DROP INDEX IF EXISTS licenses_customer_email_trgm_idx; DROP INDEX IF EXISTS licenses_key_hint_trgm_idx;
    TRUNCATE licenses, api_keys, users, products, tenants CASCADE;
    INSERT INTO tenants (id, name, key_prefix, created_at, updated_at) VALUES ('${TENANT}', 'Export Co', 'EXPO', now(), now());
    INSERT INTO users (id, tenant_id, email, role, password_hash, created_at, updated_at) VALUES ('${USER}', '${TENANT}', 'admin@export.test', 'CompanyAdmin', 'unused', now(), now());
    INSERT INTO products (id, tenant_id, name, created_at, updated_at) SELECT gen_random_uuid(), '${TENANT}', 'Product ' || p, now(), now() FROM generate_series(1, 5) p;
    INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, status, expires_at, customer_email, features, custom_fields, created_at, updated_at)
    SELECT gen_random_uuid(), '${TENANT}', (SELECT id FROM products ORDER BY name LIMIT 1 OFFSET n % 5), md5('export' || n), 'EXPO-…-' || upper(substr(md5(n::text), 1, 4)),
           1 + n % 10, (ARRAY['active', 'active', 'suspended', 'revoked'])[1 + n % 4]::license_status, now() + (n % 700 - 100) * interval '1 day',
           'customer' || n || '@example' || n % 97 || '.test', ARRAY['pro', 'sync'], jsonb_build_object('order', 'SO-' || n, 'note', '=HYPERLINK("x")'),
           now() - n * interval '1 second', now()
      FROM generate_series(1, ${LICENSES}) n;
    CREATE INDEX licenses_customer_email_trgm_idx ON licenses USING GIN (customer_email gin_trgm_ops);
    CREATE INDEX licenses_key_hint_trgm_idx ON licenses USING GIN (key_hint gin_trgm_ops);
    ANALYZE licenses;`);
  console.log(`Seeded ${LICENSES} licenses in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

const heapMiB = () => {
  global.gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

async function main() {
  if (!global.gc) throw new Error('run with node --expose-gc (pnpm bench:export does)');
  const url = new URL(ADMIN_URL);
  url.pathname = `/${DB}`;
  await seed(url.toString());
  const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-bench-export-'));
  const config = loadConfig({ NODE_ENV: 'production', DATABASE_URL: url.toString(), DATA_DIR: dataDir, PUBLIC_URL: 'http://127.0.0.1', SERVER_SECRET: 'bench-export-secret-0123456789abcdef0123456789', LOG_LEVEL: 'warn' });
  const runtime = await openDeps(config, createLogger('warn'));
  const actor = { kind: 'user' as const, userId: USER, tenantId: TENANT, role: 'CompanyAdmin' as const, email: 'admin@export.test', sessionFamilyId: null };
  const { key } = await createApiKey({ db: runtime.deps.db, secrets: runtime.deps.secrets, now: new Date(), actor, meta: NO_META }, { name: `bench ${Date.now()}`, role: 'ReadOnly' });
  const app = createApp(runtime.deps);

  const baseline = heapMiB();
  const samples: { rows: number; heapMiB: number }[] = [{ rows: 0, heapMiB: baseline }];
  const t0 = Date.now();
  const response = await app.fetch(new Request('http://127.0.0.1/api/licenses/export', { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: '{}' }));
  if (response.status !== 200) throw new Error(`export: HTTP ${response.status} ${await response.text()}`);
  let lines = 0;
  let bytes = 0;
  let next = SAMPLE_EVERY;
  const decoder = new TextDecoder();
  const reader = response.body!.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    const chunk = read.value;
    bytes += chunk.byteLength;
    // Rows have no quoted line breaks here: a CRLF ends a row.
    lines += decoder.decode(chunk, { stream: true }).split('\r\n').length - 1;
    if (lines - 1 >= next) {
      samples.push({ rows: lines - 1, heapMiB: heapMiB() });
      next += SAMPLE_EVERY;
    }
  }
  const seconds = (Date.now() - t0) / 1000;
  const rows = lines - 1;
  await runtime.close();
  const heaps = samples.slice(1).map((sample) => sample.heapMiB);
  const result = {
    at: new Date().toISOString(),
    rows,
    megabytes: +(bytes / 2 ** 20).toFixed(1),
    seconds: +seconds.toFixed(1),
    rowsPerSecond: Math.round(rows / seconds),
    baselineHeapMiB: +baseline.toFixed(1),
    firstSampleHeapMiB: +heaps[0].toFixed(1),
    maxHeapMiB: +Math.max(...heaps).toFixed(1),
    lastSampleHeapMiB: +heaps[heaps.length - 1].toFixed(1),
    /** Heap growth from the first sample to the last (rows ×10): about zero when streamed. */
    growthMiB: +(heaps[heaps.length - 1] - heaps[0]).toFixed(1),
    samples: samples.map((sample) => ({ rows: sample.rows, heapMiB: +sample.heapMiB.toFixed(1) })),
  };
  if (rows !== LICENSES) throw new Error(`exported ${rows} rows of ${LICENSES}`);
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/export-latest.json', `${JSON.stringify(result, null, 2)}\n`);
  const table = result.samples.map((sample) => `| ${sample.rows.toLocaleString('en')} | ${sample.heapMiB} |`).join('\n');
  writeFileSync(
    'bench/results/export-latest.md',
    `# License export, ${rows.toLocaleString('en')} rows (${result.at})\n\n${result.megabytes} MiB of CSV in ${result.seconds} s (${result.rowsPerSecond.toLocaleString('en')} rows/s). Heap after a full GC:\n\n| rows exported | heap MiB |\n|---|---|\n${table}\n\nGrowth from the first sample to the last: ${result.growthMiB} MiB.\n`,
  );
  console.log(JSON.stringify(result, null, 2));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
