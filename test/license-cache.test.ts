import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateLicenseKey, normalizeLicenseKey } from '../server/src/crypto/license-key.js';
import { ServerSecrets } from '../server/src/crypto/secrets.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { createHttpServer } from '../server/src/app.js';
import { loadConfig } from '../server/src/config.js';
import { openDeps } from '../server/src/deps.js';
import { createLogger } from '../server/src/logger.js';
import { LicenseCache } from '../server/src/services/licenses/license-cache.js';
import { CHANGE_FEED_APPLICATION_NAME, pgLicenseChangeFeed, purgeLicenseCacheChanges, type ChangeFeedHandler } from '../server/src/services/licenses/license-change-feed.js';
import type { Database } from '../server/src/db/database.js';
import type { LicenseRecord } from '../server/src/services/licenses/license-record.js';
import { itWith, needCommands } from './support/optional.js';
import { startPgBouncer, type PgBouncer } from './support/pgbouncer.js';
import { promtoolMetricsLint } from './support/prometheus.js';
import { postJson, startServerProcess, stopAllProcesses, type ServerProcess } from './support/processes.js';
import { startPrivatePg, type PrivatePg } from './support/private-pg.js';
import { seedDatabase, seeder } from './support/seed.js';
import { TestClock, startTestApp } from './support/harness.js';
import { waitUntil } from './support/wait.js';

/**
 * The license cache of validate (services/licenses/license-cache.ts, its change feed license-change-feed.ts,
 * migration license_cache_change_log): what the database records is forgotten, and a process answers from memory
 * only while it can prove it has read every change committed more than LICENSE_CACHE_STALENESS_MS ago. The checks below compare answers with the commit times
 * of changes, never with how long something took: a slow machine only makes the servers bypass their caches more.
 */

const record = (id: string, tenantId = 't1', status = 'active'): LicenseRecord =>
  ({ id, tenantId, status, features: [], customFields: null, bundleProducts: null, productName: 'P' }) as unknown as LicenseRecord;

