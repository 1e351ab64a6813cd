import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentTotp } from '../server/src/services/auth/mfa.js';
import { REFRESH_REUSE_GRACE_MS } from '../server/src/services/auth/sessions.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';

let t: TestApp;
const clock = new TestClock();
let admin: Awaited<ReturnType<TestApp['setupAdmin']>>;
const PASSWORD = 'correct horse battery';

beforeAll(async () => {
  t = await startTestApp({ clock });
  admin = await t.setupAdmin();
});
afterAll(() => t.close());

const auditCount = (action: string, entity?: string) => t.prisma.auditLogEntry.count({ where: { action, ...(entity ? { entity } : {}) } });
const ME = '{ me { email role mfaEnabled } }';

describe('first-run setup', () => {
  it('is open only while no user exists', async () => {
    expect((await t.gql('{ needsSetup }')).data).toEqual({ needsSetup: false });
    const again = await t.gql('mutation { setup(input: { companyName: "Evil", keyPrefix: "EVIL", email: "x@evil.test", password: "0123456789ab" }) { accessToken } }');
    expect(again.errors![0].extensions!.code).toBe('Forbidden');
    expect(await t.prisma.tenant.count({ where: { keyPrefix: 'EVIL' } })).toBe(0);
  });

  it('concurrent setups on a fresh database create exactly one company', async () => {
    const fresh = await startTestApp();
    try {
      const attempts = await Promise.all(
        ['ONE', 'TWO', 'THREE'].map((prefix) =>
          fresh.gql(`mutation { setup(input: { companyName: "${prefix}", keyPrefix: "${prefix}", email: "${prefix.toLowerCase()}@x.test", password: "0123456789ab" }) { accessToken } }`),
        ),
      );
      expect(attempts.filter((a) => !a.errors)).toHaveLength(1);
      expect(await fresh.prisma.tenant.count()).toBe(1);
      expect(await fresh.prisma.user.count()).toBe(1);
    } finally {
      await fresh.close();
    }
  });
});

