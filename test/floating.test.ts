import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { endFloatingSession, floatingPoolConsumption, listActiveFloatingSessions } from '../server/src/services/floating/management.js';
import { HEARTBEAT_INTERVAL_SECONDS, LEASE_SECONDS, sweepExpiredFloatingSessions } from '../server/src/services/floating/sessions.js';
import { revokeLicense } from '../server/src/services/licenses/management.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { seedTwoTenants } from './support/tenants.js';
import { runCli } from './support/processes.js';

let t: TestApp;
const clock = new TestClock();
const LEASE_MS = LEASE_SECONDS * 1000;
let tenantId: string;
let productId: string;
let productName: string;
let otherTenantId: string;
/** Every key and session token handed out: none may reach the logs. */
const secrets: string[] = [];

beforeAll(async () => {
  t = await startTestApp({ clock });
  const { A, B } = await seedTwoTenants(t);
  tenantId = A.tenantId;
  productId = A.product!.id;
  productName = A.product!.name;
  otherTenantId = B.tenantId;
});
afterAll(async () => {
  const logs = t.logs.join('');
  expect(logs).toContain('/api/v1/float/heartbeat');
  for (const secret of secrets) expect(logs).not.toContain(secret);
  await t.close();
});

/** Acting as the system (as the operator CLI does), in `tenantId` when given. */
const ctx = (tenantId: string | null = null) => ({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(tenantId), meta: NO_META });

async function floatingLicense(floatingSeats: number | null, attributes: Record<string, unknown> = {}) {
  const { key, license } = await t.seedLicense(tenantId, productId, { floatingSeats, ...attributes });
  secrets.push(key);
  return { key, license };
}

async function checkout(licenseKey: string, body: Record<string, unknown> = {}) {
  const response = await t.post('/api/v1/float/checkout', { licenseKey, ...body });
  if (response.json?.sessionToken) secrets.push(response.json.sessionToken);
  return response;
}
const heartbeat = (sessionToken: string) => t.post('/api/v1/float/heartbeat', { sessionToken });
const checkin = (sessionToken: string) => t.post('/api/v1/float/checkin', { sessionToken });
const activeInDb = (licenseId: string) => t.prisma.floatingSession.count({ where: { licenseId, endedAt: null, leaseExpiresAt: { gt: clock.now() } } });

/** Runs a test body and puts the clock back afterwards. */
async function withClock(run: () => Promise<void>) {
  const start = clock.now().toISOString();
  try {
    await run();
  } finally {
    clock.set(start);
  }
}

