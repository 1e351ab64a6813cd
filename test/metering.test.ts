import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { removeMeterQuota, setMeterQuota, usageTotals } from '../server/src/services/metering/management.js';
import { DAY, TestClock, startTestApp, type TestApp } from './support/harness.js';
import { runCli } from './support/processes.js';
import { seedTwoTenants } from './support/tenants.js';

let t: TestApp;
const clock = new TestClock(); // 2026-06-01T12:00:00Z
let tenantId: string;
let productId: string;
let productName: string;
let otherTenantId: string;
let adminToken: string;
const keys: string[] = [];

beforeAll(async () => {
  t = await startTestApp({ clock });
  const { A, B } = await seedTwoTenants(t);
  tenantId = A.tenantId;
  productId = A.product!.id;
  productName = A.product!.name;
  otherTenantId = B.tenantId;
  adminToken = A.admin.token;
});
afterAll(async () => {
  const logs = t.logs.join('');
  expect(logs).toContain('/api/v1/meter');
  for (const key of keys) {
    expect(logs).not.toContain(key);
    expect(logs).not.toContain(key.split('-').slice(1).join('-'));
  }
  await t.close();
});

/** Acting as the system (as the operator CLI does), in `tenantId` when given. */
const ctx = (tenantId: string | null = null) => ({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(tenantId), meta: NO_META });

async function license(attributes: Record<string, unknown> = {}) {
  const seeded = await t.seedLicense(tenantId, productId, attributes);
  keys.push(seeded.key);
  return seeded;
}
const meter = (licenseKey: string, body: Record<string, unknown>) => t.post('/api/v1/meter', { licenseKey, ...body });
const recorded = (licenseId: string, event?: string) => t.prisma.usageEvent.count({ where: { licenseId, ...(event ? { event } : {}) } });

async function withClock(run: () => Promise<void>) {
  const start = clock.now().toISOString();
  try {
    await run();
  } finally {
    clock.set(start);
  }
}