describe('LicenseCache (in memory)', () => {
  /** The requests' clock (ms): fixed unless a test moves it. */
  const NOW = Date.parse('2026-06-01T12:00:00.000Z');
  const open = () => {
    const cache = new LicenseCache({ stalenessMs: 60_000, maxAgeMs: 60_000, maxEntries: 100, maxBytes: 1 << 20 });
    cache.listening();
    cache.confirmed(performance.now());
    return cache;
  };

  it('serves nothing before its feed is confirmed, and nothing after the feed is lost until it is confirmed again', async () => {
    const cache = new LicenseCache({ stalenessMs: 60_000, maxAgeMs: 60_000, maxEntries: 100, maxBytes: 1 << 20 });
    let loads = 0;
    const load = async () => (loads++, record('a'));
    await cache.read('d', load, NOW);
    await cache.read('d', load, NOW);
    expect(loads).toBe(2);
    cache.listening();
    await cache.read('d', load, NOW);
    expect(loads).toBe(3);
    cache.confirmed(performance.now());
    await cache.read('d', load, NOW);
    await cache.read('d', load, NOW);
    expect(loads).toBe(4);
    cache.lost();
    await cache.read('d', load, NOW);
    expect(loads).toBe(5);
    cache.listening();
    cache.confirmed(performance.now());
    await cache.read('d', load, NOW);
    expect(loads).toBe(6); // flushed by the loss: read again
    expect(cache.stats()).toMatchObject({ hits: 1, bypassed: 4, resyncs: 1 });
  });

  it('does not keep a read that a notification naming its license overtook (the change committed after the read began)', async () => {
    for (const [announced, kept] of [['la', false], ['tt1', false], ['*', false], ['lb', true], ['tt2', true]] as const) {
      const cache = open();
      let release!: (value: LicenseRecord) => void;
      const pending = cache.read('d', () => new Promise<LicenseRecord>((resolve) => (release = resolve)), NOW);
      const other = cache.read('e', async () => record('c'), NOW); // another read out at the same time, finished first
      await other;
      cache.notify(announced);
      release(record('a', 't1'));
      await pending;
      let loads = 0;
      await cache.read('d', async () => (loads++, record('a', 't1')), NOW);
      expect(loads, `after ${announced}`).toBe(kept ? 0 : 1);
    }
  });

  it('forgets by license, by tenant and everything; a reissued digest replaces the old one', async () => {
    const cache = open();
    let loads = 0;
    const load = (id: string, tenant: string) => async () => (loads++, record(id, tenant));
    await cache.read('da', load('a', 't1'), NOW);
    await cache.read('db', load('b', 't1'), NOW);
    await cache.read('dc', load('c', 't2'), NOW);
    cache.notify('la');
    await cache.read('da', load('a', 't1'), NOW);
    await cache.read('db', load('b', 't1'), NOW);
    expect(loads).toBe(4);
    cache.notify('tt1');
    await cache.read('da', load('a', 't1'), NOW);
    await cache.read('db', load('b', 't1'), NOW);
    await cache.read('dc', load('c', 't2'), NOW);
    expect(loads).toBe(6);
    cache.notify('*');
    await cache.read('dc', load('c', 't2'), NOW);
    expect(loads).toBe(7);
    await cache.read('dc2', load('c', 't2'), NOW); // license c under a new digest
    cache.notify('lc');
    await cache.read('dc', load('c', 't2'), NOW);
    await cache.read('dc2', load('c', 't2'), NOW);
    expect(loads).toBe(10);
    cache.notify('x-unknown');
    expect(cache.stats().entries).toBe(0);
  });

  it('serves an entry for less than maxAgeMs after the read that filled it began, on the requests\' clock', async () => {
    const cache = new LicenseCache({ stalenessMs: 60_000, maxAgeMs: 5_000, maxEntries: 100, maxBytes: 1 << 20 });
    cache.listening();
    cache.confirmed(performance.now());
    let loads = 0;
    const load = async () => (loads++, record('a'));
    await cache.read('d', load, NOW);
    await cache.read('d', load, NOW + 4_999);
    expect(loads).toBe(1);
    await cache.read('d', load, NOW + 5_000); // as old as the bound: read again, and kept from then on
    await cache.read('d', load, NOW + 9_999);
    expect(loads).toBe(2);
    await cache.read('d', load, NOW + 4_000); // the clock set back: an age below zero is not trusted
    expect(loads).toBe(3);
    expect(cache.stats()).toMatchObject({ hits: 2, misses: 3, expirations: 2 });
  });

  it('is bounded by entries and by bytes', async () => {
    const byEntries = new LicenseCache({ stalenessMs: 60_000, maxAgeMs: 60_000, maxEntries: 3, maxBytes: 1 << 30 });
    byEntries.listening();
    byEntries.confirmed(performance.now());
    for (let i = 0; i < 10; i++) await byEntries.read(`d${i}`, async () => record(`l${i}`), NOW);
    expect(byEntries.stats().entries).toBe(3);
    const byBytes = new LicenseCache({ stalenessMs: 60_000, maxAgeMs: 60_000, maxEntries: 1000, maxBytes: 4_000 });
    byBytes.listening();
    byBytes.confirmed(performance.now());
    for (let i = 0; i < 50; i++) await byBytes.read(`d${i}`, async () => record(`l${i}`), NOW);
    expect(byBytes.stats().bytes).toBeLessThanOrEqual(4_000);
    expect(byBytes.stats().entries).toBeGreaterThan(0);
  });

  it('stops answering from memory the moment its change feed is stopped (a real feed on PostgreSQL)', async () => {
    const cache = new LicenseCache({ stalenessMs: 60_000, maxAgeMs: 60_000, maxEntries: 100, maxBytes: 1 << 20 });
    const listener = pgLicenseChangeFeed(cluster.url, cache, createLogger('silent'), { pollMs: 50, deadMs: 10_000, retentionMs: 30_000, pruneEveryMs: 10_000 });
    await listener.start();
    let loads = 0;
    const load = async () => (loads++, record('a'));
    await waitUntil(async () => {
      await cache.read('d', load, NOW);
      return cache.stats().hits > 0;
    }, { timeout: 30_000, what: 'the cache to answer from memory' });
    await listener.stop();
    const before = loads;
    await cache.read('d', load, NOW);
    expect(loads).toBe(before + 1); // read from the database: a stopped feed reads nothing, so memory may be stale
  });
});