describe('POST /api/v1/float/checkout', () => {
  it('takes a seat and returns a one-time session token stored only as a digest', async () => {
    const { key, license } = await floatingLicense(3, { features: ['render'] });
    const response = await checkout(key, { deviceId: 'dev-1', deviceName: 'Render node 1' });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.json).toEqual({
      isValid: true,
      sessionToken: expect.stringMatching(/^kfs_[A-Za-z0-9_-]{43}$/),
      sessionId: expect.any(String),
      leaseExpiresAt: new Date(clock.now().getTime() + LEASE_MS).toISOString(),
      leaseSeconds: LEASE_SECONDS,
      heartbeatIntervalSeconds: HEARTBEAT_INTERVAL_SECONDS,
      floatingSeats: 3,
      remainingFloatingSeats: 2,
      productName: 'Acme Studio',
      expiresAt: null,
      features: ['render'],
      vendorWarning: null,
    });
    const row = await t.prisma.floatingSession.findUniqueOrThrow({ where: { id: response.json.sessionId } });
    expect(row).toMatchObject({ licenseId: license.id, tenantId, deviceId: 'dev-1', deviceName: 'Render node 1', endedAt: null });
    expect(row.tokenDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(response.json.sessionToken.slice(4));
  });

  it('product: a key of another product is refused with ProductMismatch and takes no seat; its own product checks out', async () => {
    const { key, license } = await floatingLicense(2);
    expect((await checkout(key, { deviceId: 'other-app', product: 'Acme Render' })).json).toEqual({ isValid: false, message: expect.stringContaining('"Acme Render"'), errorCode: 'ProductMismatch' });
    expect((await checkout(key, { deviceId: 'other-app', product: ['Acme Render', 'acme studio'] })).json.errorCode).toBe('ProductMismatch');
    expect(await activeInDb(license.id)).toBe(0);
    expect((await checkout(key, { deviceId: 'studio', product: ['Acme Render', 'Acme Studio'] })).json).toMatchObject({ isValid: true, remainingFloatingSeats: 1 });
    expect(await activeInDb(license.id)).toBe(1);
  });

  it('refuses unknown, revoked, expired and pool-less licenses with HTTP 200 rejections', async () => {
    const { key: noPool } = await floatingLicense(null);
    const { key: revoked, license } = await floatingLicense(2);
    await t.prisma.license.update({ where: { id: license.id }, data: { status: 'revoked' } });
    const { key: expired } = await floatingLicense(2, { expiresAt: new Date(clock.now().getTime() - DAY) });
    const rejection = (errorCode: string) => ({ isValid: false, message: expect.any(String), errorCode });
    expect((await checkout(noPool)).json).toEqual(rejection('FloatingNotEnabled'));
    expect((await checkout('ACME-ZZZZ-ZZZZ-ZZZZ-ZZZZ')).json).toEqual(rejection('LicenseNotFound'));
    expect((await checkout('not-a-key-of-anyone')).json).toEqual(rejection('LicenseNotFound'));
    expect((await checkout('not a key')).status).toBe(400);
    expect((await checkout(revoked)).json).toEqual(rejection('LicenseRevoked'));
    expect((await checkout(expired)).json).toEqual(rejection('LicenseExpired'));
    const { key: versioned } = await floatingLicense(2, { minVersion: '3.0.0' });
    expect((await checkout(versioned, { version: '2.9.0' })).json).toEqual(rejection('VersionNotSupported'));
    expect((await checkout(versioned, { version: '3.0.0' })).json.isValid).toBe(true);
    const missing = await t.post('/api/v1/float/checkout', { deviceId: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ code: 'InvalidRequest', fields: { licenseKey: expect.any(String) } });
  });

  it('50 concurrent checkouts on a pool of 5: exactly 5 sessions', async () => {
    const { key, license } = await floatingLicense(5);
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => checkout(key, { deviceId: `host-${i}` })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    const ok = results.filter((r) => r.json.isValid);
    expect(ok).toHaveLength(5);
    expect(results.filter((r) => r.json.errorCode === 'FloatingSeatsExhausted')).toHaveLength(45);
    expect(new Set(ok.map((r) => r.json.sessionToken)).size).toBe(5);
    expect(Math.min(...ok.map((r) => r.json.remainingFloatingSeats))).toBe(0);
    expect(await activeInDb(license.id)).toBe(5);
    expect(await t.prisma.floatingSession.count({ where: { licenseId: license.id } })).toBe(5);
    expect((await listActiveFloatingSessions(ctx(tenantId), license.id)).inUse).toBe(5);
  });

  it('the same deviceId replaces its previous session instead of taking a second seat', async () => {
    const { key, license } = await floatingLicense(1);
    const first = await checkout(key, { deviceId: 'same-host' });
    const retry = await checkout(key, { deviceId: 'same-host' });
    expect(retry.json).toMatchObject({ isValid: true, remainingFloatingSeats: 0 });
    expect((await checkout(key, { deviceId: 'other-host' })).json.errorCode).toBe('FloatingSeatsExhausted');
    expect((await heartbeat(first.json.sessionToken)).json).toMatchObject({ isValid: false, errorCode: 'SessionExpired', message: expect.stringContaining('replaced') });
    expect((await heartbeat(retry.json.sessionToken)).json.isValid).toBe(true);
    expect(await activeInDb(license.id)).toBe(1);
  });
});