describe('POST /api/v1/meter', () => {
  it('records usage and returns the running total of the period (the month without a quota)', async () => {
    const { key, license: l } = await license();
    expect((await meter(key, { event: 'api.calls', quantity: 3 })).json).toEqual({
      isValid: true,
      event: 'api.calls',
      quantity: 3,
      occurredAt: clock.now().toISOString(),
      period: 'month',
      periodStart: '2026-06-01T00:00:00.000Z',
      periodEnd: '2026-07-01T00:00:00.000Z',
      total: 3,
      limit: null,
      remaining: null,
    });
    const second = await meter(key, { event: 'api.calls', quantity: 4, timestamp: '2026-06-01T11:00:00+01:00' });
    expect(second.json).toMatchObject({ total: 7, occurredAt: '2026-06-01T10:00:00.000Z' });
    expect((await meter(key, { event: 'export', quantity: 1 })).json).toMatchObject({ event: 'export', total: 1 });
    expect(await recorded(l.id)).toBe(3);
  });

  it('an idempotencyKey repeat returns exactly the first answer and records nothing', async () => {
    const { key, license: l } = await license();
    const first = await meter(key, { event: 'render.frames', quantity: 10, idempotencyKey: 'job-42' });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    await meter(key, { event: 'render.frames', quantity: 5 });
    const repeat = await meter(key, { event: 'render.frames', quantity: 10, idempotencyKey: 'job-42' });
    expect(repeat.text).toBe(first.text); // byte for byte, although the total has moved on since
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    // Whatever the repeat carries, the first answer stands.
    expect((await meter(key, { event: 'render.frames', quantity: 99, idempotencyKey: 'job-42' })).text).toBe(first.text);
    expect(await recorded(l.id)).toBe(2);
    // Keys are per license: another license may use the same one.
    const { key: other } = await license();
    expect((await meter(other, { event: 'render.frames', quantity: 1, idempotencyKey: 'job-42' })).json.total).toBe(1);
  });

  it('concurrent repeats of one idempotencyKey record once and all get the same answer', async () => {
    const { key, license: l } = await license();
    const results = await Promise.all(Array.from({ length: 20 }, () => meter(key, { event: 'api.calls', quantity: 2, idempotencyKey: 'batch-7' })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.text)).size).toBe(1);
    expect(results[0]!.json).toMatchObject({ isValid: true, total: 2 });
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
    expect(await recorded(l.id)).toBe(1);
    // Even when the repeats name different events (a client bug), one record.
    const mixed = await Promise.all(['a.one', 'a.two', 'a.three', 'a.one'].map((event) => meter(key, { event, quantity: 1, idempotencyKey: 'mixed' })));
    expect(new Set(mixed.map((r) => r.text)).size).toBe(1);
    expect(await t.prisma.usageEvent.count({ where: { licenseId: l.id, idempotencyKey: 'mixed' } })).toBe(1);
  });

  it('quota boundary: exactly at the limit is fine, one over is refused and records nothing', async () => {
    const { key, license: l } = await license();
    await setMeterQuota(ctx(tenantId), l.id, { event: 'ai.tokens', period: 'day', limit: 10 });
    expect((await meter(key, { event: 'ai.tokens', quantity: 4 })).json).toMatchObject({ isValid: true, total: 4, limit: 10, remaining: 6, period: 'day', periodStart: '2026-06-01T00:00:00.000Z', periodEnd: '2026-06-02T00:00:00.000Z' });
    expect((await meter(key, { event: 'ai.tokens', quantity: 6 })).json).toMatchObject({ isValid: true, total: 10, remaining: 0 });
    const over = await meter(key, { event: 'ai.tokens', quantity: 1, idempotencyKey: 'over-1' });
    expect(over.status).toBe(200);
    expect(over.json).toEqual({
      isValid: false,
      message: expect.stringContaining('quota'),
      errorCode: 'QuotaExceeded',
      event: 'ai.tokens',
      period: 'day',
      periodStart: '2026-06-01T00:00:00.000Z',
      periodEnd: '2026-06-02T00:00:00.000Z',
      total: 10,
      limit: 10,
      remaining: 0,
    });
    expect(await recorded(l.id)).toBe(2);
    // A rejection is not stored under its idempotencyKey: once the quota allows it, the repeat records.
    await setMeterQuota(ctx(tenantId), l.id, { event: 'ai.tokens', period: 'day', limit: 11 });
    expect((await meter(key, { event: 'ai.tokens', quantity: 1, idempotencyKey: 'over-1' })).json).toMatchObject({ isValid: true, total: 11, remaining: 0 });
    // Other events of the license are not limited.
    expect((await meter(key, { event: 'ai.images', quantity: 500 })).json).toMatchObject({ isValid: true, limit: null });
  });

  it('concurrent calls cannot overshoot a quota', async () => {
    const { key, license: l } = await license();
    await setMeterQuota(ctx(tenantId), l.id, { event: 'exports', period: 'month', limit: 10 });
    const results = await Promise.all(Array.from({ length: 30 }, () => meter(key, { event: 'exports', quantity: 1 })));
    expect(results.filter((r) => r.json.isValid)).toHaveLength(10);
    expect(results.filter((r) => r.json.errorCode === 'QuotaExceeded')).toHaveLength(20);
    expect(results.map((r) => r.json.total).filter((_, i) => results[i]!.json.isValid).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await recorded(l.id)).toBe(10);
  });

  it('periods roll over with the clock; a backdated event counts in its own period', () =>
    withClock(async () => {
      const { key, license: l } = await license();
      await setMeterQuota(ctx(tenantId), l.id, { event: 'builds', period: 'day', limit: 5 });
      clock.set('2026-06-01T23:59:59.000Z');
      expect((await meter(key, { event: 'builds', quantity: 5 })).json.remaining).toBe(0);
      expect((await meter(key, { event: 'builds', quantity: 1 })).json.errorCode).toBe('QuotaExceeded');
      clock.set('2026-06-02T00:00:00.000Z');
      expect((await meter(key, { event: 'builds', quantity: 1 })).json).toMatchObject({ isValid: true, total: 1, remaining: 4, periodStart: '2026-06-02T00:00:00.000Z' });
      // Reported late, yesterday's usage is checked against yesterday's (full) quota.
      expect((await meter(key, { event: 'builds', quantity: 1, timestamp: '2026-06-01T22:00:00Z' })).json.errorCode).toBe('QuotaExceeded');

      // Without a quota the month is reported; lifetime and year quotas roll over accordingly.
      clock.set('2026-06-30T23:00:00.000Z');
      expect((await meter(key, { event: 'sync', quantity: 2 })).json).toMatchObject({ total: 2, period: 'month' });
      clock.set('2026-07-01T00:30:00.000Z');
      expect((await meter(key, { event: 'sync', quantity: 2 })).json).toMatchObject({ total: 2, periodStart: '2026-07-01T00:00:00.000Z', periodEnd: '2026-08-01T00:00:00.000Z' });
      await setMeterQuota(ctx(tenantId), l.id, { event: 'sync', period: 'lifetime', limit: 5 });
      expect((await meter(key, { event: 'sync', quantity: 1 })).json).toMatchObject({ total: 5, remaining: 0, period: 'lifetime', periodStart: null, periodEnd: null });
      await setMeterQuota(ctx(tenantId), l.id, { event: 'sync', period: 'year', limit: 100 });
      clock.set('2027-01-01T00:00:00.000Z');
      expect((await meter(key, { event: 'sync', quantity: 1 })).json).toMatchObject({ total: 1, remaining: 99, periodStart: '2027-01-01T00:00:00.000Z' });
    }));

  it('unknown, revoked and expired licenses are refused without recording', async () => {
    const { key: revoked, license: l } = await license();
    await t.prisma.license.update({ where: { id: l.id }, data: { status: 'revoked' } });
    const { key: expired } = await license({ expiresAt: new Date(clock.now().getTime() - DAY) });
    const rejection = (errorCode: string) => ({ isValid: false, message: expect.any(String), errorCode });
    expect((await meter('ACME-ZZZZ-ZZZZ-ZZZZ-ZZZZ', { event: 'x', quantity: 1 })).json).toEqual(rejection('LicenseNotFound'));
    expect((await meter(revoked, { event: 'x', quantity: 1 })).json).toEqual(rejection('LicenseRevoked'));
    expect((await meter(expired, { event: 'x', quantity: 1 })).json).toEqual(rejection('LicenseExpired'));
    expect(await t.prisma.usageEvent.count({ where: { event: 'x' } })).toBe(0);
  });

  it('invalid event names, quantities and timestamps → 400 with the error body', async () => {
    const { key, license: l } = await license();
    const bad: [string, Record<string, unknown>][] = [
      ['event', { event: 'Api.Calls', quantity: 1 }],
      ['event', { event: 'api calls', quantity: 1 }],
      ['event', { event: 'api..calls', quantity: 1 }],
      ['event', { event: '1st.call', quantity: 1 }],
      ['event', { event: 'api.calls.', quantity: 1 }],
      ['event', { event: '', quantity: 1 }],
      ['event', { event: `a${'b'.repeat(64)}`, quantity: 1 }],
      ['event', { quantity: 1 }],
      ['quantity', { event: 'ok', quantity: 0 }],
      ['quantity', { event: 'ok', quantity: -3 }],
      ['quantity', { event: 'ok', quantity: 1.5 }],
      ['quantity', { event: 'ok', quantity: '5' }],
      ['quantity', { event: 'ok', quantity: 1_000_001 }],
      ['quantity', { event: 'ok' }],
      ['timestamp', { event: 'ok', quantity: 1, timestamp: 'yesterday' }],
      ['timestamp', { event: 'ok', quantity: 1, timestamp: new Date(clock.now().getTime() + 6 * 60_000).toISOString() }],
      ['timestamp', { event: 'ok', quantity: 1, timestamp: new Date(clock.now().getTime() - 31 * DAY).toISOString() }],
      ['idempotencyKey', { event: 'ok', quantity: 1, idempotencyKey: 'k'.repeat(256) }],
    ];
    for (const [field, body] of bad) {
      const response = await meter(key, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.json).toEqual({ error: { code: 'InvalidRequest', message: expect.any(String), requestId: response.headers.get('x-request-id'), fields: expect.objectContaining({ [field]: expect.any(String) }) } });
    }
    // Boundaries that are fine.
    for (const body of [
      { event: `a${'b'.repeat(63)}`, quantity: 1_000_000 },
      { event: 'a_b.c1.2d', quantity: 1, timestamp: new Date(clock.now().getTime() + 5 * 60_000).toISOString() },
      { event: 'ok', quantity: 1, timestamp: new Date(clock.now().getTime() - 30 * DAY).toISOString() },
    ]) {
      expect((await meter(key, body)).json.isValid, JSON.stringify(body)).toBe(true);
    }
    expect(await recorded(l.id)).toBe(3);
  });
});