describe('login, lockout and sessions', () => {
  it('an unknown email and a wrong password look the same; the failure is logged', async () => {
    const before = await auditCount('FailedLogin', 'admin@acme.test');
    const unknown = await t.gql('mutation { login(input: { email: "nobody@acme.test", password: "whatever-long" }) { __typename ... on LoginSuccess { __typename } } }');
    const wrong = await t.gql('mutation { login(input: { email: "admin@acme.test", password: "wrong-password" }) { __typename ... on LoginSuccess { __typename } } }', {}, { ip: '198.51.100.7' });
    expect(unknown.errors![0]).toMatchObject({ message: 'Invalid email or password.', extensions: { code: 'Unauthorized' } });
    expect(wrong.errors![0]).toMatchObject({ message: 'Invalid email or password.', extensions: { code: 'Unauthorized' } });
    expect(await auditCount('FailedLogin', 'admin@acme.test')).toBe(before + 1);
    const entry = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { action: 'FailedLogin' }, orderBy: { seq: 'desc' } });
    expect(entry).toMatchObject({ entity: 'admin@acme.test', ip: '198.51.100.7', details: { reason: 'wrong password' } });
    // A successful login resets the failure counter.
    await t.login('admin@acme.test');
  });

  it('locks the account after 5 failures in 15 minutes, logs it, and unlocks after 15 minutes', async () => {
    const user = await t.seedUser(admin.user.tenantId, { email: 'lock@acme.test' });
    for (let i = 0; i < 4; i++) await expect(t.login('lock@acme.test', 'bad-password-x')).rejects.toMatchObject({ code: 'Unauthorized' });
    expect(await auditCount('LockAccount', 'lock@acme.test')).toBe(0);
    await expect(t.login('lock@acme.test', 'bad-password-x')).rejects.toMatchObject({ code: 'Unauthorized' });
    expect(await auditCount('LockAccount', 'lock@acme.test')).toBe(1);
    // Locked: even the right password is refused, with a message that says so.
    const locked = await t.gql(`mutation { login(input: { email: "lock@acme.test", password: "${PASSWORD}" }) { __typename ... on LoginSuccess { __typename } } }`);
    expect(locked.errors![0].extensions!.code).toBe('AccountLocked');
    expect(locked.errors![0].message).toMatch(/locked until/);
    expect(locked.errors![0].extensions).toMatchObject({ retryAfterSeconds: 900 });
    const start = clock.now().toISOString();
    clock.advance(15 * 60_000 + 1);
    try {
      expect((await t.login('lock@acme.test')).status).toBe('SUCCESS');
      expect(await t.prisma.loginFailure.findUnique({ where: { email: user.email } })).toBeNull();
    } finally {
      clock.set(start);
    }
  });

  it('failures spread over more than 15 minutes do not lock', async () => {
    await t.seedUser(admin.user.tenantId, { email: 'slow@acme.test' });
    const start = clock.now().toISOString();
    try {
      for (let i = 0; i < 6; i++) {
        await expect(t.login('slow@acme.test', 'bad-password-x')).rejects.toMatchObject({ code: 'Unauthorized' });
        clock.advance(4 * 60_000);
      }
      expect(await auditCount('LockAccount', 'slow@acme.test')).toBe(0);
    } finally {
      clock.set(start);
    }
  });

  it('rotates refresh tokens; reusing an old one ends the whole session', async () => {
    const session = await t.login('admin@acme.test');
    const first = await t.gql('mutation { refreshSession { __typename accessToken user { email } } }', {}, { cookie: session.cookie });
    // The payload's user is whose session the service renewed.
    expect(first.data.refreshSession).toMatchObject({ __typename: 'RefreshSessionPayload', accessToken: expect.any(String), user: { email: 'admin@acme.test' } });
    const attributes = first.setCookie!.split('; ').slice(1);
    expect(attributes).toEqual(expect.arrayContaining(['Path=/api/graphql', 'HttpOnly', 'SameSite=Strict']));
    expect(attributes.find((attribute) => attribute.startsWith('Expires='))).toBeDefined();
    const nextCookie = first.setCookie!.split(';')[0];
    expect(nextCookie).not.toBe(session.cookie);
    const second = await t.gql('mutation { refreshSession { accessToken } }', {}, { cookie: nextCookie });
    expect(second.errors).toBeUndefined();
    // Replaying the first (spent) cookie after the grace window revokes the family: every token of it stops working.
    clock.advance(REFRESH_REUSE_GRACE_MS + 1);
    const replay = await t.gql('mutation { refreshSession { accessToken } }', {}, { cookie: session.cookie });
    expect(replay.errors![0].extensions!.code).toBe('Unauthorized');
    // Cleared: an empty value that expired at the epoch.
    expect(replay.setCookie).toMatch(/^kf_refresh=; Path=\/api\/graphql; Expires=Thu, 01 Jan 1970 00:00:00 GMT; .*HttpOnly/);
    expect((await t.gql(ME, {}, { token: second.data.refreshSession.accessToken })).status).toBe(401);
    expect((await t.gql('mutation { refreshSession { accessToken } }', {}, { cookie: second.setCookie!.split(';')[0] })).errors![0].extensions!.code).toBe('Unauthorized');
    // Other sessions are untouched.
    expect((await t.gql(ME, {}, { token: admin.token })).data.me.email).toBe('admin@acme.test');
  });

  const REFRESH = 'mutation { refreshSession { accessToken } }';
  const refreshWith = (cookie: string) => t.gql(REFRESH, {}, { cookie });
  const cookieOf = (response: { setCookie?: string | null }) => response.setCookie!.split(';')[0];

  it('a spent refresh token presented once more within the grace window gets a new pair (a browser that died after refreshing)', async () => {
    const session = await t.login('admin@acme.test');
    const rotated = await refreshWith(session.cookie!);
    expect(rotated.errors).toBeUndefined();
    // The browser never stored the successor; it comes back a little later with the spent token.
    clock.advance(REFRESH_REUSE_GRACE_MS - 1000);
    const rescued = await refreshWith(session.cookie!);
    expect(rescued.errors).toBeUndefined();
    expect(cookieOf(rescued)).not.toBe(cookieOf(rotated));
    expect((await t.gql(ME, {}, { token: rescued.data.refreshSession.accessToken })).data.me.email).toBe('admin@acme.test');
    // The session goes on from the new pair (and the successor it never stored did not end it).
    const onward = await refreshWith(cookieOf(rescued));
    expect(onward.errors).toBeUndefined();
    expect((await t.gql(ME, {}, { token: onward.data.refreshSession.accessToken })).data.me.email).toBe('admin@acme.test');
    expect(await t.prisma.refreshToken.count({ where: { digest: t.deps.secrets.digest(`refresh:${session.cookie!.split('=')[1]}`), reusedAt: { not: null } } })).toBe(1);
  });

  it('the grace is one reuse: a third presentation of a spent token, even within the window, revokes the family', async () => {
    const session = await t.login('admin@acme.test');
    const rotated = await refreshWith(session.cookie!);
    const rescued = await refreshWith(session.cookie!);
    expect([rotated.errors, rescued.errors]).toEqual([undefined, undefined]);
    const third = await refreshWith(session.cookie!);
    expect(third.errors![0]).toMatchObject({ message: expect.stringMatching(/used twice/), extensions: { code: 'Unauthorized' } });
    // Both branches of the family are gone.
    for (const branch of [rotated, rescued]) {
      expect((await t.gql(ME, {}, { token: branch.data.refreshSession.accessToken })).status).toBe(401);
      expect((await refreshWith(cookieOf(branch))).errors![0].extensions!.code).toBe('Unauthorized');
    }
  });

  it('a spent token presented after the grace window revokes the family (reuse detection is kept)', async () => {
    const session = await t.login('admin@acme.test');
    const rotated = await refreshWith(session.cookie!);
    clock.advance(REFRESH_REUSE_GRACE_MS + 1);
    const late = await refreshWith(session.cookie!);
    expect(late.errors![0]).toMatchObject({ message: expect.stringMatching(/used twice/), extensions: { code: 'Unauthorized' } });
    expect((await t.gql(ME, {}, { token: rotated.data.refreshSession.accessToken })).status).toBe(401);
    expect((await refreshWith(cookieOf(rotated))).errors![0].extensions!.code).toBe('Unauthorized');
  });

  it('two concurrent refreshes with one token (two tabs) both get a session; a revoked family gives no grace', async () => {
    const session = await t.login('admin@acme.test');
    const both = await Promise.all([refreshWith(session.cookie!), refreshWith(session.cookie!)]);
    expect(both.map((response) => response.errors)).toEqual([undefined, undefined]);
    // Both are one session: logging out of either ends the other's too.
    await t.gql('mutation { logout { success } }', {}, { token: both[0].data.refreshSession.accessToken });
    expect((await t.gql(ME, {}, { token: both[1].data.refreshSession.accessToken })).status).toBe(401);
    // Logged out within the window: the spent token is not rescued.
    const fresh = await t.login('admin@acme.test');
    const rotated = await refreshWith(fresh.cookie!);
    await t.gql('mutation { logout { success } }', {}, { token: rotated.data.refreshSession.accessToken });
    expect((await refreshWith(fresh.cookie!)).errors![0].extensions!.code).toBe('Unauthorized');
  });

  it('an expired access token is refused; logout ends the session', async () => {
    const session = await t.login('admin@acme.test');
    expect((await t.gql(ME, {}, { token: session.token })).data.me.role).toBe('COMPANY_ADMIN');
    const start = clock.now().toISOString();
    clock.advance(15 * 60_000 + 1000);
    expect((await t.gql(ME, {}, { token: session.token })).status).toBe(401);
    clock.set(start);
    const before = await auditCount('Logout');
    expect((await t.gql('mutation { logout { success } }', {}, { token: session.token })).data.logout).toEqual({ success: true });
    expect(await auditCount('Logout')).toBe(before + 1);
    expect((await t.gql(ME, {}, { token: session.token })).status).toBe(401);
    expect((await t.gql('mutation { refreshSession { accessToken } }', {}, { cookie: session.cookie })).errors![0].extensions!.code).toBe('Unauthorized');
  });

  it('a forged or garbage token is a 401 with the error body', async () => {
    const forged = admin.token.slice(0, -4) + (admin.token.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    for (const token of [forged, 'not-a-jwt']) {
      const response = await t.gql(ME, {}, { token });
      expect(response.status).toBe(401);
      expect(response.json.error.code).toBe('Unauthorized');
    }
  });

  it('changing the password needs the current one and ends the other sessions', async () => {
    await t.seedUser(admin.user.tenantId, { email: 'pw@acme.test' });
    const a = await t.login('pw@acme.test');
    const b = await t.login('pw@acme.test');
    const wrong = await t.gql('mutation { changePassword(input: { currentPassword: "nope-nope-nope", newPassword: "a brand new secret" }) { user { id } } }', {}, { token: a.token });
    expect(wrong.errors![0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { currentPassword: 'wrong password' } });
    const short = await t.gql(`mutation { changePassword(input: { currentPassword: "${PASSWORD}", newPassword: "short" }) { user { id } } }`, {}, { token: a.token });
    expect(short.errors![0].extensions!.code).toBe('InvalidRequest');
    const ok = await t.gql(`mutation { changePassword(input: { currentPassword: "${PASSWORD}", newPassword: "a brand new secret" }) { user { id } } }`, {}, { token: a.token });
    expect(ok.data.changePassword.user).toEqual({ id: (await t.prisma.user.findUniqueOrThrow({ where: { email: 'pw@acme.test' } })).id });
    expect((await t.gql(ME, {}, { token: a.token })).status).toBe(200);
    expect((await t.gql(ME, {}, { token: b.token })).status).toBe(401);
    await expect(t.login('pw@acme.test')).rejects.toMatchObject({ code: 'Unauthorized' });
    expect((await t.login('pw@acme.test', 'a brand new secret')).status).toBe('SUCCESS');
    expect(await auditCount('ChangePassword', 'pw@acme.test')).toBe(1);
  });
});