describe('heartbeat, checkin and lease expiry', () => {
  it('checkin frees the seat at once and is idempotent', async () => {
    const { key, license } = await floatingLicense(1);
    const a = await checkout(key);
    expect((await checkout(key)).json.errorCode).toBe('FloatingSeatsExhausted');

    const done = await checkin(a.json.sessionToken);
    expect(done.json).toEqual({ checkedIn: true, sessionId: a.json.sessionId, endedAt: clock.now().toISOString(), endReason: 'checkin' });
    expect(await activeInDb(license.id)).toBe(0);
    expect((await checkin(a.json.sessionToken)).json).toEqual(done.json);
    expect((await heartbeat(a.json.sessionToken)).json).toMatchObject({ isValid: false, errorCode: 'SessionExpired' });

    const b = await checkout(key);
    expect(b.json.isValid).toBe(true);
  });

  it('a lease not renewed frees its seat when it lapses (injected clock); the sweep records it', () =>
    withClock(async () => {
      const { key, license } = await floatingLicense(1);
      const a = await checkout(key);
      clock.advance(LEASE_MS - 1);
      expect((await checkout(key)).json.errorCode).toBe('FloatingSeatsExhausted');
      clock.advance(1);
      expect(await activeInDb(license.id)).toBe(0); // correct before any clean-up
      const b = await checkout(key);
      expect(b.json.isValid).toBe(true);
      // The checkout swept the lapsed lease: ended at its expiry, for the charts.
      const ended = await t.prisma.floatingSession.findUniqueOrThrow({ where: { id: a.json.sessionId } });
      expect(ended).toMatchObject({ endReason: 'expired', endedAt: ended.leaseExpiresAt });
      expect((await heartbeat(a.json.sessionToken)).json).toMatchObject({ isValid: false, errorCode: 'SessionExpired' });
    }));

  it('a heartbeat extends the lease (body or Authorization: Bearer)', () =>
    withClock(async () => {
      const { key, license } = await floatingLicense(1);
      const a = await checkout(key);
      clock.advance(4 * 60_000);
      const renewed = await heartbeat(a.json.sessionToken);
      expect(renewed.json).toEqual({
        isValid: true,
        sessionId: a.json.sessionId,
        leaseExpiresAt: new Date(clock.now().getTime() + LEASE_MS).toISOString(),
        leaseSeconds: LEASE_SECONDS,
        heartbeatIntervalSeconds: HEARTBEAT_INTERVAL_SECONDS,
      });
      clock.advance(4 * 60_000); // past the first lease, within the renewed one
      expect((await checkout(key)).json.errorCode).toBe('FloatingSeatsExhausted');
      const viaHeader = await t.request('POST', '/api/v1/float/heartbeat', undefined, { authorization: `Bearer ${a.json.sessionToken}` });
      expect(viaHeader.json).toMatchObject({ isValid: true, leaseExpiresAt: new Date(clock.now().getTime() + LEASE_MS).toISOString() });
      const emptyBody = await t.post('/api/v1/float/heartbeat', {}, { authorization: `Bearer ${a.json.sessionToken}` });
      expect(emptyBody.json.isValid).toBe(true);
      const row = await t.prisma.floatingSession.findUniqueOrThrow({ where: { id: a.json.sessionId } });
      expect(row.lastHeartbeatAt).toEqual(clock.now());
      expect(await activeInDb(license.id)).toBe(1);
      // Once lapsed, a heartbeat cannot revive it.
      clock.advance(LEASE_MS);
      expect((await heartbeat(a.json.sessionToken)).json).toMatchObject({ isValid: false, errorCode: 'SessionExpired' });
      expect(await t.prisma.floatingSession.findUniqueOrThrow({ where: { id: a.json.sessionId } })).toMatchObject({ endReason: 'expired' });
    }));

  it('a wrong token is refused; a missing or contradictory one is a 400', async () => {
    const { key } = await floatingLicense(2);
    const a = await checkout(key);
    const unknown = `kfs_${'A'.repeat(43)}`;
    for (const token of [unknown, 'not-a-token', a.json.sessionToken.slice(0, -1) + (a.json.sessionToken.endsWith('A') ? 'B' : 'A')]) {
      expect((await heartbeat(token)).json).toEqual({ isValid: false, message: expect.any(String), errorCode: 'SessionInvalid' });
      expect((await checkin(token)).json).toEqual({ checkedIn: false, message: expect.any(String), errorCode: 'SessionInvalid' });
    }
    const missing = await t.post('/api/v1/float/heartbeat', {});
    expect(missing.status).toBe(400);
    expect(missing.json).toEqual({ error: { code: 'InvalidRequest', message: expect.stringContaining('session token'), requestId: expect.any(String), fields: { sessionToken: 'Required' } } });
    const twoTokens = await t.post('/api/v1/float/checkin', { sessionToken: a.json.sessionToken }, { authorization: `Bearer ${unknown}` });
    expect(twoTokens.status).toBe(400);
    const basic = await t.post('/api/v1/float/heartbeat', {}, { authorization: 'Basic dXNlcjpwYXNz' });
    expect(basic.status).toBe(400);
    expect(basic.json.error.fields).toHaveProperty('authorization');
    expect((await heartbeat(a.json.sessionToken)).json.isValid).toBe(true); // untouched by the failures
  });

  it('a revoked license ends its sessions at their next heartbeat', async () => {
    const { key, license } = await floatingLicense(3);
    const a = await checkout(key);
    const b = await checkout(key);
    await revokeLicense(ctx(license.tenantId), license.id);
    expect((await heartbeat(a.json.sessionToken)).json).toEqual({ isValid: false, message: expect.stringContaining('revoked'), errorCode: 'LicenseRevoked' });
    expect(await t.prisma.floatingSession.findUniqueOrThrow({ where: { id: a.json.sessionId } })).toMatchObject({ endedAt: clock.now(), endReason: 'revoked' });
    expect((await heartbeat(a.json.sessionToken)).json.errorCode).toBe('SessionExpired');
    expect((await heartbeat(b.json.sessionToken)).json.errorCode).toBe('LicenseRevoked');
    expect(await activeInDb(license.id)).toBe(0);
  });

  it('an expired license ends its sessions at their next heartbeat', () =>
    withClock(async () => {
      const { key } = await floatingLicense(2, { expiresAt: new Date(clock.now().getTime() + 2 * 60_000) });
      const a = await checkout(key);
      clock.advance(3 * 60_000);
      expect((await heartbeat(a.json.sessionToken)).json).toMatchObject({ isValid: false, errorCode: 'LicenseExpired' });
      expect(await t.prisma.floatingSession.findUniqueOrThrow({ where: { id: a.json.sessionId } })).toMatchObject({ endReason: 'license_expired' });
    }));

  it('a session token in the URL is refused and never logged', async () => {
    const { key } = await floatingLicense(1);
    const a = await checkout(key);
    const token = a.json.sessionToken;
    for (const url of [`/api/v1/float/heartbeat?sessionToken=${token}`, `/api/v1/float/heartbeat?t=${token}`, `/api/v1/float/heartbeat/${token}`, `/api/v1/float/checkin?session_token=x`]) {
      const response = await t.post(url, { sessionToken: token });
      expect(response.status, url).toBe(400);
      expect(response.json.error.message).toMatch(/never in the URL/);
      expect(response.text).not.toContain(token);
    }
    expect(t.logs.join('')).toContain('[redacted]');
  });
});

