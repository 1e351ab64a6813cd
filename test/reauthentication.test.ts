import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { currentTotp } from '../server/src/services/auth/mfa.js';
import { REAUTH_WINDOW_MS } from '../server/src/services/auth/recent-reauth.js';
import { resetPassword } from '../server/src/services/auth/recovery.js';
import { deliverDueEmails, type MailTransport } from '../server/src/services/notifications/delivery.js';
import { startTestApp, TestClock, type TestApp } from './support/harness.js';
import { PASSWORD, seedTwoTenants, type SeededTenant } from './support/tenants.js';

// Recent re-authentication (docs/security.md): account-security actions need a session that proved
// its password (and second factor) within 10 minutes; API keys never act on users' account security; single-use
// tokens travel by email only and are never stored in clear.

const CREATE_KEY = 'mutation($role: Role!) { createApiKey(input: { name: "k", role: $role }) { key } }';
const RESET_MFA = 'mutation($id: ID!) { resetUserMfa(input: { id: $id }) { mfaWasEnabled } }';
const SEND_LINK = 'mutation($id: ID!) { sendPasswordResetLink(input: { id: $id }) { user { id } } }';
const FORGOT = 'mutation($email: String!) { requestPasswordReset(input: { email: $email }) { message } }';
const RESET = 'mutation($token: String!, $password: String!) { resetPassword(input: { token: $token, password: $password }) { __typename } }';
const EMAILS = '{ emails(first: 100) { nodes { id to kind textBody htmlBody } } }';
const CHANGE_PASSWORD = 'mutation($current: String!, $next: String!) { changePassword(input: { currentPassword: $current, newPassword: $next }) { user { id } } }';
const DISABLE_MFA = 'mutation($code: String!) { disableMfa(input: { totpCode: $code }) { user { id } } }';
const INVITE = 'mutation($email: String!, $role: Role!) { inviteUser(input: { email: $email, role: $role }) { invitation { id } } }';
const UPDATE_ROLE = 'mutation($id: ID!, $role: Role!) { updateUser(input: { id: $id, role: $role }) { user { role } } }';
const CREATE_HOOK = 'mutation { createWebhookEndpoint(input: { url: "https://hooks.acme.test/k" }) { endpoint { id } } }';
const REISSUE = 'mutation($id: ID!) { reissueLicenseKey(input: { id: $id }) { key } }';
const START_MFA = 'mutation { startMfaEnrollment { secret } }';
const CONFIRM_MFA = 'mutation($code: String!) { confirmMfaEnrollment(input: { code: $code }) { backupCodes } }';

let t: TestApp;
let A: SeededTenant;
const clock = new TestClock();

beforeAll(async () => {
  t = await startTestApp({ clock, env: { RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '1000' } });
  ({ A } = await seedTwoTenants(t));
});
afterAll(async () => {
  await t?.close();
});

const code = (response: { status?: number; errors?: { extensions?: { code?: string } }[] }) =>
  response.errors?.[0]?.extensions?.code ?? (response.status === undefined || response.status === 200 ? 'ok' : `HTTP ${response.status}`);

/** A member signed in without re-authenticating (only an access token, as a thief would hold). */
async function member(email: string, role: 'CompanyAdmin' | 'ReadOnly' = 'CompanyAdmin') {
  const user = await t.seedUser(A.tenantId, { email, password: PASSWORD, role });
  const { token } = await t.login(email, PASSWORD, { reauth: false });
  return { user, token };
}

/**
 * Turns MFA on for a session: enrolment needs a recent re-authentication, stamped for it and then taken off again, so
 * the session is left as a thief's copy of its access token would be.
 */
async function enrolMfa(token: string) {
  await t.stampReauth(token);
  const secret = (await t.gqlData(START_MFA, {}, { token })).startMfaEnrollment.secret as string;
  await t.gqlData(CONFIRM_MFA, { code: currentTotp(secret, clock.now()) }, { token });
  const { fam } = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { fam: string };
  await t.prisma.sessionReauthentication.deleteMany({ where: { familyId: fam } });
  return secret;
}

