// `pnpm bench:scale-jobs`: the daily expiry job and the weekly digest at volume. Seeds (once) ~50,000
// licenses of the biggest tenant onto the 30/7/1-day thresholds (plus 100 per other tenant), all with a customer
// email, and 2 admins per tenant; then times each job end to end through the service layer (queueing: notices,
// rendering, outbox rows), sampling this process's RSS. Notices, outbox rows and run records are deleted before
// and after, so every run measures the same work.
// Env: SCALE_DB (default keyforge_scale_jobs; a database `pnpm bench:scale` seeded is reused, else a bare one
// with 20 tenants is created), BENCH_DATABASE_URL (admin URL), SCALE_JOBS_LICENSES (default 50000).
// Writes bench/results/scale-jobs-latest.{json,md}.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openDatabase } from '../server/src/db/database.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { deliverDueEmails, type MailTransport } from '../server/src/services/notifications/delivery.js';
import { queueWeeklyDigests } from '../server/src/services/notifications/digest.js';
import { queueExpiryNotifications } from '../server/src/services/notifications/expiry.js';
import { sql } from './sql.js';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const BIG = Number(process.env.SCALE_JOBS_LICENSES ?? 50_000);
const OTHERS = 100;

/** Creates the database with 20 tenants if it does not exist (pnpm bench:scale builds a bigger one). */
async function ensureDatabase(url: string) {
  const name = new URL(url).pathname.slice(1);
  if ((await sql(ADMIN_URL, 'SELECT 1 FROM pg_database WHERE datname = $1', [name])).length) return;
  await sql(ADMIN_URL, `CREATE DATABASE "${name}"`);
  await applyMigrations({ kind: 'pg', url });
  await sql(url, `
    INSERT INTO tenants (id, name, key_prefix, created_at, updated_at)
    SELECT ('00000000-0000-4000-8000-' || lpad(t::text, 12, '0'))::uuid, 'Tenant ' || t, 'T' || lpad(t::text, 3, '0'), now(), now() FROM generate_series(1, 20) t;
    INSERT INTO products (id, tenant_id, name, created_at, updated_at)
    SELECT gen_random_uuid(), t.id, 'Product ' || p, now(), now() FROM tenants t CROSS JOIN generate_series(1, 5) p;`);
}