describe('management services (tenant-scoped)', () => {
  it('usage totals per event and period, with quotas', async () => {
    const { key, license: l } = await license();
    await setMeterQuota(ctx(tenantId), l.id, { event: 'api.calls', period: 'month', limit: 100 });
    await setMeterQuota(ctx(tenantId), l.id, { event: 'unused', period: 'day', limit: 1 });
    await meter(key, { event: 'api.calls', quantity: 30 });
    await meter(key, { event: 'api.calls', quantity: 12, timestamp: new Date(clock.now().getTime() - 2 * DAY).toISOString() }); // May 30th
    await meter(key, { event: 'export', quantity: 2 });

    // Each quota is its row, key included (the GraphQL MeterQuota type resolves from it).
    const month = await usageTotals(ctx(tenantId), l.id, { period: 'month' });
    expect(month).toEqual({
      period: 'month',
      periodStart: new Date('2026-06-01T00:00:00Z'),
      periodEnd: new Date('2026-07-01T00:00:00Z'),
      totals: [
        { event: 'api.calls', total: 30, count: 1, quota: { licenseId: l.id, event: 'api.calls', period: 'month', limit: 100 }, remaining: 70 },
        { event: 'export', total: 2, count: 1, quota: null, remaining: null },
        { event: 'unused', total: 0, count: 0, quota: { licenseId: l.id, event: 'unused', period: 'day', limit: 1 }, remaining: null },
      ],
    });
    const lifetime = await usageTotals(ctx(tenantId), l.id, { period: 'lifetime', event: 'api.calls' });
    expect(lifetime).toMatchObject({ periodStart: null, periodEnd: null, totals: [{ event: 'api.calls', total: 42, count: 2, remaining: null }] });

    await expect(removeMeterQuota(ctx(tenantId), l.id, 'unused')).resolves.toEqual({ removed: true, event: 'unused' });
    await expect(removeMeterQuota(ctx(tenantId), l.id, 'unused')).rejects.toMatchObject({ code: 'NotFound' });
    await expect(setMeterQuota(ctx(tenantId), l.id, { event: 'Bad Name', period: 'day', limit: 1 })).rejects.toMatchObject({ code: 'InvalidRequest' });
    await expect(setMeterQuota(ctx(tenantId), l.id, { event: 'ok', period: 'week' as 'day', limit: 1 })).rejects.toMatchObject({ code: 'InvalidRequest' });
    await expect(usageTotals(ctx(tenantId), l.id, { period: 'fortnight' as 'day' })).rejects.toMatchObject({ code: 'InvalidRequest' });
  });

  it('one rule for changing quotas: any license but a revoked one; the API exposes the same rule', async () => {
    const reasonOf = async (id: string) => {
      const response = await t.gql('query($id: ID!) { license(id: $id) { status quotaChangeBlockedReason } }', { id }, { token: adminToken });
      expect(response.errors).toBeUndefined();
      return response.data.license as { status: string; quotaChangeBlockedReason: string | null };
    };
    const cases = [
      { attributes: {}, status: 'ACTIVE' },
      { attributes: { status: 'suspended' as const, suspendedAt: clock.now() }, status: 'SUSPENDED' },
      { attributes: { expiresAt: new Date(clock.now().getTime() - DAY) }, status: 'EXPIRED' },
    ];
    for (const { attributes, status } of cases) {
      const { license: l } = await license();
      await t.prisma.license.update({ where: { id: l.id }, data: attributes });
      expect(await reasonOf(l.id), status).toEqual({ status, quotaChangeBlockedReason: null });
      await setMeterQuota(ctx(tenantId), l.id, { event: 'api.calls', period: 'day', limit: 5 });
      await expect(removeMeterQuota(ctx(tenantId), l.id, 'api.calls'), status).resolves.toEqual({ removed: true, event: 'api.calls' });
    }
    const { license: revoked } = await license();
    await setMeterQuota(ctx(tenantId), revoked.id, { event: 'api.calls', period: 'day', limit: 5 });
    await t.prisma.license.update({ where: { id: revoked.id }, data: { status: 'revoked', revokedAt: clock.now() } });
    const { quotaChangeBlockedReason: reason } = await reasonOf(revoked.id);
    expect(reason).toMatch(/revoked/);
    await expect(setMeterQuota(ctx(tenantId), revoked.id, { event: 'api.calls', period: 'day', limit: 9 })).rejects.toMatchObject({ code: 'Conflict', message: reason });
    await expect(removeMeterQuota(ctx(tenantId), revoked.id, 'api.calls')).rejects.toMatchObject({ code: 'Conflict', message: reason });
    expect(await t.prisma.meterQuota.findMany({ where: { licenseId: revoked.id }, select: { limit: true } })).toEqual([{ limit: 5 }]);
  });

  it('setting and removing a quota are in the activity log, with what it was before; a change to nothing is not', async () => {
    const { license: l } = await license();
    const entries = () =>
      t.prisma.auditLogEntry.findMany({ where: { tenantId, entityId: l.id, action: { in: ['SetMeterQuota', 'RemoveMeterQuota'] } }, orderBy: { seq: 'asc' }, select: { action: true, entity: true, entityType: true, details: true } });
    await setMeterQuota(ctx(tenantId), l.id, { event: 'api.calls', period: 'day', limit: 5 });
    await setMeterQuota(ctx(tenantId), l.id, { event: 'api.calls', period: 'day', limit: 5 }); // the same again: nothing to log
    await setMeterQuota(ctx(tenantId), l.id, { event: 'api.calls', period: 'month', limit: 100 });
    await removeMeterQuota(ctx(tenantId), l.id, 'api.calls');
    await expect(removeMeterQuota(ctx(tenantId), l.id, 'api.calls')).rejects.toMatchObject({ code: 'NotFound' });
    const entity = `api.calls on ${l.keyHint} (${productName})`;
    expect(await entries()).toEqual([
      { action: 'SetMeterQuota', entity, entityType: 'License', details: { event: 'api.calls', before: null, after: { period: 'day', limit: 5 } } },
      { action: 'SetMeterQuota', entity, entityType: 'License', details: { event: 'api.calls', before: { period: 'day', limit: 5 }, after: { period: 'month', limit: 100 } } },
      { action: 'RemoveMeterQuota', entity, entityType: 'License', details: { event: 'api.calls', before: { period: 'month', limit: 100 } } },
    ]);
    // Refused changes log nothing: another company's, a revoked license's.
    await expect(setMeterQuota(ctx(otherTenantId), l.id, { event: 'api.calls', period: 'day', limit: 1 })).rejects.toMatchObject({ code: 'NotFound' });
    expect(await entries()).toHaveLength(3);
  });

  it("another tenant's license is not found", async () => {
    const { license: l } = await license();
    await expect(usageTotals(ctx(otherTenantId), l.id, { period: 'month' })).rejects.toMatchObject({ code: 'NotFound' });
    await expect(setMeterQuota(ctx(otherTenantId), l.id, { event: 'api.calls', period: 'day', limit: 1 })).rejects.toMatchObject({ code: 'NotFound' });
    await expect(removeMeterQuota(ctx(otherTenantId), l.id, 'api.calls')).rejects.toMatchObject({ code: 'NotFound' });
    await expect(usageTotals(ctx(tenantId), 'nope', { period: 'month' })).rejects.toMatchObject({ code: 'NotFound' });
    expect(await t.prisma.meterQuota.count({ where: { licenseId: l.id } })).toBe(0);
  });
});