describe('the account-takeover chain of a stolen access token', () => {
  it('every step is refused: createApiKey, resetUserMfa(self) by key, sendPasswordResetLink, the preview, resetPassword', async () => {
    const victim = await member('victim@acme.test');
    const secret = await enrolMfa(victim.token);
    clock.advance(30_000);
    // 1. Mint an admin key with the access token alone.
    const minted = await t.gql(CREATE_KEY, { role: 'COMPANY_ADMIN' }, { token: victim.token });
    expect(code(minted)).toBe('ReauthenticationRequired');
    expect(minted.errors![0].message).toContain('recent re-authentication');
    // A GraphQL error like any other: HTTP 200, the code in extensions.code — what docs/security.md says.
    expect(minted.status).toBe(200);
    const section = readFileSync('docs/security.md', 'utf8').split('\n## Recent re-authentication\n')[1].split('\n## ')[0];
    expect(section).toMatch(/`ReauthenticationRequired`[^.]*HTTP 200[^.]*`extensions\.code`/);
    expect(section).not.toMatch(/40[13]/);
    // 2. Reset one's own MFA: by session it needs re-authentication (and is refused for oneself); by any key, never.
    expect(code(await t.gql(RESET_MFA, { id: victim.user.id }, { token: victim.token }))).toBe('ReauthenticationRequired');
    expect(code(await t.gql(RESET_MFA, { id: victim.user.id }, { apiKey: A.adminKey.key }))).toBe('Forbidden');
    // 3. Send oneself a reset link: the same.
    expect(code(await t.gql(SEND_LINK, { id: victim.user.id }, { token: victim.token }))).toBe('ReauthenticationRequired');
    expect(code(await t.gql(SEND_LINK, { id: victim.user.id }, { apiKey: A.adminKey.key }))).toBe('Forbidden');
    // 4. "Forgot password?" is public: the link goes out, but no preview shows its token, not even the addressee's.
    await t.gql(FORGOT, { email: victim.user.email });
    const row = await t.prisma.emailOutbox.findFirstOrThrow({ where: { kind: 'password-reset', toAddress: victim.user.email } });
    const realToken = t.outboxToken(row);
    const previews = (await t.gqlData(EMAILS, {}, { token: victim.token })).emails.nodes as { id: string; textBody: string; htmlBody: string }[];
    const preview = previews.find((email) => email.id === row.id)!;
    expect(preview.textBody).toContain('#token=kfr_REDACTED');
    expect(preview.textBody + preview.htmlBody).not.toContain(realToken);
    // 5. resetPassword with what the preview shows: refused; MFA is still on, the password unchanged.
    const shown = /#token=(kfr_[\w-]+)/.exec(preview.textBody)![1];
    expect(code(await t.gql(RESET, { token: shown, password: 'the attacker password' }))).toBe('InvalidRequest');
    const after = await t.prisma.user.findUniqueOrThrow({ where: { id: victim.user.id } });
    expect(after.mfaSecretEncrypted).not.toBeNull();
    expect((await t.login(victim.user.email, PASSWORD, { reauth: false })).status).toBe('MFA_REQUIRED');
    expect(await t.prisma.apiKey.count({ where: { createdById: victim.user.id } })).toBe(0);
    // The owner, re-authenticating with password and TOTP, can do what the thief could not.
    clock.advance(30_000);
    expect(code(await t.reauthenticate(victim.token, { totpCode: currentTotp(secret, clock.now()) }))).toBe('ok');
    expect(code(await t.gql(CREATE_KEY, { role: 'COMPANY_ADMIN' }, { token: victim.token }))).toBe('ok');
  });
});