describe('MFA (TOTP + backup codes)', () => {
  it('enrolls, requires a code at login, refuses a reused code, and backup codes work once', async () => {
    await t.seedUser(admin.user.tenantId, { email: 'mfa@acme.test' });
    const { token } = await t.login('mfa@acme.test');
    const enrollment = (await t.gql('mutation { startMfaEnrollment { secret otpauthUrl } }', {}, { token })).data.startMfaEnrollment;
    expect(enrollment.otpauthUrl).toMatch(/^otpauth:\/\/totp\/Keyforge:mfa%40acme\.test\?.*secret=/);
    const badConfirm = await t.gql('mutation { confirmMfaEnrollment(input: { code: "000000" }) { backupCodes } }', {}, { token });
    expect(badConfirm.errors![0].extensions!.code).toBe('InvalidRequest');
    const codes: string[] = (await t.gql('mutation($code: String!) { confirmMfaEnrollment(input: { code: $code }) { backupCodes } }', { code: currentTotp(enrollment.secret, clock.now()) }, { token })).data.confirmMfaEnrollment.backupCodes;
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    expect(await t.prisma.backupCode.count({ where: { digest: { in: codes } } })).toBe(0); // stored hashed
    expect(await auditCount('EnableMfa', 'mfa@acme.test')).toBe(1);

    expect((await t.login('mfa@acme.test')).status).toBe('MFA_REQUIRED');
    // The code used to confirm enrollment cannot sign in (same time step).
    await expect(t.login('mfa@acme.test', PASSWORD, { totpCode: currentTotp(enrollment.secret, clock.now()) })).rejects.toMatchObject({ code: 'Unauthorized' });
    clock.advance(30_000);
    const code = currentTotp(enrollment.secret, clock.now());
    expect((await t.login('mfa@acme.test', PASSWORD, { totpCode: code })).status).toBe('SUCCESS');
    await expect(t.login('mfa@acme.test', PASSWORD, { totpCode: code })).rejects.toMatchObject({ code: 'Unauthorized' });
    await expect(t.login('mfa@acme.test', PASSWORD, { totpCode: '123456' })).rejects.toMatchObject({ code: 'Unauthorized' });

    const backup = await t.login('mfa@acme.test', PASSWORD, { backupCode: codes[3] });
    expect(backup.status).toBe('SUCCESS');
    expect(await auditCount('UseBackupCode', 'mfa@acme.test')).toBe(1);
    await expect(t.login('mfa@acme.test', PASSWORD, { backupCode: codes[3] })).rejects.toMatchObject({ code: 'Unauthorized' });

    const noCode = await t.gql('mutation { disableMfa(input: {}) { user { id } } }', {}, { token: backup.token });
    expect(noCode.errors![0].extensions!.code).toBe('InvalidRequest');
    clock.advance(30_000);
    expect((await t.gql('mutation($c: String) { disableMfa(input: { totpCode: $c }) { user { id mfaEnabled } } }', { c: currentTotp(enrollment.secret, clock.now()) }, { token: backup.token })).data.disableMfa.user.mfaEnabled).toBe(false);
    expect(await auditCount('DisableMfa', 'mfa@acme.test')).toBe(1);
    expect((await t.login('mfa@acme.test')).status).toBe('SUCCESS');
  });
});

