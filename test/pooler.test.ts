import pg from 'pg';
import { afterAll, beforeAll, expect } from 'vitest';
import { describeWith, itWith } from './support/optional.js';
import { openDatabase } from '../server/src/db/database.js';
import { licenseKeyDigest, SELECT_LICENSE_BY_DIGEST } from '../server/src/services/licenses/license-record.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { adminUrl } from './support/pg.js';
import { needPgBouncer, startPgBouncer, type PgBouncer } from './support/pgbouncer.js';

/**
 * docs/performance.md › "Connection pooling": the server works through PgBouncer in transaction
 * mode, which hands each transaction whichever server connection is free. Three server connections for the app's
 * ten pooled clients, so statements of one client land on several sessions: a named prepared statement or a startup
 * option would fail here (the first test shows PgBouncer refusing the latter).
 */
const need = needPgBouncer();
const describePooled = describeWith(need);
const it = itWith(need);

let bouncer: PgBouncer;
let t: TestApp;

beforeAll(async () => {
  if (need.missing) return;
  bouncer = await startPgBouncer(adminUrl(), { poolSize: 3 });
  t = await startTestApp({ connectVia: (url) => bouncer.urlFor(url), env: { DATABASE_POOL_SIZE: '10', DATABASE_POOL_MODE: 'transaction' } });
}, 60_000);
afterAll(async () => {
  await t?.close();
  await bouncer?.stop();
});

const NAMED_STATEMENTS_OFF = /named prepared statements do not survive this DATABASE_URL/;

describePooled('hot-path statements (SqlRunner)', () => {
  it('are named prepared statements on a direct connection: parsed and planned once per connection', async () => {
    const db = await openDatabase({ databaseUrl: t.ownerUrl, dataDir: '/nonexistent', poolSize: 1 });
    try {
      for (let i = 0; i < 3; i++) await db.sql.query(SELECT_LICENSE_BY_DIGEST, ['no-such-digest']);
      // One pooled connection: the session that ran them lists the statement once, however often it ran.
      const prepared = await db.sql.query<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements', []);
      expect(prepared.filter((row) => row.statement === SELECT_LICENSE_BY_DIGEST.prepared).map((row) => row.name)).toEqual([expect.stringMatching(/^kf_[0-9a-f]{24}$/)]);
    } finally {
      await db.close();
    }
  });

  it('the license lookup gives the same rows as a plain prepared join and through license_by_digest (the unnamed form)', async () => {
    const tenant = await t.seedTenant({ name: 'Lookup Co', keyPrefix: 'LOOK', subscriptionEndsAt: new Date('2031-01-01T00:00:00Z') });
    const editor = await t.seedProduct(tenant.id, 'Editor');
    const viewer = await t.seedProduct(tenant.id, 'Viewer');
    const bundle = await t.seedProduct(tenant.id, 'Suite', [viewer.name, editor.name]);
    const plain = await t.seedLicense(tenant.id, editor.id, { customerEmail: 'a@lookup.test', features: ['pro', 'export'], customFields: { seat: 'A' }, minVersion: '1.0.0', expiresAt: new Date('2030-05-01T00:00:00Z') });
    const ofBundle = await t.seedLicense(tenant.id, bundle.id, { isTrial: true, expiresAt: new Date('2029-01-01T00:00:00Z'), offlineGraceDays: 7 });
    const digestOf = (key: string) => licenseKeyDigest(t.deps.secrets, key)!;
    const digests = [digestOf(plain.key), digestOf(ofBundle.key), 'no-such-digest'];
    for (const digest of digests) {
      const [prepared] = await t.deps.db.sql.query(SELECT_LICENSE_BY_DIGEST.prepared, [digest]);
      const [viaFunction] = await t.deps.db.sql.query(SELECT_LICENSE_BY_DIGEST.viaFunction, [digest]);
      expect(prepared, digest).toEqual(viaFunction);
    }
    const [bundled] = await t.deps.db.sql.query<{ bundleProducts: string[] }>(SELECT_LICENSE_BY_DIGEST.prepared, [digestOf(ofBundle.key)]);
    expect(bundled.bundleProducts).toEqual(['Editor', 'Viewer']);
  });
});