/** The threshold licenses and admins, once; returns the instant they were placed relative to (the jobs' `now`). */
async function seed(url: string): Promise<Date> {
  const [marker] = await sql(url, `SELECT to_regclass('scale_jobs_seeded') IS NOT NULL AS ok`);
  if (marker.ok) {
    const [row] = await sql(url, 'SELECT at FROM scale_jobs_seeded');
    console.log(`Reusing the expiry-job seed of ${row.at.toISOString()} (DROP TABLE scale_jobs_seeded to rebuild).`);
    return row.at;
  }
  const t0 = Date.now();
  const [{ at }] = await sql(url, `SELECT date_trunc('day', now()) + interval '8 hours' AS at`);
  const [big] = await sql(url, `SELECT t.id FROM tenants t LEFT JOIN licenses l ON l.tenant_id = t.id GROUP BY t.id ORDER BY count(l.id) DESC, t.id LIMIT 1`);
  await sql(url, `
    INSERT INTO users (id, tenant_id, email, role, password_hash, created_at, updated_at)
    SELECT gen_random_uuid(), t.id, a || '@' || lower(t.key_prefix) || '.jobs.test', 'CompanyAdmin', 'unused', now(), now()
      FROM tenants t CROSS JOIN unnest(ARRAY['ada', 'bob']) a ON CONFLICT DO NOTHING;
    -- The big tenant: ${BIG} licenses on the three thresholds (spread over the window's first half-day), the
    -- others ${OTHERS} each.
    INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, status, expires_at, customer_email, created_at, updated_at)
    SELECT gen_random_uuid(), t.id, (SELECT id FROM products p WHERE p.tenant_id = t.id ORDER BY name LIMIT 1 OFFSET n % 5),
           md5('jobs' || t.id || n), 'J' || n % 1000 || '-…-' || upper(substr(md5(t.id || n::text), 1, 4)), 1 + n % 10, 'active',
           $1::timestamptz + ((ARRAY[1, 7, 30])[1 + n % 3] + 0.05 + (n % 1000) / 2000.0) * interval '1 day',
           'jobs-customer' || n || '@example' || n % 97 || '.test', now(), now()
      FROM tenants t CROSS JOIN LATERAL generate_series(1, CASE WHEN t.id = $2::uuid THEN ${BIG} ELSE ${OTHERS} END) n;
    CREATE TABLE scale_jobs_seeded (at timestamptz NOT NULL);
    INSERT INTO scale_jobs_seeded VALUES ($1);
    ANALYZE licenses;`.replace(/\$1/g, `'${at.toISOString()}'`).replace(/\$2/g, `'${big.id}'`));
  console.log(`Seeded ${BIG} + ${OTHERS}/tenant threshold licenses in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return at;
}

const clean = (url: string) => sql(url, 'TRUNCATE expiry_notices, email_outbox, job_runs, job_run_tenants');

async function timed<T>(run: () => Promise<T>) {
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  let heap = 0;
  let external = 0;
  const sampler = setInterval(() => {
    const usage = process.memoryUsage();
    peak = Math.max(peak, usage.rss);
    heap = Math.max(heap, usage.heapUsed);
    external = Math.max(external, usage.external);
  }, 50);
  const t0 = performance.now();
  try {
    const result = await run();
    return { result, seconds: (performance.now() - t0) / 1000, rssBeforeMb: Math.round(before / 2 ** 20), peakRssMb: Math.round(Math.max(peak, process.memoryUsage().rss) / 2 ** 20), peakHeapMb: Math.round(heap / 2 ** 20), peakExternalMb: Math.round(external / 2 ** 20) };
  } finally {
    clearInterval(sampler);
  }
}

async function largest(url: string, kind: string) {
  const [row] = await sql(url, `SELECT count(*)::int AS n, coalesce(max(octet_length(html) + octet_length(text) + octet_length(subject)), 0)::int AS bytes FROM email_outbox WHERE kind = $1`, [kind]);
  return row as { n: number; bytes: number };
}

/** Times the expiry job and the digest on `url` (seeding it once); returns the figures. */
export async function benchExpiryJob(url: string) {
  await ensureDatabase(url);
  const now = await seed(url);
  const [{ total }] = await sql(url, 'SELECT count(*)::int AS total FROM licenses');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-scale-jobs-'));
  const db = await openDatabase({ databaseUrl: url, dataDir });
  const ctx = { db, now, publicUrl: 'https://licensing.example' };
  try {
    await clean(url);
    const expiry = await timed(() => queueExpiryNotifications(ctx));
    const admin = await largest(url, 'expiry-admin');
    const customer = await largest(url, 'expiry-customer');
    // One delivery run (its 45 s budget) against a provider that answers at once: the database side's pace.
    const instant: MailTransport = { name: 'development', send: async (messages) => messages.map(() => ({ ok: true, messageId: 'bench' })), findDelivered: async () => null };
    const delivery = await timed(() => deliverDueEmails({ db, now }, instant));
    // The digest on the Monday of that week, 09:00.
    const monday = new Date(now.getTime() - ((now.getUTCDay() + 6) % 7) * 86_400_000 + 3600_000);
    const digest = await timed(() => queueWeeklyDigests({ ...ctx, now: monday }));
    const digestEmail = await largest(url, 'weekly-digest');
    await clean(url);
    const figures = {
      at: new Date().toISOString(),
      licensesInDatabase: total,
      expiry: {
        seconds: Number(expiry.seconds.toFixed(1)),
        rssBeforeMb: expiry.rssBeforeMb,
        peakRssMb: expiry.peakRssMb,
        peakHeapMb: expiry.peakHeapMb,
        peakExternalMb: expiry.peakExternalMb,
        notices: expiry.result.notices,
        adminEmails: expiry.result.adminEmails,
        customerEmails: expiry.result.customerEmails,
        tenants: expiry.result.run.tenants,
        failedTenants: expiry.result.run.failedTenants.length,
        largestAdminEmailKb: Math.round(admin.bytes / 1024),
        largestCustomerEmailKb: Math.round(customer.bytes / 1024),
      },
      delivery: { seconds: Number(delivery.seconds.toFixed(1)), sent: delivery.result.sent, perSecond: Math.round(delivery.result.sent / delivery.seconds) },
      digest: { seconds: Number(digest.seconds.toFixed(1)), peakRssMb: digest.peakRssMb, emails: digest.result.emails, largestEmailKb: Math.round(digestEmail.bytes / 1024) },
    };
    console.log(
      `expiry job: ${figures.expiry.seconds} s, peak RSS ${figures.expiry.peakRssMb} MB (${figures.expiry.rssBeforeMb} MB before), ${figures.expiry.notices} notices, ` +
        `${figures.expiry.adminEmails} admin + ${figures.expiry.customerEmails} customer emails, largest admin email ${figures.expiry.largestAdminEmailKb} KB, ${figures.expiry.failedTenants} tenants failed`,
    );
    console.log(`one delivery run (instant provider): ${figures.delivery.sent} sent in ${figures.delivery.seconds} s (${figures.delivery.perSecond}/s)`);
    console.log(`weekly digest: ${figures.digest.seconds} s, peak RSS ${figures.digest.peakRssMb} MB, ${figures.digest.emails} emails, largest ${figures.digest.largestEmailKb} KB`);
    const dir = path.join(import.meta.dirname, 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'scale-jobs-latest.json'), JSON.stringify(figures, null, 2));
    writeFileSync(
      path.join(dir, 'scale-jobs-latest.md'),
      [
        `Expiry/digest bench ${figures.at}: ${total} licenses in the database.`,
        '',
        '| Job | Wall time | Peak RSS | Notices | Emails | Largest email |',
        '|---|---:|---:|---:|---:|---:|',
        `| expiry-notifications | ${figures.expiry.seconds} s | ${figures.expiry.peakRssMb} MB | ${figures.expiry.notices} | ${figures.expiry.adminEmails} admin + ${figures.expiry.customerEmails} customer | ${figures.expiry.largestAdminEmailKb} KB (admin) |`,
        `| email-delivery, one run, instant provider | ${figures.delivery.seconds} s | ${delivery.peakRssMb} MB | — | ${figures.delivery.sent} sent | — |`,
        `| weekly-digest | ${figures.digest.seconds} s | ${figures.digest.peakRssMb} MB | — | ${figures.digest.emails} | ${figures.digest.largestEmailKb} KB |`,
        '',
      ].join('\n'),
    );
    return figures;
  } finally {
    await db.close();
  }
}

if (process.argv[1]?.endsWith('scale-jobs.ts')) {
  const url = Object.assign(new URL(ADMIN_URL), { pathname: `/${process.env.SCALE_DB ?? 'keyforge_scale_jobs'}` }).toString();
  await benchExpiryJob(url);
}