describe('the embedded database (PGlite)', () => {
  it('caches, and a change is forgotten before its writer hears it committed (one session, notified in process)', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-lcache-pglite-'));
    const runtime = await openDeps(loadConfig({ DATA_DIR: dataDir, SERVER_SECRET: 'pglite-cache-secret-0123456789abcdef0123456789', LOG_LEVEL: 'silent' }), createLogger('silent'));
    const server = createHttpServer(runtime.deps);
    try {
      expect(runtime.deps.licenseCache).toBeDefined();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/validate`;
      const { key, license } = await seeder({ db: runtime.deps.db, secrets: runtime.deps.secrets, now: () => new Date() }).basic();
      for (let i = 0; i < 3; i++) expect((await postJson(url, { licenseKey: key })).json.isValid).toBe(true);
      expect(runtime.deps.licenseCache!.stats().hits).toBe(2);
      await runtime.deps.db.prisma.license.update({ where: { id: license.id }, data: { status: 'suspended', suspendedAt: new Date() } });
      expect((await postJson(url, { licenseKey: key })).json.errorCode).toBe('Suspended');
    } finally {
      server.close();
      await runtime.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('a write no trigger announces (session_replication_role = replica)', () => {
  it('is honoured once the entry reaches LICENSE_CACHE_MAX_AGE_MS (on the app\'s clock), not before', async () => {
    const MAX_AGE_MS = 5_000;
    const clock = new TestClock();
    const app = await startTestApp({ clock, env: { LICENSE_CACHE: 'on', LICENSE_CACHE_MAX_AGE_MS: String(MAX_AGE_MS) } });
    const owner = new pg.Client({ connectionString: app.ownerUrl });
    await owner.connect();
    try {
      const cache = app.deps.licenseCache!;
      expect(cache).toBeDefined();
      const { key, license } = await app.seedBasic();
      const validate = async () => (await app.post('/api/v1/validate', { licenseKey: key })).json as { isValid: boolean; errorCode: string | null };
      // A validate answered from memory. The cache reads the database while it cannot prove itself current (its
      // LISTEN round trip older than the staleness bound, on a busy machine): ask until one is a hit.
      const fromMemory = () =>
        waitUntil(async () => {
          const hits = cache.stats().hits;
          const answer = await validate();
          return cache.stats().hits > hits && answer;
        }, { timeout: 30_000, interval: 50, what: 'a validate answered from the license cache' });
      // Filled at this clock reading (it does not move until the test moves it).
      expect((await fromMemory()).isValid).toBe(true);

      // What pg_restore --disable-triggers and logical replication do: the triggers that NOTIFY do not fire.
      await owner.query('BEGIN');
      await owner.query('SET LOCAL session_replication_role = replica');
      await owner.query(`UPDATE licenses SET status = 'revoked', revoked_at = now() WHERE id = $1`, [license.id]);
      await owner.query('COMMIT');
      expect((await app.prisma.license.findUniqueOrThrow({ where: { id: license.id } })).status).toBe('revoked');
      // Nothing told the cache: it answers from memory what it read, until the entry is as old as the bound.
      expect((await fromMemory()).isValid).toBe(true);
      clock.advance(MAX_AGE_MS - 1);
      expect((await fromMemory()).isValid).toBe(true);

      clock.advance(1);
      // Every answer from now on is the revocation: from the database while the cache bypasses itself, else because
      // the entry, as old as the bound, is read again (counted as an expiration).
      const hits = cache.stats().hits;
      const answers: { isValid: boolean; errorCode: string | null }[] = [];
      await waitUntil(
        async () => {
          const answer = await validate();
          answers.push(answer);
          return answer.isValid || (cache.stats().expirations ?? 0) > 0; // a stale answer ends the wait too (and fails below)
        },
        { timeout: 30_000, interval: 50, what: 'the entry read again at its maximum age' },
      );
      expect(answers.map((answer) => answer.errorCode)).toEqual(answers.map(() => 'LicenseRevoked'));
      expect(cache.stats()).toMatchObject({ expirations: 1, hits });
      expect(await fromMemory()).toMatchObject({ isValid: false, errorCode: 'LicenseRevoked' }); // the fresh entry is kept
    } finally {
      await owner.end().catch(() => undefined);
      await app.close();
    }
  }, 120_000);
});

// ─── Three server processes on one private PostgreSQL ─────────────────────────────────────────────────────────────
const SECRET = 'license-cache-secret-0123456789abcdef0123456789';
const BOUND_MS = 400;
const METRICS_TOKEN = 'license-cache-metrics-0123456789abcdef';
const UNLIMITED = { RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000', RATE_LIMIT_TENANT_PER_MINUTE: '1000000', RATE_LIMIT_LICENSE_PER_MINUTE: '1000000' };
const KEYS = 6;

let cluster: PrivatePg;
let bouncer: PgBouncer;
let owner: pg.Client;
let cachedA: ServerProcess;
let cachedB: ServerProcess;
let reference: ServerProcess;
/** Every key ever given (a reissued license's former key answers LicenseNotFound), and each license's current one. */
let keys: string[] = [];
let current: string[] = [];
let ids: string[] = [];
let tenantId = '';
let productId = '';
const secrets = new ServerSecrets(SECRET);
/** The fault's own duration (how long a process stays paused), and the bound a test waits out: not waits for a condition. */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Answer = { isValid: boolean; errorCode: string | null; productName?: string; features?: string[]; expiresAt?: string | null; remainingActivations?: number; vendorWarning?: string | null };
const project = (body: any): string => JSON.stringify({ isValid: body.isValid, errorCode: body.errorCode, productName: body.productName, features: body.features, expiresAt: body.expiresAt, remainingActivations: body.remainingActivations, vendorWarning: body.vendorWarning } satisfies Answer);
const validate = async (server: ServerProcess, key: string) => {
  const { status, json } = await postJson(`${server.url}/api/v1/validate`, { licenseKey: key });
  expect(status).toBe(200);
  return json;
};
const metricsText = async (server: ServerProcess) => (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
const cacheCounter = async (server: ServerProcess, name: string) => {
  const text = await metricsText(server);
  return Number(text.match(new RegExp(`^keyforge_license_cache_${name}_total (\\S+)$`, 'm'))?.[1] ?? NaN);
};

beforeAll(async () => {
  cluster = await startPrivatePg();
  await applyMigrations({ kind: 'pg', url: cluster.url });
  bouncer = await startPgBouncer(cluster.url);
  const seeded = await seedDatabase(cluster.url, SECRET, async (seed) => {
    const tenant = await seed.tenant();
    const product = await seed.product(tenant.id);
    const made = [];
    for (let i = 0; i < KEYS; i++) made.push(await seed.license(tenant.id, product.id, { features: ['base'], maxActivations: 5 }));
    return { tenant, product, made };
  });
  tenantId = seeded.tenant.id;
  productId = seeded.product.id;
  keys = seeded.made.map((m) => m.key);
  current = [...keys];
  ids = seeded.made.map((m) => m.license.id);
  owner = new pg.Client({ connectionString: cluster.url });
  await owner.connect();
  // Requests through PgBouncer in transaction mode; A's change feed straight to PostgreSQL (DATABASE_DIRECT_URL), B's
  // through PgBouncer too (no direct URL: each poll is one statement, no LISTEN).
  const common = { SERVER_SECRET: SECRET, LOG_LEVEL: 'warn', METRICS_TOKEN, ...UNLIMITED };
  const cached = { ...common, DATABASE_URL: bouncer.urlFor(cluster.url), DATABASE_POOL_MODE: 'transaction', LICENSE_CACHE: 'on', LICENSE_CACHE_STALENESS_MS: String(BOUND_MS) };
  [cachedA, cachedB, reference] = await Promise.all([
    startServerProcess({ ...cached, DATABASE_DIRECT_URL: cluster.url, DATA_DIR: `/tmp/kf-lcache-a-${process.pid}` }),
    startServerProcess({ ...cached, DATA_DIR: `/tmp/kf-lcache-b-${process.pid}` }),
    startServerProcess({ ...common, DATABASE_URL: cluster.url, LICENSE_CACHE: 'off', DATA_DIR: `/tmp/kf-lcache-ref-${process.pid}` }),
  ]);
}, 240_000);

afterAll(async () => {
  await stopAllProcesses();
  await owner?.end().catch(() => undefined);
  await bouncer?.stop();
  cluster?.destroy();
});

// Changes made straight in the database, as any write path would (a service, a migration, psql): only the triggers
// can tell the caches.
/** A change feed on the private cluster whose handler records what it reads (and counts its answered polls). */
async function recordingFeed() {
  const heard: string[] = [];
  const state = { polls: 0, resets: 0 };
  const handler: ChangeFeedHandler = {
    notify: (payload) => void heard.push(payload),
    listening: () => void state.resets++,
    lost: () => undefined,
    confirmed: () => void state.polls++,
  };
  const feed = pgLicenseChangeFeed(cluster.url, handler, createLogger('silent'), { pollMs: 20, deadMs: 10_000, retentionMs: 30_000, pruneEveryMs: 10_000 });
  await feed.start();
  const heardToken = (token: string) => heard.some((payload) => payload.split(',').includes(token));
  return { heard, state, feed, heardToken, expectHeard: (token: string) => waitUntil(() => heardToken(token), { timeout: 30_000, interval: 20, what: `a change with ${token}` }) };
}
const CHANGES = ['revoke', 'suspend', 'reinstate', 'expire', 'renew', 'features', 'activations', 'rename', 'subscription', 'reissue'] as const;
type Change = (typeof CHANGES)[number];
let renames = 0;
async function change(kind: Change, index: number) {
  const id = ids[index];
  switch (kind) {
    case 'revoke':
      return owner.query(`UPDATE licenses SET status = 'revoked', revoked_at = now() WHERE id = $1`, [id]);
    case 'suspend':
      return owner.query(`UPDATE licenses SET status = 'suspended', suspended_at = now() WHERE id = $1`, [id]);
    case 'reinstate':
      return owner.query(`UPDATE licenses SET status = 'active', suspended_at = NULL, revoked_at = NULL WHERE id = $1`, [id]);
    case 'expire':
      return owner.query(`UPDATE licenses SET expires_at = now() - interval '30 days' WHERE id = $1`, [id]);
    case 'renew':
      return owner.query(`UPDATE licenses SET expires_at = now() + interval '30 days' WHERE id = $1`, [id]);
    case 'features':
      return owner.query(`UPDATE licenses SET features = ARRAY['base', $2] WHERE id = $1`, [id, `f${Math.floor(Math.random() * 1000)}`]);
    case 'activations':
      return owner.query(`UPDATE licenses SET current_activations = (current_activations + 1) % 5 WHERE id = $1`, [id]);
    case 'rename':
      return owner.query(`UPDATE products SET name = $2 WHERE id = $1`, [productId, `Studio ${++renames}`]);
    case 'subscription':
      return owner.query(`UPDATE tenants SET subscription_ends_at = now() + ($2 || ' days')::interval WHERE id = $1`, [tenantId, String(-5 + Math.floor(Math.random() * 10))]);
    case 'reissue': {
      const key = generateLicenseKey('ACME');
      await owner.query(`UPDATE licenses SET key_digest = $2 WHERE id = $1`, [id, secrets.digest(normalizeLicenseKey(key)!)]);
      // The old key is simply unknown from now on (no overlap row): both keys are checked.
      keys.push(key);
      current[index] = key;
      return;
    }
  }
}

describe('two cached servers and an uncached one sharing a database', () => {
  it(`never answer differently from the uncached server for longer than the bound (${BOUND_MS} ms), whatever the interleaving`, async () => {
    // The answer history of every key: (since, answer) per version, `since` recorded once the change's commit returned.
    const history = new Map<string, { since: number; answer: string }[]>();
    const record = async () => {
      const at = performance.now();
      for (const key of keys) {
        const answer = project(await validate(reference, key));
        const versions = history.get(key) ?? [];
        if (versions.at(-1)?.answer !== answer) versions.push({ since: at, answer });
        history.set(key, versions);
      }
    };
    await record();
    const op = fc.oneof(
      { arbitrary: fc.record({ change: fc.constantFrom(...CHANGES), license: fc.nat(KEYS - 1) }), weight: 2 },
      { arbitrary: fc.record({ validate: fc.constantFrom('A', 'B'), key: fc.nat(1000) }), weight: 6 },
      { arbitrary: fc.constant({ wait: true as const }), weight: 1 },
    );
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 20, maxLength: 40 }), async (ops) => {
        for (const step of ops) {
          if ('change' in step) {
            await change(step.change, step.license);
            await record();
          } else if ('validate' in step) {
            const key = keys[step.key % keys.length];
            const started = performance.now();
            const answer = project(await validate(step.validate === 'A' ? cachedA : cachedB, key));
            const versions = history.get(key)!;
            // Allowed: a version current at some moment in [started - bound, now].
            const allowed = versions.filter((version, i) => {
              const until = versions[i + 1]?.since ?? Number.POSITIVE_INFINITY;
              return until > started - BOUND_MS && version.since <= performance.now();
            });
            expect(allowed.map((version) => version.answer), `server ${step.validate}, key #${keys.indexOf(key)}`).toContain(answer);
            checked++;
          } else {
            await pause(BOUND_MS); // the bound passes: from here on only the newest answers are allowed
          }
        }
      }),
      { numRuns: 4 },
    );
    expect(checked).toBeGreaterThan(40);
    // The caches did serve (else this proves nothing about them).
    expect(await cacheCounter(cachedA, 'hits')).toBeGreaterThan(0);
    expect(await cacheCounter(cachedB, 'hits')).toBeGreaterThan(0);
    expect(await cacheCounter(cachedA, 'invalidations')).toBeGreaterThan(0);
  }, 180_000);
});

