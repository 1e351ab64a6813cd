import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentTotp } from '../server/src/services/auth/mfa.js';
import { EMAIL_KINDS, enqueueEmails } from '../server/src/services/notifications/outbox.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { runCli } from './support/processes.js';

let t: TestApp;
let env: Record<string, string>;

beforeAll(async () => {
  // The CLI runs on the real clock: so does the app here (lockouts are compared across both).
  t = await startTestApp({ clock: TestClock.startingNow() });
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
    expect(shown.json.license).toMatchObject({ status: 'active', product: { name: 'Suite' }, tenant: { keyPrefix: 'GLOBEX' }, activations: [], activationCount: 0 });
    expect(shown.stdout).not.toContain(key);
    // A license with many activations: the newest 100 are listed, and how many there are in all.
    const license = await t.prisma.license.findFirstOrThrow({ where: { keyHint: shown.json.license.keyHint } });
    await t.prisma.activation.createMany({
      data: Array.from({ length: 105 }, (_, i) => ({ tenantId: license.tenantId, licenseId: license.id, deviceId: `bulk-${i}`, createdAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000), deactivatedAt: new Date() })),
    });
    const many = runCli(['license:show', '--key', key, '--json'], env).json.license;
    expect(many.activationCount).toBe(105);
    expect(many.activations).toHaveLength(100);
    expect(many.activations[0].deviceId).toBe('bulk-104');
    // A new key for the same license: the old one keeps working for the overlap, the new one is shown once.
    const reissued = runCli(['license:reissue', '--key', key, '--overlap-hours', '2', '--json'], env);
    expect(reissued.status, reissued.stderr).toBe(0);
    expect(reissued.json).toMatchObject({ key: expect.stringMatching(/^GLOBEX-/), previousKeyValidUntil: expect.any(String), license: { id: license.id, keyHint: expect.stringMatching(/^GLOBEX-…-/) } });
    expect(reissued.json.license).not.toHaveProperty('keyDigest');
    expect((await t.post('/api/v1/validate', { licenseKey: reissued.json.key })).json.isValid).toBe(true);
    expect(runCli(['license:reissue', '--key', reissued.json.key, '--overlap-hours', '500', '--json'], env).json.error.code).toBe('InvalidRequest');
    const revoked = runCli(['license:revoke', '--key', reissued.json.key, '--json'], env);
    expect(revoked.json.license).toMatchObject({ status: 'revoked', revokedAt: expect.any(String) });
    expect((await t.post('/api/v1/validate', { licenseKey: reissued.json.key })).json.errorCode).toBe('LicenseRevoked');
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
    expect(badFlag.json.error).toMatchObject({ code: 'InvalidRequest', message: expect.stringContaining("unknown option '--nme'") });
    // A stray argument and a flag without its value are refused before any database is opened.
    const stray = runCli(['license:show', 'GLOBEX-AAAA-AAAA-AAAA-AAAA', '--json'], env);
    expect(stray.json.error).toMatchObject({ code: 'InvalidRequest', message: expect.stringContaining('too many arguments') });
    expect(stray.stderr).not.toContain('database:');
    expect(runCli(['license:show', '--key'], env).stderr).toMatch(/^error: option '--key <key>' argument missing\nusage: pnpm cli license:show/);
  });

  it('outbox:list: every email kind (license-key too), each email addressed `to` as in GraphQL, --limit refused above 100', async () => {
    const tenant = await t.prisma.tenant.findUniqueOrThrow({ where: { keyPrefix: 'GLOBEX' } });
    // A key email as a payment provider's purchase writes it.
    await enqueueEmails(t.prisma, [{ tenantId: tenant.id, kind: 'license-key', idempotencyKey: 'license-key:cli-outbox', to: 'buyer@globex.test', subject: 'Your Editor license key', html: '<p>key</p>', text: 'key' }], t.clock.now());
    const listed = runCli(['outbox:list', '--kind', 'license-key', '--tenant', 'GLOBEX', '--json'], env);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.json).toMatchObject({ totalCount: 1, emails: [{ kind: 'license-key', to: 'buyer@globex.test', subject: 'Your Editor license key', status: 'pending', tenantId: tenant.id }] });
    expect(listed.json.emails[0]).not.toHaveProperty('toAddress');
    // The same email over GraphQL: the same names.
    const admin = await t.seedUser(tenant.id, { email: 'outbox-admin@globex.test' });
    const { token } = await t.login(admin.email);
    const graphql = await t.gqlData('{ emails(kind: LICENSE_KEY) { nodes { id to subject } } }', {}, { token });
    expect(graphql.emails.nodes).toEqual([{ id: listed.json.emails[0].id, to: 'buyer@globex.test', subject: 'Your Editor license key' }]);

    for (const limit of ['101', '0', '2.5']) {
      const refused = runCli(['outbox:list', '--limit', limit, '--json'], env);
      expect(refused.status, limit).toBe(1);
      expect(refused.json.error).toEqual({ code: 'InvalidRequest', message: '--limit must be a whole number from 1 to 100' });
    }
    expect(runCli(['outbox:list', '--limit', '100', '--json'], env).status).toBe(0);
    // The usage and the operator guide name every kind, and the limit.
    const usage = runCli(['help', 'outbox:list'], env).stdout;
    const guide = readFileSync(new URL('../docs/operate/cli.md', import.meta.url), 'utf8');
    const guideLine = guide.slice(guide.indexOf('pnpm cli outbox:list'), guide.indexOf('```', guide.indexOf('pnpm cli outbox:list')));
    for (const kind of EMAIL_KINDS) {
      expect(usage).toContain(kind);
      expect(guideLine).toContain(kind);
    }
    expect(usage).toContain('--limit 1-100');
    expect(guide).toContain('`--limit` is 1–100 (default 20): a larger value is refused');
  });

  it('help lists every command; --json and --help work anywhere on the line', () => {
    const help = runCli(['help'], env);
    expect(help.status).toBe(0);
    for (const command of ['tenant:create', 'license:create', 'user:reset-password', 'user:unlock', 'user:reset-mfa', 'user:reactivate', 'jobs:run']) expect(help.stdout).toContain(command);
    expect(runCli(['--help'], env).stdout).toContain('Commands:');
    const one = runCli(['help', 'user:unlock'], env);
    expect(one.stdout.trim()).toBe('usage: pnpm cli user:unlock --email <email>   (lifts the lock after too many failed sign-ins)');
    expect(runCli(['user:unlock', '--help'], env).stdout).toContain('usage: pnpm cli user:unlock');
    expect(runCli(['help', 'frobnicate', '--json'], env).json.error.code).toBe('InvalidRequest');
    // --json before the command name, and between flags.
    const first = runCli(['--json', 'license:show', '--key', 'GLOBEX-AAAA-AAAA-AAAA-AAAA'], env);
    expect(first.json.error.code).toBe('NotFound');
    const middle = runCli(['tenant:create', '--name', 'Middle', '--json', '--prefix', 'MIDDLE'], env);
    expect(middle.status, middle.stderr).toBe(0);
    expect(middle.json.tenant.keyPrefix).toBe('MIDDLE');
    // Which database was used is told on stderr, never mixed into the JSON.
    expect(middle.stderr).toMatch(/^database: PostgreSQL 127\.0\.0\.1:\d+\/kf_test/m);
  });

  it('recovers locked, forgotten, lost-authenticator and deactivated accounts, each in the activity log', async () => {
    const email = 'locked@globex.test';
    expect(runCli(['user:create', '--tenant', 'GLOBEX', '--email', email, '--password', 'the original password', '--role', 'CompanyAdmin', '--json'], env).status).toBe(0);
    // Five wrong passwords lock the account; then even the right one is refused.
    for (let i = 0; i < 5; i++) await expect(t.login(email, 'wrong password!')).rejects.toMatchObject({ code: expect.stringMatching(/Unauthorized|AccountLocked/) });
    await expect(t.login(email, 'the original password')).rejects.toMatchObject({ code: 'AccountLocked' });
    expect(runCli(['user:unlock', '--email', email, '--json'], env).json).toEqual({ email, wasLocked: true });
    const session = await t.login(email, 'the original password');
    expect(session.status).toBe('SUCCESS');

    // A reset password: the old one stops working, the generated one (shown once) works, old sessions end.
    const reset = runCli(['user:reset-password', '--email', email, '--json'], env);
    expect(reset.status, reset.stderr).toBe(0);
    expect(reset.json.generatedPassword).toMatch(/^[A-Za-z0-9_-]{20}$/);
    await expect(t.login(email, 'the original password')).rejects.toMatchObject({ code: 'Unauthorized' });
    // Someone else chose it: the sign-in hands over a reset token instead of a session until the user chose their own.
    const handed = await t.login(email, reset.json.generatedPassword);
    expect(handed.status).toBe('PASSWORD_CHANGE_REQUIRED');
    const chosen = await t.gql('mutation($t: String!) { resetPassword(input: { token: $t, password: "the user\'s own password" }) { __typename } }', { t: handed.resetToken });
    expect(chosen.data.resetPassword.__typename).toBe('LoginSuccess');
    expect((await t.login(email, "the user's own password")).status).toBe('SUCCESS');
    const me = await t.gql('{ me { email } }', {}, { token: session.token });
    expect(me).toMatchObject({ status: 401, json: { error: { code: 'Unauthorized' } } });
    expect(runCli(['user:reset-password', '--email', email, '--password', 'short', '--json'], env).json.error.code).toBe('InvalidRequest');
    expect(runCli(['user:reset-password', '--email', email, '--password', 'a chosen new password', '--json'], env).json.generatedPassword).toBeNull();
    expect((await t.login(email, 'a chosen new password')).status).toBe('PASSWORD_CHANGE_REQUIRED');
    await t.prisma.user.update({ where: { email }, data: { passwordMustChange: false } }); // as if chosen (shown above)

    // Lost authenticator: MFA on, then reset by the operator; a password alone signs in again.
    const { token } = await t.login(email, 'a chosen new password');
    const enrol = await t.gql('mutation { startMfaEnrollment { secret } }', {}, { token });
    const code = currentTotp(enrol.data.startMfaEnrollment.secret, t.clock.now());
    expect((await t.gql('mutation($code: String!) { confirmMfaEnrollment(input: { code: $code }) { backupCodes } }', { code }, { token })).errors).toBeUndefined();
    expect((await t.login(email, 'a chosen new password')).status).toBe('MFA_REQUIRED');
    expect(runCli(['user:reset-mfa', '--email', email, '--json'], env).json).toEqual({ email, mfaWasEnabled: true });
    expect((await t.login(email, 'a chosen new password')).status).toBe('SUCCESS');

    // Deactivated by an admin, reactivated by the operator.
    const user = await t.prisma.user.findUniqueOrThrow({ where: { email } });
    await t.prisma.user.update({ where: { id: user.id }, data: { deactivatedAt: t.clock.now() } });
    await expect(t.login(email, 'a chosen new password')).rejects.toMatchObject({ code: 'Unauthorized' });
    expect(runCli(['user:reactivate', '--email', email, '--json'], env).json).toEqual({ email, wasDeactivated: true });
    expect(runCli(['user:reactivate', '--email', email, '--json'], env).json).toEqual({ email, wasDeactivated: false });
    expect((await t.login(email, 'a chosen new password')).status).toBe('SUCCESS');

    expect(runCli(['user:unlock', '--email', 'nobody@globex.test', '--json'], env).json.error.code).toBe('NotFound');
    const logged = await t.prisma.auditLogEntry.findMany({ where: { entityId: user.id, actor: 'system (cli)' }, orderBy: { seq: 'asc' }, select: { action: true, details: true } });
    expect(logged.map((entry) => entry.action)).toEqual(['CreateUser', 'UnlockAccount', 'ChangePassword', 'ChangePassword', 'DisableMfa', 'ReactivateUser']);
    expect(logged.slice(1, -1).map((entry) => (entry.details as { by?: string }).by)).toEqual(['operator', 'operator', 'operator', 'operator']);
  });
});

describe('operator CLI on the embedded database', () => {
  it('refuses to answer from a DATA_DIR that holds no database (and creates nothing there)', () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'kf-cli-empty-'));
    try {
      const embedded = { DATA_DIR: empty, DATABASE_URL: '', SERVER_SECRET: '' };
      const show = runCli(['license:show', '--key', 'ACME-AAAA-AAAA-AAAA-AAAA', '--json'], embedded);
      expect(show.status).toBe(1);
      expect(show.json.error.message).toContain(`no embedded database in ${path.join(empty, 'pglite')}`);
      expect(readdirSync(empty)).toEqual([]);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