describe('each account-security action needs a re-authentication within 10 minutes', () => {
  /** Refused without, allowed right after reauthenticate, refused again once the 10 minutes are over. */
  async function gated(token: string, call: () => Promise<{ errors?: { extensions?: { code?: string } }[] }>, again = call) {
    expect(code(await call())).toBe('ReauthenticationRequired');
    const stamped = await t.reauthenticate(token);
    expect(code(stamped)).toBe('ok');
    expect(Date.parse(stamped.data.reauthenticate.reauthenticatedUntil)).toBe(clock.now().getTime() + REAUTH_WINDOW_MS);
    clock.advance(REAUTH_WINDOW_MS - 1000);
    expect(code(await call())).toBe('ok');
    clock.advance(1000);
    expect(code(await again())).toBe('ReauthenticationRequired');
  }

  it('createApiKey', async () => {
    const { token } = await member('keys@acme.test');
    await gated(token, () => t.gql(CREATE_KEY, { role: 'READ_ONLY' }, { token }));
  });

  it('resetUserMfa (another member) and sendPasswordResetLink', async () => {
    const { user, token } = await member('recoverer@acme.test');
    const other = await member('other-member@acme.test', 'ReadOnly');
    await gated(token, () => t.gql(RESET_MFA, { id: other.user.id }, { token }));
    const next = (await t.login(user.email, PASSWORD, { reauth: false })).token; // an access token lives 15 minutes
    await gated(next, () => t.gql(SEND_LINK, { id: other.user.id }, { token: next }));
  });

  it("turning MFA on: a stolen session cannot enrol the thief's authenticator, at either step", async () => {
    const { user, token } = await member('mfa-on@acme.test');
    // Without a re-authentication neither step is done: no pending secret is even stored.
    expect(code(await t.gql(START_MFA, {}, { token }))).toBe('ReauthenticationRequired');
    expect((await t.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).mfaPendingEncrypted).toBeNull();
    const stamped = await t.reauthenticate(token);
    expect(code(stamped)).toBe('ok');
    const secret = (await t.gqlData(START_MFA, {}, { token })).startMfaEnrollment.secret as string;
    // The confirmation is gated too: a re-authentication that lapsed meanwhile is asked again.
    clock.advance(REAUTH_WINDOW_MS);
    expect(code(await t.gql(CONFIRM_MFA, { code: currentTotp(secret, clock.now()) }, { token }))).toBe('ReauthenticationRequired');
    expect((await t.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).mfaSecretEncrypted).toBeNull();
    expect(code(await t.reauthenticate(token))).toBe('ok');
    expect(code(await t.gql(CONFIRM_MFA, { code: currentTotp(secret, clock.now()) }, { token }))).toBe('ok');
    expect(await t.prisma.auditLogEntry.count({ where: { entityId: user.id, action: 'EnableMfa' } })).toBe(1);
    // API keys never turn MFA on either (they have no session).
    expect(code(await t.gql(START_MFA, {}, { apiKey: A.adminKey.key }))).toBe('Forbidden');
  });

  it('disableMfa (own), with the password and a TOTP code to re-authenticate', async () => {
    const { token } = await member('mfa-off@acme.test');
    const secret = await enrolMfa(token);
    clock.advance(30_000);
    expect(code(await t.gql(DISABLE_MFA, { code: currentTotp(secret, clock.now()) }, { token }))).toBe('ReauthenticationRequired');
    // With MFA on the password alone is not enough; a wrong code is refused.
    expect(code(await t.reauthenticate(token))).toBe('InvalidRequest');
    expect(code(await t.reauthenticate(token, { totpCode: '000000' }))).toBe('Unauthorized');
    expect(code(await t.reauthenticate(token, { totpCode: currentTotp(secret, clock.now()) }))).toBe('ok');
    clock.advance(30_000);
    expect(code(await t.gql(DISABLE_MFA, { code: currentTotp(secret, clock.now()) }, { token }))).toBe('ok');
  });

  it('changePassword', async () => {
    const { token } = await member('changer@acme.test');
    await gated(token, () => t.gql(CHANGE_PASSWORD, { current: PASSWORD, next: 'new password 1' }, { token }), () =>
      t.gql(CHANGE_PASSWORD, { current: 'new password 1', next: 'never set here' }, { token }));
    expect(code(await t.reauthenticate(token, { password: 'new password 1' }))).toBe('ok');
  });

  it('inviting an admin and promoting a member to admin (not a read-only invitation)', async () => {
    const { user, token } = await member('promoter@acme.test');
    let n = 0;
    await gated(token, () => t.gql(INVITE, { email: `admin-${++n}@acme.test`, role: 'COMPANY_ADMIN' }, { token }));
    expect(code(await t.gql(INVITE, { email: 'reader@acme.test', role: 'READ_ONLY' }, { token }))).toBe('ok');
    const reader = await t.seedUser(A.tenantId, { email: 'to-promote@acme.test', role: 'ReadOnly' });
    const next = (await t.login(user.email, PASSWORD, { reauth: false })).token;
    await gated(next, async () => {
      const answer = await t.gql(UPDATE_ROLE, { id: reader.id, role: 'COMPANY_ADMIN' }, { token: next });
      await t.prisma.user.update({ where: { id: reader.id }, data: { role: 'ReadOnly' } });
      return answer;
    });
  });

  it('createWebhookEndpoint and reissueLicenseKey', async () => {
    const { user, token } = await member('integrator@acme.test');
    await gated(token, () => t.gql(CREATE_HOOK, {}, { token }));
    const next = (await t.login(user.email, PASSWORD, { reauth: false })).token;
    await gated(next, () => t.gql(REISSUE, { id: A.licenses[0].id }, { token: next }));
    // Tenant-wide actions, not a user's account security: an admin key may do them without a session.
    expect(code(await t.gql(REISSUE, { id: A.licenses[1].id }, { apiKey: A.adminKey.key }))).toBe('ok');
  });

  it('the stamp is a row of the session in the database (every replica reads it), and belongs to that session only', async () => {
    const { user, token } = await member('two-tabs@acme.test');
    const other = (await t.login(user.email, PASSWORD, { reauth: false })).token;
    expect(code(await t.reauthenticate(token))).toBe('ok');
    expect(await t.prisma.sessionReauthentication.count({ where: { userId: user.id } })).toBe(1);
    expect(code(await t.gql(CREATE_KEY, { role: 'READ_ONLY' }, { token }))).toBe('ok');
    expect(code(await t.gql(CREATE_KEY, { role: 'READ_ONLY' }, { token: other }))).toBe('ReauthenticationRequired');
  });
});