describe('team, API keys, roles and tenants', () => {
  let readOnly: { token: string };
  let tenantB: { token: string; tenantId: string };

  beforeAll(async () => {
    await t.seedUser(admin.user.tenantId, { email: 'viewer@acme.test', role: 'ReadOnly', name: 'Vic' });
    readOnly = await t.login('viewer@acme.test');
    const other = await t.seedTenant({ name: 'Globex', keyPrefix: 'GLBX' });
    await t.seedUser(other.id, { email: 'admin@globex.test' });
    tenantB = { ...(await t.login('admin@globex.test')), tenantId: other.id };
  });

  it('the read-only role can read but is refused every management mutation', async () => {
    expect((await t.gql('{ users { nodes { email } } company { name } apiKeys { nodes { id } } }', {}, readOnly)).errors).toBeUndefined();
    const victim = await t.prisma.user.findUniqueOrThrow({ where: { email: 'lock@acme.test' } });
    const mutations = [
      'mutation { inviteUser(input: { email: "x@acme.test", role: COMPANY_ADMIN }) { invitation { id } } }',
      `mutation { updateUser(input: { id: "${victim.id}", role: READ_ONLY }) { user { id } } }`,
      `mutation { deactivateUser(input: { id: "${victim.id}" }) { user { id } } }`,
      `mutation { reactivateUser(input: { id: "${victim.id}" }) { user { id } } }`,
      'mutation { createApiKey(input: { name: "k", role: COMPANY_ADMIN }) { key } }',
      `mutation { revokeApiKey(input: { id: "${victim.id}" }) { apiKey { id } } }`,
      'mutation { updateCompanySettings(input: { name: "Pwned" }) { company { name } } }',
    ];
    const users = await t.prisma.user.count();
    for (const mutation of mutations) {
      const response = await t.gql(mutation, {}, readOnly);
      expect(response.errors?.[0].extensions?.code, mutation).toBe('Forbidden');
    }
    expect(await t.prisma.user.count()).toBe(users);
    expect((await t.prisma.tenant.findUniqueOrThrow({ where: { id: admin.user.tenantId } })).name).toBe('Acme Corp');
    // Self-service stays open to every signed-in user.
    expect((await t.gql('mutation { updateNotificationPreferences(input: { digestEmailEnabled: false }) { notificationPreferences { digestEmailEnabled } } }', {}, readOnly)).data.updateNotificationPreferences.notificationPreferences.digestEmailEnabled).toBe(false);
  });

  it('tenant B cannot see or touch tenant A objects', async () => {
    const victim = await t.prisma.user.findUniqueOrThrow({ where: { email: 'viewer@acme.test' } });
    const key = (await t.gql('mutation { createApiKey(input: { name: "ci", role: READ_ONLY }) { apiKey { id } } }', {}, { token: admin.token })).data.createApiKey.apiKey.id;
    for (const mutation of [`mutation { updateUser(input: { id: "${victim.id}", name: "hacked" }) { user { id } } }`, `mutation { deactivateUser(input: { id: "${victim.id}" }) { user { id } } }`, `mutation { reactivateUser(input: { id: "${victim.id}" }) { user { id } } }`, `mutation { revokeApiKey(input: { id: "${key}" }) { apiKey { id } } }`]) {
      expect((await t.gql(mutation, {}, { token: tenantB.token })).errors![0].extensions!.code, mutation).toBe('NotFound');
    }
    expect(await t.prisma.user.findUniqueOrThrow({ where: { id: victim.id } })).toMatchObject({ name: 'Vic', deactivatedAt: null });
    expect((await t.prisma.apiKey.findUniqueOrThrow({ where: { id: key } })).revokedAt).toBeNull();
    const seen = (await t.gql('{ users { nodes { email } } apiKeys { nodes { id } } company { name } }', {}, { token: tenantB.token })).data;
    expect(seen.users.nodes.map((u: { email: string }) => u.email)).toEqual(['admin@globex.test']);
    expect(seen.apiKeys.nodes).toEqual([]);
    expect(seen.company.name).toBe('Globex');
  });

  it('API keys: shown once, stored hashed, act with their role, record usage, and stop when revoked', async () => {
    const created = (await t.gql('mutation { createApiKey(input: { name: "deploy bot", role: COMPANY_ADMIN }) { key apiKey { id hint role } } }', {}, { token: admin.token })).data.createApiKey;
    expect(created.key).toMatch(/^kf_[A-Za-z0-9_-]{32}$/);
    expect(created.apiKey.hint).toBe(`kf_…${created.key.slice(-4)}`);
    expect(JSON.stringify(await t.prisma.apiKey.findUniqueOrThrow({ where: { id: created.apiKey.id } }))).not.toContain(created.key);
    const listed = (await t.gql('{ apiKeys { nodes { id hint lastUsedAt } } }', {}, { token: admin.token })).data.apiKeys.nodes.find((k: { id: string }) => k.id === created.apiKey.id);
    expect(listed).toMatchObject({ hint: created.apiKey.hint, lastUsedAt: null });
    expect(JSON.stringify(listed)).not.toContain(created.key);

    const renamed = await t.gql('mutation { updateCompanySettings(input: { name: "Acme Inc" }) { company { name } } }', {}, { apiKey: created.key });
    expect(renamed.data.updateCompanySettings.company.name).toBe('Acme Inc');
    const entry = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { action: 'UpdateCompanySettings' }, orderBy: { seq: 'desc' } });
    expect(entry.actor).toBe(`api-key deploy bot (${created.apiKey.hint})`);
    expect(entry.details).toEqual({ before: { name: 'Acme Corp' }, after: { name: 'Acme Inc' } });
    expect((await t.prisma.apiKey.findUniqueOrThrow({ where: { id: created.apiKey.id } })).lastUsedAt).not.toBeNull();
    // API keys are not users: self-service is refused.
    expect((await t.gql('mutation { logout { success } }', {}, { apiKey: created.key })).errors![0].extensions!.code).toBe('Forbidden');

    const readKey = (await t.gql('mutation { createApiKey(input: { name: "reader", role: READ_ONLY }) { key } }', {}, { token: admin.token })).data.createApiKey.key;
    expect((await t.gql('mutation { updateCompanySettings(input: { name: "x" }) { company { name } } }', {}, { apiKey: readKey })).errors![0].extensions!.code).toBe('Forbidden');
    expect((await t.gql('{ company { name } }', {}, { apiKey: readKey })).data.company.name).toBe('Acme Inc');

    await t.gql(`mutation { revokeApiKey(input: { id: "${created.apiKey.id}" }) { apiKey { revokedAt } } }`, {}, { token: admin.token });
    const revoked = await t.gql('{ company { name } }', {}, { apiKey: created.key });
    expect(revoked.status).toBe(401);
    expect(revoked.json.error.message).toMatch(/revoked/);
  });

  it('a deactivated user cannot sign in; their sessions and API keys stop working', async () => {
    await t.seedUser(admin.user.tenantId, { email: 'leaver@acme.test' });
    const leaver = await t.login('leaver@acme.test');
    const key = (await t.gql('mutation { createApiKey(input: { name: "leaver key", role: READ_ONLY }) { key } }', {}, { token: leaver.token })).data.createApiKey.key;
    const id = (await t.prisma.user.findUniqueOrThrow({ where: { email: 'leaver@acme.test' } })).id;
    const self = await t.gql(`mutation { deactivateUser(input: { id: "${(await t.prisma.user.findUniqueOrThrow({ where: { email: 'admin@acme.test' } })).id}" }) { user { id } } }`, {}, { token: admin.token });
    expect(self.errors![0].extensions!.code).toBe('Conflict');
    expect((await t.gql(`mutation { deactivateUser(input: { id: "${id}" }) { user { active deactivatedAt } } }`, {}, { token: admin.token })).data.deactivateUser.user.active).toBe(false);
    expect((await t.gql(ME, {}, { token: leaver.token })).status).toBe(401);
    expect((await t.gql('{ company { name } }', {}, { apiKey: key })).status).toBe(401);
    await expect(t.login('leaver@acme.test')).rejects.toMatchObject({ code: 'Unauthorized' });
    expect(await auditCount('DeactivateUser', 'leaver@acme.test')).toBe(1);

    // Reactivated: signs in again; the old session and API key stay revoked.
    expect((await t.gql(`mutation { reactivateUser(input: { id: "${id}" }) { user { active deactivatedAt } } }`, {}, { token: admin.token })).data.reactivateUser.user).toEqual({ active: true, deactivatedAt: null });
    expect((await t.login('leaver@acme.test')).status).toBe('SUCCESS');
    expect((await t.gql(ME, {}, { token: leaver.token })).status).toBe(401);
    expect((await t.gql('{ company { name } }', {}, { apiKey: key })).status).toBe(401);
    expect(await auditCount('ReactivateUser', 'leaver@acme.test')).toBe(1);
    // Reactivating an active user changes and logs nothing.
    await t.gql(`mutation { reactivateUser(input: { id: "${id}" }) { user { id } } }`, {}, { token: admin.token });
    expect(await auditCount('ReactivateUser', 'leaver@acme.test')).toBe(1);
  });

  it('updates a user with a before/after diff in the activity log', async () => {
    const id = (await t.prisma.user.findUniqueOrThrow({ where: { email: 'viewer@acme.test' } })).id;
    const updated = await t.gql(`mutation { updateUser(input: { id: "${id}", name: "Victoria", role: COMPANY_ADMIN }) { user { name role } } }`, {}, { token: admin.token });
    expect(updated.data.updateUser.user).toEqual({ name: 'Victoria', role: 'COMPANY_ADMIN' });
    const entry = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { action: 'UpdateUser' }, orderBy: { seq: 'desc' } });
    expect(entry).toMatchObject({ entity: 'viewer@acme.test', actor: 'admin@acme.test', details: { before: { name: 'Vic', role: 'ReadOnly' }, after: { name: 'Victoria', role: 'CompanyAdmin' } } });
    const duplicate = await t.gql('mutation { inviteUser(input: { email: "VIEWER@acme.test", role: READ_ONLY }) { invitation { id } } }', {}, { token: admin.token });
    expect(duplicate.errors![0]).toMatchObject({ message: 'viewer@acme.test is already a member of your company.', extensions: { code: 'Conflict' } });
  });
});

