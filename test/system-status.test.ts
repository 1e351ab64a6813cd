import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../server/src/metrics/index.js';
import { systemActor } from '../server/src/services/auth/actor.js';
import { systemStatus } from '../server/src/services/system-status.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { seedTwoTenants, type SeededTenant } from './support/tenants.js';

/** The System page's query (docs/operate/observability.md): a company's admins see their company's numbers, the same the metrics count. */
const QUERY = `{ systemStatus { emailsPending oldestPendingEmailAt webhookDeliveriesPending webhookEndpointsDisabled lastAuditCheckpointAt auditVerificationHolds unfinishedRuns { job } redis mailProvider } }`;

let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;
const createdAt = new Date('2026-06-01T11:00:00.000Z');

beforeAll(async () => {
  t = await startTestApp();
  ({ A, B } = await seedTwoTenants(t));
  for (const [tenantId, n] of [[A.tenantId, 2], [B.tenantId, 1]] as const) {
    for (let i = 0; i < n; i++) {
      await t.prisma.emailOutbox.create({ data: { tenantId, kind: 'test', idempotencyKey: `system-${tenantId}-${i}`, toAddress: 'ops@acme.test', subject: 'Hi', html: '<p>Hi</p>', text: 'Hi', createdAt: new Date(createdAt.getTime() + i * 60_000) } });
    }
  }
});
afterAll(() => t.close());

describe('systemStatus', () => {
  it("shows a company admin their company's backlog only, and the service's dependencies", async () => {
    const a = await t.gql(QUERY, {}, { token: A.admin.token });
    expect(a.errors).toBeUndefined();
    expect(a.data.systemStatus).toEqual({
      emailsPending: 2,
      oldestPendingEmailAt: createdAt.toISOString(),
      webhookDeliveriesPending: 0,
      webhookEndpointsDisabled: 0,
      lastAuditCheckpointAt: null,
      auditVerificationHolds: null,
      unfinishedRuns: [],
      redis: 'NOT_CONFIGURED',
      mailProvider: 'DEVELOPMENT',
    });
    expect((await t.gql(QUERY, {}, { apiKey: B.adminKey.key })).data.systemStatus.emailsPending).toBe(1);
  });

  it('is refused to read-only members and anonymous callers, in the service too', async () => {
    expect((await t.gql(QUERY, {}, { token: A.readOnly.token })).errors?.[0].extensions?.code).toBe('Forbidden');
    expect((await t.gql(QUERY)).errors?.[0].extensions?.code).toBe('Unauthorized');
    const ctx = { db: t.deps.db, actor: { kind: 'user' as const, userId: A.readOnly.userId, tenantId: A.tenantId, role: 'ReadOnly' as const, email: A.readOnly.email, sessionFamilyId: null } };
    await expect(systemStatus(ctx)).rejects.toMatchObject({ code: 'Forbidden' });
    await expect(systemStatus({ db: t.deps.db, actor: null })).rejects.toMatchObject({ code: 'Unauthorized' });
  });

  it('gives the operator the installation, the numbers the metrics export', async () => {
    const installation = await systemStatus({ db: t.deps.db, actor: systemActor(null, 'operator') });
    expect(installation.tenantId).toBeNull();
    expect(installation.emailsPending).toBe(3);
    const metrics = createMetrics({ db: t.deps.db, role: 'server', clock: t.clock.now });
    const gauge = async (name: string) => (await metrics.registry.getSingleMetric(name)!.get()).values[0]?.value;
    expect(await gauge('keyforge_email_outbox_pending')).toBe(3);
    expect(await gauge('keyforge_email_outbox_oldest_pending_age_seconds')).toBe((t.clock.now().getTime() - createdAt.getTime()) / 1000);
  });
});