describe('API keys never act on account security', () => {
  it('refused on MFA, passwords, reset links, admin invitations and promotions, whatever their role; keys not above their own role', async () => {
    const target = await t.seedUser(A.tenantId, { email: 'keyed@acme.test', role: 'ReadOnly' });
    const apiKey = A.adminKey.key;
    expect(code(await t.gql(RESET_MFA, { id: target.id }, { apiKey }))).toBe('Forbidden');
    expect(code(await t.gql(SEND_LINK, { id: target.id }, { apiKey }))).toBe('Forbidden');
    expect(code(await t.gql(INVITE, { email: 'key-admin@acme.test', role: 'COMPANY_ADMIN' }, { apiKey }))).toBe('Forbidden');
    expect(code(await t.gql(UPDATE_ROLE, { id: target.id, role: 'COMPANY_ADMIN' }, { apiKey }))).toBe('Forbidden');
    expect(code(await t.gql(CHANGE_PASSWORD, { current: PASSWORD, next: 'a key set this' }, { apiKey }))).toBe('Forbidden');
    expect(code(await t.gql(DISABLE_MFA, { code: '123456' }, { apiKey }))).toBe('Forbidden');
    expect(code(await t.gql(CREATE_KEY, { role: 'COMPANY_ADMIN' }, { apiKey: A.readOnlyKey.key }))).toBe('Forbidden');
    expect(code(await t.gql('mutation { reauthenticate(input: { password: "x" }) { reauthenticatedUntil } }', {}, { apiKey }))).toBe('Forbidden');
    expect((await t.prisma.user.findUniqueOrThrow({ where: { id: target.id } })).role).toBe('ReadOnly');
    expect(await t.prisma.passwordReset.count({ where: { userId: target.id } })).toBe(0);
  });
});

describe('failed re-authentications', () => {
  it('count towards the lockout like failed sign-ins and are in the activity log', async () => {
    const { user, token } = await member('guesser@acme.test');
    for (let n = 0; n < 5; n++) expect(code(await t.reauthenticate(token, { password: `guess ${n}` }))).toBe('Unauthorized');
    expect(code(await t.reauthenticate(token))).toBe('AccountLocked');
    await expect(t.login(user.email, PASSWORD)).rejects.toMatchObject({ code: 'AccountLocked' });
    const entries = await t.prisma.auditLogEntry.findMany({ where: { entityId: user.id }, orderBy: { createdAt: 'asc' } });
    expect(entries.filter((entry) => entry.action === 'FailedReauthentication')).toHaveLength(5);
    expect(entries.filter((entry) => entry.action === 'LockAccount')).toHaveLength(1);
    expect(JSON.stringify(entries)).not.toContain('guess ');
    clock.advance(15 * 60_000 + 1);
    const fresh = (await t.login(user.email, PASSWORD, { reauth: false })).token;
    expect(code(await t.reauthenticate(fresh))).toBe('ok');
    expect(await t.prisma.auditLogEntry.count({ where: { entityId: user.id, action: 'Reauthenticate' } })).toBe(1);
  });

  it('hostile values are refused with a clear code, never a server error', async () => {
    const { token } = await member('hostile@acme.test');
    for (const input of [{ password: '' }, { password: 'x'.repeat(10_000) }, { password: PASSWORD, totpCode: '9'.repeat(500) }, { password: '\u0000' }]) {
      const answer = await t.gql('mutation($input: ReauthenticateInput!) { reauthenticate(input: $input) { reauthenticatedUntil } }', { input }, { token });
      expect(['InvalidRequest', 'Unauthorized']).toContain(code(answer));
    }
  });
});

