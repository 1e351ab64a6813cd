import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../server/src/config.js';
import { NO_META, systemActor, type Actor } from '../server/src/services/auth/actor.js';
import { checkpointAllChains } from '../server/src/services/audit/verification.js';
import { loadTokenSigner } from '../server/src/services/signing/signing-keys.js';
import { installationStatus, operatorEmailsWithoutAccount } from '../server/src/services/system-status.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { runCli, startServerProcess, stopAllProcesses, type ServerProcess } from './support/processes.js';
import { scrape, valueOf } from './support/prometheus.js';
import { PASSWORD, seedTwoTenants, type SeededTenant } from './support/tenants.js';

/**
 * The System page's Installation tab (docs/operate/observability.md): installation operators only (OPERATOR_EMAILS), every
 * company together, and the same numbers a scrape of /metrics reads.
 */
const TOKEN = 'metrics-token-0123456789abcdef';
// Listed in another case and with spaces, as an operator may write it; the second address has no account.
const OPERATOR_EMAILS = ' Admin@Acme.test, ops@elsewhere.test ';
const QUERY = `{ installationStatus {
  companies emailsPending oldestPendingEmailAt webhookDeliveriesPending oldestPendingWebhookAt webhookEndpointsDisabled
  lastAuditCheckpointAt lastAuditVerificationAt auditVerificationHolds auditVerifiedCompanies auditBrokenCompanies companiesWithUnanchoredEntries
  unfinishedRuns { job companiesPending companiesFailed } jobRuns { job startedAt finishedAt failedAt outcome durationSeconds }
  signingKeyCreatedAt redis mailProvider } }`;
const clock = TestClock.startingNow();
const emailCreatedAt = new Date(clock.now().getTime() - 10 * 60_000);

let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { OPERATOR_EMAILS } });
  ({ A, B } = await seedTwoTenants(t));
  // Backlogs in both companies: the operator sees them together, each company only its own.
  for (const [tenantId, n] of [[A.tenantId, 1], [B.tenantId, 2]] as const) {
    for (let i = 0; i < n; i++) {
      await t.prisma.emailOutbox.create({ data: { tenantId, kind: 'test', idempotencyKey: `installation-${tenantId}-${i}`, toAddress: 'ops@acme.test', subject: 'Hi', html: '<p>Hi</p>', text: 'Hi', createdAt: new Date(emailCreatedAt.getTime() + i * 60_000) } });
    }
  }
  const endpoint = await t.prisma.webhookEndpoint.create({ data: { tenantId: B.tenantId, url: 'https://hooks.globex.test/in', eventTypes: [], secretEncrypted: 'not-used', enabled: false } });
  const event = await t.prisma.webhookEvent.create({ data: { id: randomUUID(), tenantId: B.tenantId, type: 'license.created', body: '{}' } });
  await t.prisma.webhookDelivery.create({ data: { tenantId: B.tenantId, eventId: event.id, endpointId: endpoint.id, createdAt: emailCreatedAt } });
}, 60_000);
afterAll(async () => {
  await stopAllProcesses();
  await t?.close();
});