describe('operator CLI', () => {
  it('license:quota and license:usage', async () => {
    const env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir };
    const { key } = await license();
    const set = runCli(['license:quota', '--key', key, '--event', 'api.calls', '--period', 'month', '--limit', '50', '--json'], env);
    expect(set.status, set.stderr).toBe(0);
    expect(set.json.quota).toMatchObject({ event: 'api.calls', period: 'month', limit: 50 });
    expect((await meter(key, { event: 'api.calls', quantity: 7 })).json).toMatchObject({ limit: 50, remaining: 43 });
    await meter(key, { event: 'export', quantity: 2 });

    const usage = runCli(['license:usage', '--key', key, '--json'], env);
    expect(usage.status, usage.stderr).toBe(0);
    // The CLI runs on the real clock: the lifetime column does not depend on it.
    expect(usage.json.usage).toEqual([
      expect.objectContaining({ event: 'api.calls', lifetime: 7, quota: { period: 'month', limit: 50 } }),
      expect.objectContaining({ event: 'export', lifetime: 2, quota: null }),
    ]);
    expect(usage.json.periods.lifetime).toEqual({ start: null, end: null });
    expect(runCli(['license:usage', '--key', key, '--event', 'export', '--json'], env).json.usage).toHaveLength(1);

    expect(runCli(['license:quota', '--key', key, '--event', 'api.calls', '--remove', '--json'], env).json).toEqual({ removed: true, event: 'api.calls' });
    expect(runCli(['license:quota', '--key', key, '--event', 'api.calls', '--period', 'weekly', '--limit', '5', '--json'], env).json.error.code).toBe('InvalidRequest');
    expect(runCli(['license:quota', '--key', 'ACME-AAAA-AAAA-AAAA-AAAA', '--event', 'x', '--period', 'day', '--limit', '5', '--json'], env).json.error.code).toBe('NotFound');
  });
});
