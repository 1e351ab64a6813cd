import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';
import { runCli } from './support/processes.js';

let t: TestApp;
let env: Record<string, string>;

beforeAll(async () => {
  t = await startTestApp();
  env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir };
});
afterAll(() => t.close());

describe('operator CLI on PostgreSQL', () => {
  let key: string;

  it('creates a tenant, products, a bundle and a license with every option; --json prints one object', async () => {
    const tenant = runCli(['tenant:create', '--name', 'Globex', '--prefix', 'globex', '--subscription-ends', '2030-01-01', '--json'], env);
    expect(tenant.status).toBe(0);
    expect(tenant.stdout.trim().split('\n')).toHaveLength(1);
    expect(tenant.json.tenant).toMatchObject({ name: 'Globex', keyPrefix: 'GLOBEX', subscriptionEndsAt: '2030-01-01T00:00:00.000Z' });

    expect(runCli(['product:create', '--tenant', 'GLOBEX', '--name', 'Editor', '--json'], env).status).toBe(0);
    expect(runCli(['product:create', '--tenant', 'GLOBEX', '--name', 'Viewer', '--json'], env).status).toBe(0);
    const bundle = runCli(['product:create', '--tenant', 'GLOBEX', '--name', 'Suite', '--bundle-of', 'Editor,Viewer', '--json'], env);
    expect(bundle.json.product).toMatchObject({ name: 'Suite', isBundle: true, bundleOf: expect.arrayContaining(['Editor', 'Viewer']) });

    const created = runCli(
      ['license:create', '--tenant', 'GLOBEX', '--product', 'Suite', '--max-activations', '3', '--expires-at', '2031-01-01T00:00:00Z', '--trial', '--node-locked',
        '--features', 'export,sync', '--custom', 'plan=pro,region=eu', '--min-version', '1.0.0', '--max-version', '2.0.0', '--offline-grace-days', '7',
        '--grace-days', '3', '--maintenance-expires-at', '2030-06-01', '--customer-email', 'buyer@example.com', '--json'],
      env,
    );
    expect(created.status, created.stderr).toBe(0);
    key = created.json.key;
    expect(key).toMatch(/^GLOBEX(-[A-Z2-9]{4}){4}$/);
    expect(created.json.license).toMatchObject({
      productName: 'Suite', maxActivations: 3, isTrial: true, nodeLocked: true, features: ['export', 'sync'], customFields: { plan: 'pro', region: 'eu' },
      minVersion: '1.0.0', maxVersion: '2.0.0', offlineGraceDays: 7, gracePeriodDays: 3, customerEmail: 'buyer@example.com', keyHint: `GLOBEX-…-${key.slice(-4)}`,
    });
    expect(created.json.license).not.toHaveProperty('keyDigest');

    // Only a digest is stored: no column of the row holds the plaintext key.
    const row = await t.prisma.license.findUniqueOrThrow({ where: { id: created.json.license.id } });
    expect(JSON.stringify(row)).not.toContain(key);
    expect(JSON.stringify(row)).not.toContain(key.split('-')[2]);

    const validated = await t.post('/api/v1/validate', { licenseKey: key, version: '1.5.0' });
    expect(validated.json).toMatchObject({ isValid: true, productName: 'Suite', bundleProducts: ['Editor', 'Viewer'], trialDaysRemaining: expect.any(Number) });
  });

  it('shows and revokes a license by key', async () => {
    const shown = runCli(['license:show', '--key', key.toLowerCase(), '--json'], env);
    expect(shown.json.license).toMatchObject({ status: 'active', product: { name: 'Suite' }, tenant: { keyPrefix: 'GLOBEX' }, activations: [] });
    expect(shown.stdout).not.toContain(key);
    const revoked = runCli(['license:revoke', '--key', key, '--json'], env);
    expect(revoked.json.license).toMatchObject({ status: 'revoked', revokedAt: expect.any(String) });
    expect((await t.post('/api/v1/validate', { licenseKey: key })).json.errorCode).toBe('LicenseRevoked');
  });

  it('creates users who can then sign in', async () => {
    const created = runCli(['user:create', '--tenant', 'GLOBEX', '--email', 'Ops@Globex.test', '--password', 'a long enough password', '--role', 'ReadOnly', '--name', 'Ops', '--json'], env);
    expect(created.status, created.stderr).toBe(0);
    expect(created.json.user).toMatchObject({ email: 'ops@globex.test', role: 'ReadOnly', name: 'Ops' });
    expect(created.stdout).not.toMatch(/password|mfaSecret/i);
    expect((await t.login('ops@globex.test', 'a long enough password')).status).toBe('SUCCESS');
    expect(runCli(['user:create', '--tenant', 'GLOBEX', '--email', 'x@globex.test', '--password', 'short', '--role', 'ReadOnly', '--json'], env).json.error.code).toBe('InvalidRequest');
    expect(runCli(['user:create', '--tenant', 'GLOBEX', '--email', 'y@globex.test', '--password', 'a long enough password', '--role', 'Owner', '--json'], env).json.error.code).toBe('InvalidRequest');
  });

  it('reports mistakes clearly with a non-zero exit', () => {
    const duplicate = runCli(['tenant:create', '--name', 'Again', '--prefix', 'GLOBEX', '--json'], env);
    expect(duplicate.status).toBe(1);
    expect(duplicate.json.error).toMatchObject({ code: 'Conflict', message: expect.stringContaining('GLOBEX') });
    expect(runCli(['license:create', '--tenant', 'GLOBEX', '--product', 'Nope', '--max-activations', '1', '--json'], env).json.error.code).toBe('NotFound');
    expect(runCli(['license:create', '--tenant', 'GLOBEX', '--product', 'Editor', '--max-activations', 'lots', '--json'], env).json.error.code).toBe('InvalidRequest');
    expect(runCli(['license:create', '--tenant', 'GLOBEX', '--product', 'Editor', '--max-activations', '1', '--min-version', '3.0.0', '--max-version', '2.0.0', '--json'], env).json.error.message).toMatch(/minVersion/);
    expect(runCli(['tenant:create', '--name', 'Bad', '--prefix', 'no spaces!', '--json'], env).json.error.code).toBe('InvalidRequest');
    expect(runCli(['license:show', '--key', 'GLOBEX-AAAA-AAAA-AAAA-AAAA', '--json'], env).json.error.code).toBe('NotFound');
    const unknown = runCli(['frobnicate'], env);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('license:create');
    const badFlag = runCli(['tenant:create', '--nme', 'x', '--json'], env);
    expect(badFlag.json.error.code).toBe('InvalidRequest');
  });
});