describe('notification preferences (docs/integrate/management-api.md "Notification preferences (REST)")', () => {
  it('defaults to true, changes only the caller, validates types and returns what is stored', async () => {
    await t.seedUser(admin.user.tenantId, { email: 'second-admin@acme.test' });
    const other = await t.login('second-admin@acme.test');
    const mine = { authorization: `Bearer ${other.token}` };
    expect((await t.get('/api/users/me/notifications', mine)).json).toEqual({ digestEmailEnabled: true, expiryEmailEnabled: true });
    const patched = await t.request('PATCH', '/api/users/me/notifications', { digestEmailEnabled: false, expiryEmailEnabled: true }, mine);
    expect(patched.status).toBe(200);
    expect(patched.json).toEqual({ digestEmailEnabled: false, expiryEmailEnabled: true });
    expect((await t.get('/api/users/me/notifications', mine)).json).toEqual({ digestEmailEnabled: false, expiryEmailEnabled: true });
    expect((await t.get('/api/users/me/notifications', { authorization: `Bearer ${admin.token}` })).json.digestEmailEnabled).toBe(true);
    for (const body of [{ digestEmailEnabled: 'no' }, { expiryEmailEnabled: 1 }, { somethingElse: true }, 'not json']) {
      const bad = await t.request('PATCH', '/api/users/me/notifications', body, mine);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.json.error.code).toBe('InvalidRequest');
    }
    expect((await t.get('/api/users/me/notifications')).status).toBe(401);
  });
});