describe('metrics', () => {
  itWith(needCommands('promtool'))('the license cache metrics pass promtool check metrics', async () => {
    const text = await metricsText(cachedA);
    for (const name of ['hits_total', 'misses_total', 'invalidations_total', 'bypassed_total', 'bypass_seconds_total', 'entries', 'bytes']) expect(text).toContain(`keyforge_license_cache_${name}`);
    expect(promtoolMetricsLint(text)).toBeNull();
  });
});

describe('faults: each followed by a revocation honoured within the bound', () => {
  let victim = 0;
  /** Reinstates a license, has both servers cache it valid, and returns its index. */
  async function cachedValid(): Promise<number> {
    const index = victim++ % KEYS;
    await change('reinstate', index);
    await change('renew', index);
    const key = currentKey(index);
    await waitUntil(async () => (await validate(cachedA, key)).isValid && (await validate(cachedB, key)).isValid, { timeout: 30_000, interval: 50, what: 'both servers to answer valid' });
    return index;
  }
  const currentKey = (index: number) => current[index];
  async function revokeAndCheck(index: number, servers = [cachedA, cachedB]) {
    const key = currentKey(index);
    await change('revoke', index);
    await pause(BOUND_MS); // the bound, from the commit: past it no server may call the key valid
    for (const server of servers) expect((await validate(server, key)).errorCode).toBe('LicenseRevoked');
  }
  async function cacheServesAgain(server: ServerProcess) {
    const index = await cachedValid();
    const before = await cacheCounter(server, 'hits');
    await waitUntil(async () => (await validate(server, currentKey(index)), (await cacheCounter(server, 'hits')) > before), { timeout: 60_000, interval: 100, what: 'the cache to serve again' });
  }

  it('the change feed\'s connection killed (pg_terminate_backend): the cache empties itself and starts over', async () => {
    const index = await cachedValid();
    const resyncs = await cacheCounter(cachedA, 'resyncs');
    // A's feed connection (straight to PostgreSQL); B's polls go through PgBouncer, whose server connections may carry the name too.
    const { rowCount } = await owner.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [CHANGE_FEED_APPLICATION_NAME]);
    expect(rowCount).toBeGreaterThanOrEqual(1);
    await revokeAndCheck(index);
    await waitUntil(async () => (await cacheCounter(cachedA, 'resyncs')) > resyncs, { timeout: 30_000, interval: 100, what: 'server A to count its feed restarted' });
    await cacheServesAgain(cachedA);
    await cacheServesAgain(cachedB);
  }, 120_000);

  it('a revocation whose transaction wrote its log row first and committed last, while other writers commit', async () => {
    const index = await cachedValid();
    const other = (index + 1) % KEYS;
    const early = new pg.Client({ connectionString: cluster.url });
    await early.connect();
    try {
      await early.query('BEGIN');
      await early.query(`UPDATE licenses SET status = 'revoked', revoked_at = now() WHERE id = $1`, [ids[index]]); // its row, and its xid, first
      for (let i = 0; i < 5; i++) await change('features', other); // later rows, committed first
      await pause(BOUND_MS * 2); // both feeds poll past the later rows while the early transaction is still open
      for (const server of [cachedA, cachedB]) expect((await validate(server, currentKey(index))).isValid).toBe(true); // not committed yet
      await early.query('COMMIT');
    } finally {
      await early.end();
    }
    await pause(BOUND_MS); // the bound, from the commit
    for (const server of [cachedA, cachedB]) expect((await validate(server, currentKey(index))).errorCode).toBe('LicenseRevoked');
  }, 120_000);

  it('PgBouncer restarted', async () => {
    const index = await cachedValid();
    const port = bouncer.port;
    await bouncer.stop();
    bouncer = await startPgBouncer(cluster.url, { port });
    await revokeAndCheck(index);
    await cacheServesAgain(cachedA);
  }, 120_000);

  it('PostgreSQL restarted', async () => {
    const index = await cachedValid();
    await owner.end();
    cluster.stopImmediate();
    cluster.start();
    owner = new pg.Client({ connectionString: cluster.url });
    await owner.connect();
    // While the servers reconnect, requests may answer 503; the revocation must then be honoured within the bound.
    await waitUntil(async () => (await postJson(`${cachedA.url}/api/v1/validate`, { licenseKey: keys[0] })).status === 200 && (await postJson(`${cachedB.url}/api/v1/validate`, { licenseKey: keys[0] })).status === 200, { timeout: 60_000, interval: 200, what: 'the servers to answer again' });
    await revokeAndCheck(index);
    await cacheServesAgain(cachedA);
    await cacheServesAgain(cachedB);
  }, 180_000);

  it('a backend killed with SIGKILL: PostgreSQL reinitialises and empties the unlogged change log', async () => {
    const index = await cachedValid();
    const logged = async () => (await owner.query<{ n: number; epoch: string | null }>(
      `SELECT (SELECT count(*)::int FROM license_cache_changes) AS n, (SELECT epoch::text FROM license_cache_changes_epoch) AS epoch`,
    )).rows[0];
    const before = await logged();
    expect(before.n).toBeGreaterThan(0);
    const victimClient = new pg.Client({ connectionString: cluster.url });
    await victimClient.connect();
    victimClient.on('error', () => undefined);
    owner.on('error', () => undefined);
    const { rows: [{ pid }] } = await victimClient.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    process.kill(pid, 'SIGKILL'); // the postmaster ends every backend and recovers, as after any crash
    await victimClient.end().catch(() => undefined);
    await owner.end().catch(() => undefined);
    await waitUntil(async () => {
      const next = new pg.Client({ connectionString: cluster.url });
      try {
        await next.connect();
        owner = next;
        return true;
      } catch {
        await next.end().catch(() => undefined);
        return false;
      }
    }, { timeout: 60_000, interval: 200, what: 'PostgreSQL to accept connections after recovery' });
    await waitUntil(async () => (await postJson(`${cachedA.url}/api/v1/validate`, { licenseKey: keys[0] })).status === 200 && (await postJson(`${cachedB.url}/api/v1/validate`, { licenseKey: keys[0] })).status === 200, { timeout: 60_000, interval: 200, what: 'the servers to answer again' });
    // The log was emptied by the recovery and the feeds wrote a new epoch.
    const after = await logged();
    expect(after.epoch).not.toBeNull();
    expect(after.epoch).not.toBe(before.epoch);
    await revokeAndCheck(index);
    await cacheServesAgain(cachedA);
    await cacheServesAgain(cachedB);
  }, 180_000);

  it('a server paused (SIGSTOP) past the bound answers from the database at once when resumed', async () => {
    const index = await cachedValid();
    cachedA.child.kill('SIGSTOP');
    try {
      await change('revoke', index);
      await pause(BOUND_MS * 3); // the fault: paused well past the bound
    } finally {
      cachedA.child.kill('SIGCONT');
    }
    // Its very first answer after the pause: no wait at all.
    expect((await validate(cachedA, currentKey(index))).errorCode).toBe('LicenseRevoked');
    await pause(BOUND_MS);
    expect((await validate(cachedB, currentKey(index))).errorCode).toBe('LicenseRevoked');
    expect(await cacheCounter(cachedA, 'bypass_seconds')).toBeGreaterThan(0);
  }, 120_000);
});