describe('sweepExpiredFloatingSessions', () => {
  it('records lapsed leases as ended at their expiry, once', () =>
    withClock(async () => {
      const { key } = await floatingLicense(2);
      const a = await checkout(key);
      const b = await checkout(key);
      await heartbeat(b.json.sessionToken);
      clock.advance(LEASE_MS + 1);
      await sweepExpiredFloatingSessions(ctx());
      const rows = await t.prisma.floatingSession.findMany({ where: { id: { in: [a.json.sessionId, b.json.sessionId] } } });
      for (const row of rows) expect(row).toMatchObject({ endReason: 'expired', endedAt: row.leaseExpiresAt });
      expect(await sweepExpiredFloatingSessions(ctx())).toBe(0);
    }));
});

describe('management services (tenant-scoped)', () => {
  it('lists active sessions and ends one; the next heartbeat answers SessionExpired', async () => {
    const { key, license } = await floatingLicense(2);
    const a = await checkout(key, { deviceId: 'ws-1', deviceName: 'Workstation 1' });
    const b = await checkout(key);
    const listed = await listActiveFloatingSessions(ctx(tenantId), license.id);
    expect(listed).toMatchObject({ floatingSeats: 2, inUse: 2 });
    expect(listed.sessions.map((s) => s.id).sort()).toEqual([a.json.sessionId, b.json.sessionId].sort());
    expect(listed.sessions.find((s) => s.id === a.json.sessionId)).toMatchObject({ deviceId: 'ws-1', deviceName: 'Workstation 1', endedAt: null });
    expect(JSON.stringify(listed)).not.toMatch(/tokenDigest|kfs_/);

    const ended = await endFloatingSession(ctx(tenantId), a.json.sessionId);
    expect(ended).toMatchObject({ id: a.json.sessionId, endedAt: clock.now(), endReason: 'admin' });
    expect(await endFloatingSession(ctx(tenantId), a.json.sessionId)).toEqual(ended);
    // Logged once, naming the device and the license; ending it again logs nothing.
    const logged = await t.prisma.auditLogEntry.findMany({ where: { tenantId, action: 'EndFloatingSession', entityId: a.json.sessionId }, select: { entityType: true, entity: true, details: true } });
    expect(logged).toEqual([{ entityType: 'FloatingSession', entity: `Workstation 1 on ${license.keyHint} (${productName})`, details: { licenseId: license.id, deviceId: 'ws-1' } }]);
    expect((await heartbeat(a.json.sessionToken)).json.errorCode).toBe('SessionExpired');
    expect((await listActiveFloatingSessions(ctx(tenantId), license.id)).inUse).toBe(1);
    expect((await checkout(key)).json.isValid).toBe(true);
  });

  it('a lease lapses at its end for the operator too (services/leases.ts): no longer listed, and ending it records the lapse', () =>
    withClock(async () => {
      const { key, license } = await floatingLicense(2);
      const a = await checkout(key);
      const b = await checkout(key);
      clock.advance(LEASE_MS - 1);
      expect((await listActiveFloatingSessions(ctx(tenantId), license.id)).inUse).toBe(2);
      await heartbeat(b.json.sessionToken);
      clock.advance(1); // a's lease ends now; b's was renewed
      expect((await listActiveFloatingSessions(ctx(tenantId), license.id)).sessions.map((s) => s.id)).toEqual([b.json.sessionId]);
      const lapsed = await endFloatingSession(ctx(tenantId), a.json.sessionId);
      expect(lapsed).toMatchObject({ endReason: 'expired', endedAt: clock.now() });
      expect(lapsed.endedAt).toEqual(lapsed.leaseExpiresAt);
      expect(await endFloatingSession(ctx(tenantId), b.json.sessionId)).toMatchObject({ endReason: 'admin', endedAt: clock.now() });
      // The lapse is not the admin's doing: only the session the admin ended is logged.
      const logged = await t.prisma.auditLogEntry.findMany({ where: { tenantId, action: 'EndFloatingSession', entityId: { in: [a.json.sessionId, b.json.sessionId] } }, select: { entityId: true } });
      expect(logged).toEqual([{ entityId: b.json.sessionId }]);
    }));

  it("another tenant's license or session is not found", async () => {
    const { key, license } = await floatingLicense(2);
    const a = await checkout(key);
    await expect(listActiveFloatingSessions(ctx(otherTenantId), license.id)).rejects.toMatchObject({ code: 'NotFound' });
    await expect(endFloatingSession(ctx(otherTenantId), a.json.sessionId)).rejects.toMatchObject({ code: 'NotFound' });
    await expect(floatingPoolConsumption(ctx(otherTenantId), { from: clock.now(), to: new Date(clock.now().getTime() + DAY), bucket: 'hour', licenseId: license.id })).rejects.toMatchObject({ code: 'NotFound' });
    await expect(listActiveFloatingSessions(ctx(tenantId), 'not-a-uuid')).rejects.toMatchObject({ code: 'NotFound' });
    await expect(endFloatingSession(ctx(tenantId), '00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ code: 'NotFound' });
    // Tenant B sees no consumption of tenant A's pool.
    const theirs = await floatingPoolConsumption(ctx(otherTenantId), { from: clock.now(), to: new Date(clock.now().getTime() + 3_600_000), bucket: 'hour' });
    expect(theirs).toEqual([expect.objectContaining({ peakInUse: 0, poolSize: 0 })]);
    expect((await heartbeat(a.json.sessionToken)).json.isValid).toBe(true);
  });

  it('pool consumption: peak concurrent sessions vs pool size per bucket, in SQL', async () => {
    const at = (hhmm: string) => new Date(`2026-07-01T${hhmm}:00.000Z`);
    const tenant = await t.seedTenant({ name: 'Initech', keyPrefix: 'INITECH' });
    const product = await t.seedProduct(tenant.id, 'Initech CAD');
    await withClock(async () => {
      clock.set('2026-07-01T08:00:00Z');
      const { license: big } = await t.seedLicense(tenant.id, product.id, { floatingSeats: 3 });
      const { license: small } = await t.seedLicense(tenant.id, product.id, { floatingSeats: 2 });
      await t.seedLicense(tenant.id, product.id, {}); // no pool: not counted
      await t.prisma.license.update({ where: { id: small.id }, data: { status: 'revoked', revokedAt: at('11:30') } });
      const session = (started: string, ended: string | null, lease: string) => ({
        tenantId: tenant.id, licenseId: big.id, tokenDigest: `digest-${Math.random()}`, createdAt: at(started), lastHeartbeatAt: at(started),
        leaseExpiresAt: at(lease), endedAt: ended ? at(ended) : null, endReason: ended ? 'checkin' : null,
      });
      await t.prisma.floatingSession.createMany({
        data: [
          session('09:00', '09:30', '09:35'), // before the range
          session('10:05', '10:20', '10:25'),
          session('10:05', '11:30', '11:32'),
          session('10:20', '10:50', '10:52'), // starts as the first one ends: a hand-over, not 3 at once
          session('10:40', '10:45', '10:46'),
          session('11:50', null, '12:10'), // lapsed, never swept: counts until its lease expiry
        ],
      });
      clock.set('2026-07-01T14:00:00Z');
      const hours = await floatingPoolConsumption(ctx(tenant.id), { from: at('10:30'), to: at('14:00'), bucket: 'hour' });
      expect(hours).toEqual([
        { bucketStart: at('10:00'), bucketEnd: at('11:00'), peakInUse: 3, poolSize: 5 },
        { bucketStart: at('11:00'), bucketEnd: at('12:00'), peakInUse: 1, poolSize: 5 },
        { bucketStart: at('12:00'), bucketEnd: at('13:00'), peakInUse: 1, poolSize: 3 },
        { bucketStart: at('13:00'), bucketEnd: at('14:00'), peakInUse: 0, poolSize: 3 },
      ]);
      const days = await floatingPoolConsumption(ctx(tenant.id), { from: at('00:00'), to: new Date(at('00:00').getTime() + 2 * DAY), bucket: 'day' });
      expect(days.map((d) => [d.peakInUse, d.poolSize])).toEqual([[3, 5], [0, 3]]);
      const weeks = await floatingPoolConsumption(ctx(tenant.id), { from: at('10:00'), to: at('14:00'), bucket: 'week' });
      expect(weeks).toEqual([{ bucketStart: new Date('2026-06-29T00:00:00Z'), bucketEnd: at('14:00'), peakInUse: 3, poolSize: 5 }]); // ISO weeks start on Monday
      const onlySmall = await floatingPoolConsumption(ctx(tenant.id), { from: at('10:00'), to: at('12:00'), bucket: 'hour', licenseId: small.id });
      expect(onlySmall.map((d) => [d.peakInUse, d.poolSize])).toEqual([[0, 2], [0, 2]]);
      await expect(floatingPoolConsumption(ctx(tenant.id), { from: at('10:00'), to: at('09:00'), bucket: 'hour' })).rejects.toMatchObject({ code: 'InvalidRequest' });
      await expect(floatingPoolConsumption(ctx(tenant.id), { from: at('00:00'), to: new Date(at('00:00').getTime() + 365 * DAY), bucket: 'hour' })).rejects.toMatchObject({ code: 'InvalidRequest' });
    });
  });
});

describe('GraphQL management API', () => {
  it('sessions, ending one, pool consumption, quotas and usage; scoped to the caller\'s tenant', () =>
    withClock(async () => {
      // A tenant of its own (first-run setup is taken by the shared seed).
      const gqlTenant = await t.seedTenant({ name: 'Gql Co', keyPrefix: 'GQL' });
      await t.seedUser(gqlTenant.id, { email: 'admin@gql.test' });
      const admin = { token: (await t.login('admin@gql.test')).token, user: { tenantId: gqlTenant.id } };
      const gqlProduct = await t.seedProduct(admin.user.tenantId, 'Gql App');
      const { key, license } = await t.seedLicense(admin.user.tenantId, gqlProduct.id, { floatingSeats: 2 });
      secrets.push(key);
      const gql = (query: string, variables: Record<string, unknown> = {}) => t.gql(query, variables, { token: admin.token });
      clock.set('2026-06-01T12:10:00.000Z');
      const a = await checkout(key, { deviceName: 'GQL box' });
      clock.advance(60_000);

      const listed = await gql('query($id: ID!) { floatingSessions(licenseId: $id) { floatingSeats inUse sessions { nodes { id deviceName endedAt } } } }', { id: license.id });
      expect(listed.data.floatingSessions).toEqual({ floatingSeats: 2, inUse: 1, sessions: { nodes: [{ id: a.json.sessionId, deviceName: 'GQL box', endedAt: null }] } });
      const { license: acmeLicense } = await floatingLicense(1); // tenant ACME's: not visible to GQL's admin
      const foreign = await gql('query($id: ID!) { floatingSessions(licenseId: $id) { inUse } }', { id: acmeLicense.id });
      expect(foreign).toMatchObject({ data: { floatingSessions: null }, errors: undefined });

      const ended = await gql('mutation($id: ID!) { endFloatingSession(input: { id: $id }) { floatingSession { id endedAt endReason } } }', { id: a.json.sessionId });
      expect(ended.data.endFloatingSession.floatingSession).toEqual({ id: a.json.sessionId, endedAt: clock.now().toISOString(), endReason: 'admin' });
      expect((await heartbeat(a.json.sessionToken)).json.errorCode).toBe('SessionExpired');

      const pool = await gql('query($from: DateTime!, $to: DateTime!) { floatingPoolConsumption(from: $from, to: $to, bucket: HOUR) { bucketStart peakInUse poolSize } }', {
        from: '2026-06-01T12:00:00Z',
        to: '2026-06-01T14:00:00Z',
      });
      expect(pool.data.floatingPoolConsumption).toEqual([
        { bucketStart: '2026-06-01T12:00:00.000Z', peakInUse: 1, poolSize: 2 },
        { bucketStart: '2026-06-01T13:00:00.000Z', peakInUse: 0, poolSize: 2 },
      ]);

      const quota = await gql('mutation($id: ID!) { setMeterQuota(input: { licenseId: $id, event: "api.calls", period: DAY, limit: 5 }) { quota { period limit } } }', { id: license.id });
      expect(quota.data.setMeterQuota.quota).toEqual({ period: 'DAY', limit: 5 });
      await t.post('/api/v1/meter', { licenseKey: key, event: 'api.calls', quantity: 3 });
      const usage = await gql('query($id: ID!) { usageTotals(licenseId: $id, period: DAY) { period periodStart totals { event total count remaining quota { period limit } } } }', { id: license.id });
      expect(usage.data.usageTotals).toEqual({
        period: 'DAY',
        periodStart: '2026-06-01T00:00:00.000Z',
        totals: [{ event: 'api.calls', total: 3, count: 1, remaining: 2, quota: { period: 'DAY', limit: 5 } }],
      });
      const foreignQuota = await gql('mutation($id: ID!) { setMeterQuota(input: { licenseId: $id, event: "x", period: DAY, limit: 1 }) { quota { limit } } }', { id: acmeLicense.id });
      expect(foreignQuota.errors![0].extensions!.code).toBe('NotFound');
      const removed = await gql('mutation($id: ID!) { removeMeterQuota(input: { licenseId: $id, event: "api.calls" }) { removed } }', { id: license.id });
      expect(removed.data).toEqual({ removeMeterQuota: { removed: true } });
      expect((await gql('query($id: ID!) { usageTotals(licenseId: $id, period: DAY) { period } }', { id: acmeLicense.id })).data).toEqual({ usageTotals: null });
      // Without credentials: nothing.
      expect((await t.gql('query($id: ID!) { floatingSessions(licenseId: $id) { inUse } }', { id: license.id })).errors![0].extensions!.code).toBe('Unauthorized');
    }));
});

describe('operator CLI', () => {
  it('license:create --floating-seats and license:sessions', async () => {
    const env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir };
    const created = runCli(['license:create', '--tenant', 'ACME', '--product', 'Acme Studio', '--max-activations', '1', '--floating-seats', '4', '--json'], env);
    expect(created.status, created.stderr).toBe(0);
    expect(created.json.license).toMatchObject({ floatingSeats: 4 });
    const key = created.json.key as string;
    secrets.push(key);
    // The CLI runs on the real clock; check out "now" for it.
    await withClock(async () => {
      clock.set(new Date().toISOString());
      await checkout(key, { deviceName: 'CLI box' });
    });
    const sessions = runCli(['license:sessions', '--key', key, '--json'], env);
    expect(sessions.status, sessions.stderr).toBe(0);
    expect(sessions.json).toMatchObject({ floatingSeats: 4, inUse: 1, sessions: [{ deviceName: 'CLI box', endedAt: null }] });
    expect(sessions.stdout).not.toContain('kfs_');
    expect(runCli(['license:create', '--tenant', 'ACME', '--product', 'Acme Studio', '--max-activations', '1', '--floating-seats', '0', '--json'], env).json.error.code).toBe('InvalidRequest');
  });
});