describePooled('through PgBouncer in transaction mode', () => {
  it('is a real transaction-mode pooler: startup options are refused, the server connects without any', async () => {
    const withOptions = new pg.Client({ connectionString: t.databaseUrl, options: '-c jit=off' });
    withOptions.on('error', () => {});
    await expect(withOptions.connect()).rejects.toThrow(/unsupported startup parameter: options/);
    await withOptions.end().catch(() => {});
    expect(t.databaseUrl).toContain(`:${bouncer.port}/`);
    expect((await t.get('/readyz')).status).toBe(200);
  });

  it('validate, activate and meter concurrently: no server error, seats and totals exact', async () => {
    const { tenant, product, key: activationKey } = await t.seedBasic({ maxActivations: 40 });
    const keys = await Promise.all([1, 2, 3].map(async () => (await t.seedLicense(tenant.id, product.id, { maxActivations: 5 })).key));
    const devices = Array.from({ length: 60 }, (_, i) => `device-${i}`);
    const meters = Array.from({ length: 60 }, (_, i) => ({ key: keys[i % 3], idempotencyKey: `use-${i}` }));
    const validations = Array.from({ length: 150 }, (_, i) => keys[i % 3]);

    type Call = { kind: 'activate' | 'meter' | 'validate'; run: () => ReturnType<TestApp['post']> };
    const calls: Call[] = [
      // 60 devices for 40 seats: 40 activate, 20 are told SeatsExhausted.
      ...devices.map((deviceId): Call => ({ kind: 'activate', run: () => t.activate({ licenseKey: activationKey, deviceId }) })),
      // Each meter call twice (a client retrying): recorded once.
      ...[...meters, ...meters].map(({ key, idempotencyKey }): Call => ({ kind: 'meter', run: () => t.post('/api/v1/meter', { licenseKey: key, event: 'api.calls', quantity: 2, idempotencyKey }) })),
      ...validations.map((licenseKey): Call => ({ kind: 'validate', run: () => t.post('/api/v1/validate', { licenseKey }) })),
    ];
    calls.sort(() => Math.random() - 0.5);
    const responses = await Promise.all(calls.map(async (call) => ({ kind: call.kind, ...(await call.run()) })));

    expect(responses.filter((response) => response.status !== 200).map((response) => `${response.kind}: ${response.status} ${response.text}`)).toEqual([]);
    const answers = (kind: Call['kind']) => responses.filter((response) => response.kind === kind).map((response) => response.json.isValid ? 'valid' : response.json.errorCode);
    expect(answers('validate')).toEqual(validations.map(() => 'valid'));
    expect(answers('meter')).toEqual(meters.flatMap(() => ['valid', 'valid']));
    expect(answers('activate').sort()).toEqual([...Array(40).fill('valid'), ...Array(20).fill('SeatsExhausted')].sort());

    const license = await t.prisma.license.findFirstOrThrow({ where: { tenantId: tenant.id, maxActivations: 40 } });
    expect(license.currentActivations).toBe(40);
    expect(await t.prisma.activation.count({ where: { licenseId: license.id, deactivatedAt: null } })).toBe(40);
    const recorded = await t.prisma.usageEvent.groupBy({ by: ['licenseId'], where: { tenantId: tenant.id }, _sum: { quantity: true }, _count: true });
    expect(recorded.map((row) => [row._count, row._sum.quantity])).toEqual([[20, 40], [20, 40], [20, 40]]);
    // The statements went through the pooler (its log names the test database's logins).
    expect(bouncer.log()).toMatch(new RegExp(`login attempt: db=${new URL(t.databaseUrl).pathname.slice(1)} `));
    // Declared as a transaction-mode pooler: no statement was named, so none needed the fallback.
    expect(t.logs.join('')).not.toMatch(NAMED_STATEMENTS_OFF);
  }, 120_000);

  it('a pooler left undeclared (DATABASE_POOL_MODE at its default): the first mismatch turns naming off, one warning, no failed call', async () => {
    const undeclared = await startTestApp({ connectVia: (url) => bouncer.urlFor(url), env: { DATABASE_POOL_SIZE: '10' } });
    try {
      const { key } = await undeclared.seedBasic({ maxActivations: 100 });
      const responses = await Promise.all(Array.from({ length: 120 }, (_, i) => (i % 4 === 0 ? undeclared.activate({ licenseKey: key, deviceId: `undeclared-${i}` }) : undeclared.post('/api/v1/validate', { licenseKey: key }))));
      expect(responses.filter((response) => response.status !== 200 || response.json.isValid !== true).map((response) => `${response.status} ${response.text}`)).toEqual([]);
      expect(undeclared.logs.join('').match(new RegExp(NAMED_STATEMENTS_OFF, 'g'))).toHaveLength(1);
    } finally {
      await undeclared.close();
    }
  }, 120_000);
});