describe('the change log (migration license_cache_change_log) and its feed', () => {
  it('reads a change whose transaction wrote its row first and committed last (the snapshot, not the position, decides)', async () => {
    const { feed, state, heardToken, expectHeard } = await recordingFeed();
    const early = new pg.Client({ connectionString: cluster.url });
    await early.connect();
    try {
      await early.query('BEGIN');
      await early.query(`UPDATE licenses SET features = ARRAY['early', $2] WHERE id = $1`, [ids[2], String(Math.random())]);
      await owner.query(`UPDATE licenses SET features = ARRAY['late', $2] WHERE id = $1`, [ids[3], String(Math.random())]);
      await expectHeard(`l${ids[3]}`); // the feed has read past the later row
      const polls = state.polls;
      await waitUntil(() => state.polls > polls + 3, { timeout: 30_000, interval: 20, what: 'more polls while the early transaction is open' });
      expect(heardToken(`l${ids[2]}`)).toBe(false);
      await early.query('COMMIT');
      await expectHeard(`l${ids[2]}`);
      // The early transaction's row has the smaller position and transaction id, and committed last.
      const { rows } = await owner.query<{ payload: string; before: boolean }>(
        `SELECT a.payload, a.id < b.id AND a.xid < b.xid AS before FROM license_cache_changes a, license_cache_changes b WHERE a.payload = $1 AND b.payload = $2 ORDER BY a.id DESC, b.id DESC LIMIT 1`,
        [`l${ids[2]}`, `l${ids[3]}`],
      );
      expect(rows[0]?.before).toBe(true);
      expect(state.resets).toBe(1); // one start, no restart
    } finally {
      await early.end().catch(() => undefined);
      await feed.stop();
    }
  }, 60_000);

  it('a log emptied as a crash empties it (its epoch gone with it): the reader starts over, not trusting the lost change', async () => {
    const { feed, state, heardToken, expectHeard } = await recordingFeed();
    try {
      await waitUntil(() => state.polls > 2, { timeout: 30_000, interval: 20, what: 'the feed to poll' });
      const resets = state.resets;
      // What crash recovery does to the unlogged log, in the transaction that also changes a license: its row is gone.
      await owner.query('BEGIN');
      await owner.query(`UPDATE licenses SET features = ARRAY['lost', $2] WHERE id = $1`, [ids[1], String(Math.random())]);
      await owner.query('TRUNCATE license_cache_changes, license_cache_changes_epoch');
      await owner.query('COMMIT');
      await waitUntil(() => state.resets > resets, { timeout: 30_000, interval: 20, what: 'the reader to start over' });
      expect(heardToken(`l${ids[1]}`)).toBe(false); // never read: only the start-over covers it
      expect((await owner.query(`SELECT count(*)::int AS n FROM license_cache_changes_epoch`)).rows[0].n).toBe(1); // a new epoch
      await owner.query(`UPDATE licenses SET features = ARRAY['after', $2] WHERE id = $1`, [ids[1], String(Math.random())]);
      await expectHeard(`l${ids[1]}`);
    } finally {
      await owner.query('ROLLBACK').catch(() => undefined);
      await feed.stop();
    }
  }, 60_000);

  it('prunes what every reader has read, and a reader the horizon passed starts over', async () => {
    const { feed, state } = await recordingFeed();
    // A reader that prunes at every poll, keeping nothing older than its previous snapshot.
    const pruner = pgLicenseChangeFeed(cluster.url, { notify: () => undefined, listening: () => undefined, lost: () => undefined, confirmed: () => undefined }, createLogger('silent'), { pollMs: 20, deadMs: 10_000, retentionMs: 0, pruneEveryMs: 0 });
    await pruner.start();
    try {
      await owner.query(`UPDATE licenses SET features = ARRAY['prune', $2] WHERE id = $1`, [ids[4], String(Math.random())]);
      await waitUntil(async () => (await owner.query(`SELECT count(*)::int AS n FROM license_cache_changes`)).rows[0].n === 0, { timeout: 30_000, interval: 50, what: 'the log pruned' });
      expect(state.resets).toBe(1);
      // The horizon moved past every reader's previous snapshot (as after a pause longer than the retention): rows
      // it needed may be gone, so it forgets everything and starts over from a fresh snapshot. One past this
      // transaction's own id: the reader's previous snapshot, taken before it committed, has an xmin of at most that id,
      // and a horizon equal to a reader's xmin loses it nothing (the prune keeps rows at and above the horizon).
      await owner.query(`UPDATE license_cache_changes_horizon SET below = pg_current_xact_id()::text::bigint + 1`);
      await waitUntil(() => state.resets === 2, { timeout: 30_000, interval: 20, what: 'the reader to start over' });
    } finally {
      await pruner.stop();
      await feed.stop();
    }
  }, 60_000);

  it('the housekeeping job prunes the log even when no server reads it (two runs: record a horizon, then apply it)', async () => {
    const db = { sql: { query: async (text: string, values: unknown[]) => (await owner.query(text, values)).rows } } as unknown as Database;
    await owner.query(`UPDATE licenses SET features = ARRAY['housekeeping', $2] WHERE id = $1`, [ids[5], String(Math.random())]);
    const { rows: [{ xid }] } = await owner.query<{ xid: string }>(`SELECT max(xid)::text AS xid FROM license_cache_changes WHERE payload = $1`, [`l${ids[5]}`]);
    await purgeLicenseCacheChanges({ db }); // records the current xmin, past that change
    await purgeLicenseCacheChanges({ db }); // moves the horizon up to it and deletes below
    const { rows: [horizon] } = await owner.query<{ below: string }>(`SELECT below::text FROM license_cache_changes_horizon`);
    expect(BigInt(horizon.below)).toBeGreaterThan(BigInt(xid));
    expect((await owner.query(`SELECT count(*)::int AS n FROM license_cache_changes WHERE xid <= $1`, [xid])).rows[0].n).toBe(0);
  }, 60_000);

  it('license deletes, bulk changes, bundle members and product deletes, from any statement', async () => {
    const { heard, feed, expectHeard } = await recordingFeed();
    try {
      const copy = (count: number) =>
        owner.query<{ id: string }>(
          `INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, updated_at)
           SELECT gen_random_uuid(), tenant_id, product_id, md5(random()::text) || md5(random()::text), 'X', 1, now() FROM licenses, generate_series(1, $2) WHERE id = $1 RETURNING id`,
          [ids[0], count],
        );
      const { rows: [one] } = await copy(1);
      await owner.query('DELETE FROM licenses WHERE id = $1', [one.id]);
      await expectHeard(`l${one.id}`);

      // An update logs each license (migration license_cache_row_trigger), one that changes no column too.
      const many = (await copy(200)).rows.map((row) => row.id);
      heard.length = 0;
      await owner.query(`UPDATE licenses SET features = ARRAY['bulk'] WHERE id = ANY($1)`, [many]);
      for (const id of many) await expectHeard(`l${id}`);
      heard.length = 0;
      await owner.query('UPDATE licenses SET features = features WHERE id = $1', [many[0]]);
      await expectHeard(`l${many[0]}`);
      // More than 1,000 rows in one poll: everything is forgotten rather than each.
      const more = (await copy(1_100)).rows.map((row) => row.id);
      heard.length = 0;
      await owner.query(`UPDATE licenses SET features = ARRAY['bulk'] WHERE id = ANY($1)`, [more]);
      await expectHeard('*');
      expect(heard.filter((payload) => payload.startsWith('l'))).toEqual([]);
      await owner.query('DELETE FROM licenses WHERE id = ANY($1)', [more]);
      // A delete of more than 150 licenses in one statement: named by company instead.
      heard.length = 0;
      await owner.query('DELETE FROM licenses WHERE id = ANY($1)', [many]);
      await expectHeard(`t${tenantId}`);

      const { rows: [bundle] } = await owner.query<{ id: string }>(`INSERT INTO products (id, tenant_id, name, is_bundle, updated_at) VALUES (gen_random_uuid(), $1, 'Suite', true, now()) RETURNING id`, [tenantId]);
      for (const statement of [
        ['INSERT INTO bundle_items (bundle_id, product_id) VALUES ($1, $2)', [bundle.id, productId]],
        ['DELETE FROM bundle_items WHERE bundle_id = $1', [bundle.id]],
        ['DELETE FROM products WHERE id = $1', [bundle.id]],
      ] as const) {
        heard.length = 0;
        await owner.query(statement[0], [...statement[1]]);
        await expectHeard(`t${tenantId}`);
      }
    } finally {
      await feed.stop();
    }
  }, 60_000);
});