describe('GraphQL hygiene', () => {
  it('introspection only for authenticated callers', async () => {
    expect((await t.gql('{ __schema { queryType { name } } }')).errors![0].message).toMatch(/introspection/);
    expect((await t.gql('{ __schema { queryType { name } } }', {}, { token: admin.token })).data.__schema.queryType.name).toBe('Query');
  });

  it('limits query depth and aliases', async () => {
    const aliases = Array.from({ length: 30 }, (_, i) => `a${i}: needsSetup`).join(' ');
    expect((await t.gql(`{ ${aliases} }`)).errors![0].message).toMatch(/alias/i);
    let deep = 'email';
    for (let i = 0; i < 12; i++) deep = `__typename ... on User { ${deep} }`;
    const response = await t.gql(`{ me { ${deep} } }`, {}, { token: admin.token });
    expect(response.errors?.[0].message ?? '').toMatch(/depth/i);
  });

  it('refuses a simple (non-preflighted) request without the CSRF header', async () => {
    const form = await t.request('POST', '/api/graphql', 'query=%7B+needsSetup+%7D', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBeGreaterThanOrEqual(400);
    const get = await t.request('GET', '/api/graphql?query=%7BneedsSetup%7D');
    expect(get.status).toBe(403);
    const withHeader = await t.request('GET', '/api/graphql?query=%7BneedsSetup%7D', undefined, { 'x-keyforge-csrf': '1' });
    expect(withHeader.json.data.needsSetup).toBe(false);
  });

  it('CORS admits only the console origin, with credentials', async () => {
    const allowed = await t.request('OPTIONS', '/api/graphql', undefined, { origin: 'http://licensing.test', 'access-control-request-method': 'POST' });
    expect(allowed.headers.get('access-control-allow-origin')).toBe('http://licensing.test');
    expect(allowed.headers.get('access-control-allow-credentials')).toBe('true');
    const denied = await t.request('OPTIONS', '/api/graphql', undefined, { origin: 'https://evil.example', 'access-control-request-method': 'POST' });
    expect(denied.headers.get('access-control-allow-origin')).not.toBe('https://evil.example');
  });

  it('a bad variable value is a client error (InvalidRequest), not a masked internal error', async () => {
    const response = await t.gql('query($r: AnalyticsRange!) { analytics(range: $r) { __typename } }', { r: 'NEVER' }, { token: admin.token });
    expect(response.errors![0].extensions!.code).toBe('InvalidRequest');
    expect(response.errors![0].message).toMatch(/NEVER/);
  });

  it('never leaks secrets to the logs: a flow that carries each kind of secret is logged, without them', async () => {
    const from = t.logs.length;
    // Password sign-in, a refresh cookie, a bearer token, a wrong password, a license key in a body and one
    // pasted into a URL (refused, its path logged masked).
    const session = await t.login('admin@acme.test', PASSWORD);
    const refreshed = await t.gql('mutation { refreshSession { accessToken } }', {}, { cookie: session.cookie });
    expect(refreshed.errors).toBeUndefined();
    expect((await t.gql(ME, {}, { token: session.token })).data.me.email).toBe('admin@acme.test');
    await expect(t.login('admin@acme.test', 'a wrong secret password')).rejects.toMatchObject({ code: 'Unauthorized' });
    const product = await t.seedProduct(admin.user.tenantId, 'Log probe');
    const { key } = await t.seedLicense(admin.user.tenantId, product.id);
    expect((await t.post('/api/v1/validate', { licenseKey: key })).json.isValid).toBe(true);
    expect((await t.get(`/api/v1/licenses/${key}`)).status).toBe(400);
    const secrets = [PASSWORD, 'a wrong secret password', session.token, session.cookie!.split('=')[1], refreshed.data.refreshSession.accessToken, key, key.split('-').slice(1).join('-'), admin.token];
    const leaked = (lines: string[]) => secrets.filter((secret) => lines.join('').includes(secret));

    const flow = t.logs.slice(from);
    // The flow reached the logs: one request line per call (paths only), the key in the URL masked.
    expect(flow.filter((line) => line.includes('"msg":"request"')).length).toBeGreaterThanOrEqual(6);
    expect(flow.join('')).toContain('"path":"/api/v1/validate"');
    expect(flow.join('')).toContain('"path":"/api/v1/licenses/[redacted]"');
    expect(leaked(flow)).toEqual([]);
    // Over the whole suite too.
    expect(leaked(t.logs)).toEqual([]);

    // The check can fail: a secret written through the app's logger lands in the captured lines.
    const probe = t.logs.length;
    t.deps.logger.warn(`probe ${session.token}`);
    expect(leaked(t.logs.slice(probe))).toContain(session.token);
    t.logs.splice(probe);
  });
});