describe('who operates the installation', () => {
  it('answers a signed-in CompanyAdmin whose email OPERATOR_EMAILS lists, with every company together', async () => {
    const status = await t.gql(QUERY, {}, { token: A.admin.token });
    expect(status.errors).toBeUndefined();
    expect(status.data.installationStatus).toMatchObject({ companies: 2, emailsPending: 3, oldestPendingEmailAt: emailCreatedAt.toISOString(), webhookDeliveriesPending: 1, webhookEndpointsDisabled: 1, redis: 'NOT_CONFIGURED', mailProvider: 'DEVELOPMENT' });
    // The company view stays the company's, and says who may open the installation's.
    const own = '{ systemStatus { emailsPending installationOperator } }';
    expect((await t.gql(own, {}, { token: A.admin.token })).data.systemStatus).toEqual({ emailsPending: 1, installationOperator: true });
    expect((await t.gql(own, {}, { token: B.admin.token })).data.systemStatus).toEqual({ emailsPending: 2, installationOperator: false });
  });

  it('is Forbidden to another company’s admin, a read-only member, an API key and a tenant’s system actor — in the service too', async () => {
    expect((await t.gql(QUERY, {}, { token: B.admin.token })).errors?.[0].extensions?.code).toBe('Forbidden');
    expect((await t.gql(QUERY, {}, { token: A.readOnly.token })).errors?.[0].extensions?.code).toBe('Forbidden');
    expect((await t.gql(QUERY, {}, { apiKey: A.adminKey.key })).errors?.[0].extensions?.code).toBe('Forbidden');
    expect((await t.gql(QUERY)).errors?.[0].extensions?.code).toBe('Unauthorized');

    const base = { db: t.deps.db, now: clock.now(), operatorEmails: t.config.operatorEmails };
    const user = (who: SeededTenant['admin'], tenantId: string, role: 'CompanyAdmin' | 'ReadOnly'): Actor => ({ kind: 'user', userId: who.userId, tenantId, role, email: who.email, sessionFamilyId: null });
    await expect(installationStatus({ ...base, actor: user(B.admin, B.tenantId, 'CompanyAdmin') })).rejects.toMatchObject({ code: 'Forbidden' });
    // Listed, but demoted to read-only: no longer an operator.
    await expect(installationStatus({ ...base, actor: user(A.admin, A.tenantId, 'ReadOnly') })).rejects.toMatchObject({ code: 'Forbidden' });
    await expect(installationStatus({ ...base, actor: systemActor(A.tenantId) })).rejects.toMatchObject({ code: 'Forbidden' });
    await expect(installationStatus({ ...base, actor: null })).rejects.toMatchObject({ code: 'Unauthorized' });
    // Nobody is an operator when the list is empty (the default), but the system actor (the CLI, the metrics).
    await expect(installationStatus({ ...base, operatorEmails: [], actor: user(A.admin, A.tenantId, 'CompanyAdmin') })).rejects.toMatchObject({ code: 'Forbidden' });
    expect((await installationStatus({ ...base, operatorEmails: [], actor: systemActor(null, 'operator') })).companies).toBe(2);
  });

  it('reads OPERATOR_EMAILS as a lower-cased list, refuses anything else, and names the listed addresses without an account', async () => {
    expect(t.config.operatorEmails).toEqual(['admin@acme.test', 'ops@elsewhere.test']);
    expect(loadConfig({}).operatorEmails).toEqual([]);
    expect(() => loadConfig({ OPERATOR_EMAILS: 'admin@acme.test, not-an-email' })).toThrow(ConfigError);
    expect(await operatorEmailsWithoutAccount(t.deps.db, t.config.operatorEmails)).toEqual(['ops@elsewhere.test']);
  });

  it('turns any OPERATOR_EMAILS value into lower-cased addresses, or refuses it naming the variable', () => {
    const value = fc.oneof(fc.string(), fc.array(fc.oneof(fc.emailAddress(), fc.string(), fc.constant(' Ops@Example.COM ')), { maxLength: 5 }).map((parts) => parts.join(',')));
    fc.assert(
      fc.property(value, (raw) => {
        let emails: string[];
        try {
          emails = loadConfig({ OPERATOR_EMAILS: raw }).operatorEmails;
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigError);
          expect((error as Error).message).toContain('OPERATOR_EMAILS');
          return;
        }
        for (const email of emails) {
          expect(email).toBe(email.trim().toLowerCase());
          expect(email).toMatch(/^[^,\s]+@[^,\s]+$/);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('counts companies whose log entries no checkpoint covered for over an hour, and names broken ones by key prefix only', async () => {
    const operator = { db: t.deps.db, operatorEmails: [], actor: systemActor(null, 'operator') };
    expect((await installationStatus({ ...operator, now: clock.now() })).companiesWithUnanchoredEntries).toBe(0);
    const later = new Date(clock.now().getTime() + 2 * 3_600_000);
    const stale = await installationStatus({ ...operator, now: later });
    expect(stale.companiesWithUnanchoredEntries).toBe(2);
    const signer = await loadTokenSigner({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now() }, t.config.publicUrl);
    await checkpointAllChains({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(null), meta: NO_META }, signer);
    expect((await installationStatus({ ...operator, now: later })).companiesWithUnanchoredEntries).toBe(0);

    await t.prisma.auditVerdict.create({ data: { tenantId: B.tenantId, verifiedAt: clock.now(), valid: false, headSeq: 1, headHash: 'x', brokenAtSeq: 1, problem: 'hash', mac: 'x' } });
    const broken = await installationStatus({ ...operator, now: clock.now() });
    expect(broken).toMatchObject({ auditBrokenCompanies: ['GLBX'], auditVerificationsBroken: 1, auditVerifiedCompanies: 1 });
    expect(JSON.stringify(broken)).not.toContain(B.tenantId);
    await t.prisma.auditVerdict.create({ data: { tenantId: B.tenantId, verifiedAt: new Date(clock.now().getTime() + 1000), valid: true, headSeq: 1, headHash: 'x', mac: 'x' } });
    expect((await installationStatus({ ...operator, now: clock.now() })).auditBrokenCompanies).toEqual([]);
  });
});

describe('the Installation view and /metrics of a running server', () => {
  let server: ServerProcess;
  const gql = async (query: string, token?: string) => {
    const response = await fetch(`${server.url}/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query }),
    });
    return (await response.json()) as { data?: any; errors?: { extensions?: { code?: string } }[] };
  };

  beforeAll(async () => {
    const env = { DATABASE_URL: t.databaseUrl, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, LOG_LEVEL: 'warn' };
    server = await startServerProcess({ ...env, JOBS_WORKER: 'false', METRICS_TOKEN: TOKEN, OPERATOR_EMAILS, REDIS_URL: 'redis://127.0.0.1:1' });
    // Real job runs, as the operator starts them (job_last_runs, read by both).
    for (const job of ['audit-checkpoints', 'audit-verify']) expect(runCli(['jobs:run', job, '--json'], env).status).toBe(0);
    await t.prisma.auditVerdict.create({ data: { tenantId: B.tenantId, verifiedAt: new Date(Date.now() + 60_000), valid: false, headSeq: 1, headHash: 'x', brokenAtSeq: 1, problem: 'hash', mac: 'x' } });
  }, 120_000);

  it('warns at start about a listed address without an account', () => {
    expect(server.output()).toContain('OPERATOR_EMAILS lists addresses without an account');
    expect(server.output()).toContain('ops@elsewhere.test');
  });

  it('shows the numbers /metrics exports, after traffic', async () => {
    const login = await gql(`mutation { login(input: { email: "admin@acme.test", password: "${PASSWORD}" }) { ... on LoginSuccess { accessToken } } }`);
    const token = login.data.login.accessToken as string;
    const other = await gql(`mutation { login(input: { email: "admin@globex.test", password: "${PASSWORD}" }) { ... on LoginSuccess { accessToken } } }`);
    // Traffic: licensing calls and a refused look.
    for (let i = 0; i < 3; i++) await fetch(`${server.url}/api/v1/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ licenseKey: A.licenses[0].key }) });
    expect((await gql(QUERY, other.data.login.accessToken)).errors?.[0].extensions?.code).toBe('Forbidden');

    const answer = await gql(QUERY, token);
    const scraped = await scrape(`${server.url}/metrics`, TOKEN);
    const scrapedAt = Date.now() / 1000;
    expect(answer.errors).toBeUndefined();
    const s = answer.data.installationStatus;
    const at = (iso: string | null) => (iso ? Date.parse(iso) / 1000 : 0);
    const age = (iso: string | null) => (iso ? scrapedAt - at(iso) : 0);

    expect(s.emailsPending).toBe(3);
    expect(valueOf(scraped, 'keyforge_email_outbox_pending')).toBe(s.emailsPending);
    expect(valueOf(scraped, 'keyforge_email_outbox_oldest_pending_age_seconds')).toBeCloseTo(age(s.oldestPendingEmailAt), -1);
    expect(valueOf(scraped, 'keyforge_webhook_deliveries_pending')).toBe(s.webhookDeliveriesPending);
    expect(valueOf(scraped, 'keyforge_webhook_oldest_pending_age_seconds')).toBeCloseTo(age(s.oldestPendingWebhookAt), -1);
    expect(valueOf(scraped, 'keyforge_webhook_endpoints_disabled')).toBe(s.webhookEndpointsDisabled);
    expect(s.lastAuditCheckpointAt).not.toBeNull();
    expect(valueOf(scraped, 'keyforge_audit_last_checkpoint_timestamp_seconds')).toBe(at(s.lastAuditCheckpointAt));
    expect(valueOf(scraped, 'keyforge_audit_last_verification_timestamp_seconds')).toBe(at(s.lastAuditVerificationAt));
    expect(s).toMatchObject({ auditVerificationHolds: false, auditBrokenCompanies: ['GLBX'], auditVerifiedCompanies: 2, companies: 2 });
    expect(valueOf(scraped, 'keyforge_audit_verification_ok')).toBe(0);
    expect(s.redis).toBe('DOWN');
    expect(valueOf(scraped, 'keyforge_redis_up')).toBe(0);
    expect(valueOf(scraped, 'keyforge_signing_key_age_seconds')).toBeCloseTo(age(s.signingKeyCreatedAt), -1);
    expect(s.unfinishedRuns).toEqual([]);
    expect(scraped.samples.get('keyforge_job_run_tenants')?.metrics ?? []).toEqual([]);

    const runs = s.jobRuns as { job: string; finishedAt: string | null; outcome: string; durationSeconds: number | null }[];
    expect(runs.map((run) => run.job).sort()).toEqual(['audit-checkpoints', 'audit-verify']);
    for (const run of runs) {
      expect(run).toMatchObject({ outcome: 'SUCCEEDED' });
      expect(run.durationSeconds).toBeGreaterThanOrEqual(0);
      expect(valueOf(scraped, 'keyforge_job_last_finished_timestamp_seconds', { job: run.job })).toBe(at(run.finishedAt));
    }
    expect(valueOf(scraped, 'keyforge_licensing_requests_total', { operation: 'validate', result: 'valid' })).toBe(3);
  });
});