describe('password changes spend pending reset links', () => {
  it('changePassword and the operator reset (which keeps "must change") spend every pending link', async () => {
    const { user, token } = await member('spender@acme.test');
    await t.gql(FORGOT, { email: user.email });
    const first = t.outboxToken(await t.prisma.emailOutbox.findFirstOrThrow({ where: { kind: 'password-reset', toAddress: user.email } }));
    await t.stampReauth(token);
    expect(code(await t.gql(CHANGE_PASSWORD, { current: PASSWORD, next: 'my own new password' }, { token }))).toBe('ok');
    expect(code(await t.gql(RESET, { token: first, password: 'the old link password' }))).toBe('InvalidRequest');

    clock.advance(1000);
    await t.gql(FORGOT, { email: user.email });
    const second = t.outboxToken(await t.prisma.emailOutbox.findFirstOrThrow({ where: { kind: 'password-reset', toAddress: user.email }, orderBy: { createdAt: 'desc' } }));
    await resetPassword({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(null, 'system (cli)'), meta: NO_META }, user.email, 'the operator chose this');
    expect(code(await t.gql(RESET, { token: second, password: 'the old link password' }))).toBe('InvalidRequest');
    expect((await t.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).passwordMustChange).toBe(true);
  });
});

describe('single-use tokens are never stored in clear', () => {
  it('a dump of every column of the email table holds no usable token, before and after delivery', async () => {
    const { token } = await member('dumper@acme.test');
    await t.stampReauth(token);
    const invited = await t.gqlData(INVITE, { email: 'dumped@acme.test', role: 'COMPANY_ADMIN' }, { token });
    const target = await t.seedUser(A.tenantId, { email: 'dumped-reset@acme.test', role: 'ReadOnly' });
    await t.gqlData(SEND_LINK, { id: target.id }, { token });
    await t.gql(FORGOT, { email: target.email });
    const rows = await t.prisma.emailOutbox.findMany({ where: { kind: { in: ['invitation', 'password-reset'] } } });
    const tokens = rows.map((row) => t.outboxToken(row));
    expect(tokens.length).toBeGreaterThanOrEqual(3);

    const dump = async () => JSON.stringify(await t.prisma.$queryRawUnsafe('SELECT * FROM email_outbox'));
    const tryEveryCandidate = async (text: string) => {
      const candidates = [...new Set(text.match(/kf[ir]_[A-Za-z0-9_-]+/g) ?? [])];
      for (const candidate of candidates) {
        const reset = await t.gql('query($token: String!) { passwordReset(token: $token) { email } }', { token: candidate });
        const invitation = await t.gql('query($token: String!) { invitation(token: $token) { email } }', { token: candidate });
        expect([candidate, reset.data?.passwordReset, invitation.data?.invitation]).toEqual([candidate, null, null]);
      }
    };
    const before = await dump();
    for (const single of tokens) expect(before).not.toContain(single);
    await tryEveryCandidate(before);
    expect(invited.inviteUser.invitation.id).toBeTruthy();

    // Delivery renders the token into the message it hands the provider, then drops the sealed value.
    const sent: string[] = [];
    const provider: MailTransport = {
      name: 'postmark',
      send: async (messages) => (sent.push(...messages.map((message) => message.text)), messages.map((message) => ({ ok: true as const, messageId: `pm-${message.id}` }))),
      findDelivered: async () => null,
    };
    await deliverDueEmails({ db: t.deps.db, now: clock.now(), secrets: t.deps.secrets }, provider);
    for (const single of tokens) expect(sent.some((text) => text.includes(single))).toBe(true);
    const after = await dump();
    for (const single of tokens) expect(after).not.toContain(single);
    await tryEveryCandidate(after);
    expect(await t.prisma.emailOutbox.count({ where: { kind: { in: ['invitation', 'password-reset'] }, NOT: { sealedToken: null } } })).toBe(0);
  });
});
