import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor, NO_META } from '../server/src/services/auth/actor.js';
import { currentTotp } from '../server/src/services/auth/mfa.js';
import { resetPassword } from '../server/src/services/auth/recovery.js';
import { renderToken } from '../server/src/services/notifications/sealed-token.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { PASSWORD, seedTwoTenants, type SeededTenant } from './support/tenants.js';

// Account recovery without downtime (docs/integrate/management-api.md "Management API: accounts and access", Recovery): "Forgot password?",
// an admin's unlock / MFA reset / reset link for a member, a password someone else set, and redacted previews.

const FORGOT = 'mutation($email: String!) { requestPasswordReset(input: { email: $email }) { message emailDeliveryMode } }';
const RESET =
  'mutation($token: String!, $password: String!) { resetPassword(input: { token: $token, password: $password }) { __typename ... on LoginSuccess { accessToken user { email } } } }';
const PREVIEW = 'query($token: String!) { passwordReset(token: $token) { email expiresAt passwordMustChange } }';
const LOGIN = 'mutation($email: String!, $password: String!) { login(input: { email: $email, password: $password }) { __typename ... on LoginSuccess { accessToken } ... on PasswordChangeRequired { resetToken expiresAt } } }';
const UNLOCK = 'mutation($id: ID!) { unlockUser(input: { id: $id }) { wasLocked user { id lockedUntil } } }';
const RESET_MFA = 'mutation($id: ID!) { resetUserMfa(input: { id: $id }) { mfaWasEnabled user { id mfaEnabled } } }';
const SEND_LINK = 'mutation($id: ID!) { sendPasswordResetLink(input: { id: $id }) { user { id email } } }';
const NEW_PASSWORD = 'a freshly chosen password';

let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '1000' } });
  ({ A, B } = await seedTwoTenants(t, { catalog: false }));
});
afterAll(async () => {
  await t?.close();
});

/** The newest password-reset email to an address, and the token of its link. */
async function resetEmailTo(address: string) {
  const email = await t.prisma.emailOutbox.findFirstOrThrow({ where: { kind: 'password-reset', toAddress: address }, orderBy: { createdAt: 'desc' } });
  // The stored body holds a placeholder; the token is rendered in at send time from its sealed form.
  expect(email.text).toContain(`${t.config.publicUrl}/reset-password#token=kfr_REDACTED`);
  const token = new RegExp(`${t.config.publicUrl}/reset-password#token=(kfr_[A-Za-z0-9_-]{43})\\b`).exec(t.outboxText(email))?.[1];
  expect(token).toBeDefined();
  return { email, token: token! };
}

async function failSignIns(email: string, times: number) {
  for (let n = 0; n < times; n++) await t.gql(LOGIN, { email, password: 'not the password' });
}

const operator = () => ({ db: t.deps.db, secrets: t.deps.secrets, now: t.clock.now(), actor: systemActor(null, 'system (cli)'), meta: NO_META });

describe('forgot password', () => {
  it('answers the same for known, unknown and deactivated addresses; only a known active one gets a link', async () => {
    const member = await t.seedUser(A.tenantId, { email: 'forgetful@acme.test', role: 'ReadOnly' });
    const gone = await t.seedUser(A.tenantId, { email: 'gone@acme.test', role: 'ReadOnly' });
    await t.prisma.user.update({ where: { id: gone.id }, data: { deactivatedAt: t.clock.now() } });
    const before = await t.prisma.emailOutbox.count();
    const known = await t.gql(FORGOT, { email: 'Forgetful@Acme.test' });
    const unknown = await t.gql(FORGOT, { email: 'nobody@acme.test' });
    const deactivated = await t.gql(FORGOT, { email: 'gone@acme.test' });
    expect(known.errors).toBeUndefined();
    for (const [response, address] of [[known, 'forgetful@acme.test'], [unknown, 'nobody@acme.test'], [deactivated, 'gone@acme.test']] as const) {
      expect(response.status).toBe(200);
      // No mail provider here: the answer says where the link is kept, not that it was emailed.
      expect(response.data.requestPasswordReset).toEqual({
        message: `If ${address} belongs to an account, a link to choose a new password is kept in this server's email outbox: no mail provider is configured, so nothing is emailed. It works once, within 30 minutes.`,
        emailDeliveryMode: 'DEVELOPMENT',
      });
    }
    expect(await t.prisma.emailOutbox.count()).toBe(before + 1);
    const { email, token } = await resetEmailTo(member.email);
    expect(email.tenantId).toBe(A.tenantId);
    expect(email.html).toContain(`${t.config.publicUrl}/reset-password#token=kfr_REDACTED`);
    expect(renderToken(email.html, token)).toContain(`${t.config.publicUrl}/reset-password#token=${token}`);
    // Only a digest is kept (and the email's sealed form); the activity log names the request without the token.
    const row = await t.prisma.passwordReset.findFirstOrThrow({ where: { userId: member.id } });
    expect(row.tokenDigest).toBe(t.deps.secrets.digest(`password-reset:${token}`));
    expect(row.expiresAt.getTime() - t.clock.now().getTime()).toBe(30 * 60_000);
    const audit = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { action: 'SendPasswordResetLink', entityId: member.id } });
    expect(audit.details).toEqual({ via: 'forgot-password' });
    expect(JSON.stringify(audit)).not.toContain(token);
    expect(JSON.stringify(await t.prisma.passwordReset.findMany())).not.toContain(token);
    expect(t.logs.join('')).not.toContain(token);
  });

  it('the link works once: it sets the password, signs in, ends every other session and lifts the lock', async () => {
    const member = await t.seedUser(A.tenantId, { email: 'locked-out@acme.test', role: 'CompanyAdmin' });
    const old = await t.login(member.email, PASSWORD);
    await failSignIns(member.email, 5);
    await expect(t.login(member.email, PASSWORD)).rejects.toMatchObject({ code: 'AccountLocked' });
    await t.gql(FORGOT, { email: member.email });
    const { token } = await resetEmailTo(member.email);
    expect((await t.gql(PREVIEW, { token })).data.passwordReset).toMatchObject({ email: member.email, passwordMustChange: false });
    expect((await t.gql(RESET, { token, password: 'short' })).errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { password: expect.any(String) } });
    const reset = await t.gql(RESET, { token, password: NEW_PASSWORD });
    expect(reset.errors).toBeUndefined();
    expect(reset.data.resetPassword).toMatchObject({ __typename: 'LoginSuccess', user: { email: member.email } });
    expect(reset.setCookie).toContain('kf_refresh=');
    // Every earlier session ended: the old access token and refresh cookie are refused.
    expect((await t.gql('{ me { id } }', {}, { token: old.token })).status).toBe(401);
    expect((await t.gql('mutation { refreshSession { accessToken } }', {}, { cookie: old.cookie })).errors?.[0].extensions?.code).toBe('Unauthorized');
    expect((await t.gql('{ me { email } }', {}, { token: reset.data.resetPassword.accessToken })).data.me.email).toBe(member.email);
    // Used: the link does nothing twice; the new password signs in, the old one does not.
    expect((await t.gql(RESET, { token, password: 'yet another password' })).errors?.[0].extensions?.code).toBe('InvalidRequest');
    expect((await t.gql(PREVIEW, { token })).data.passwordReset).toBeNull();
    expect((await t.login(member.email, NEW_PASSWORD)).status).toBe('SUCCESS');
    await expect(t.login(member.email, PASSWORD)).rejects.toMatchObject({ code: 'Unauthorized' });
    const audit = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { action: 'ResetPassword', entityId: member.id } });
    expect(audit).toMatchObject({ actor: member.email, details: { via: 'forgot-password' } });
  });

  it('with MFA on, the reset sets the password and the sign-in still asks for the second factor', async () => {
    const member = await t.seedUser(A.tenantId, { email: 'twofactor@acme.test', role: 'ReadOnly' });
    const { token } = await t.login(member.email, PASSWORD);
    const secret = (await t.gql('mutation { startMfaEnrollment { secret } }', {}, { token })).data.startMfaEnrollment.secret;
    await t.gql('mutation($code: String!) { confirmMfaEnrollment(input: { code: $code }) { backupCodes } }', { code: currentTotp(secret, t.clock.now()) }, { token });
    await t.gql(FORGOT, { email: member.email });
    const reset = await t.gql('mutation($token: String!, $password: String!) { resetPassword(input: { token: $token, password: $password }) { __typename } }', { token: (await resetEmailTo(member.email)).token, password: NEW_PASSWORD });
    expect(reset.data.resetPassword.__typename).toBe('MfaRequired');
    // No session before the second factor: no refresh cookie, no live refresh token.
    expect(reset.setCookie ?? '').not.toMatch(/kf_refresh=[^;]/);
    expect(await t.prisma.refreshToken.count({ where: { userId: member.id, revokedAt: null } })).toBe(0);
  });
});

describe('forgot password with a mail provider', () => {
  it('says the link is on its way', async () => {
    const mailing = await startTestApp({ env: { POSTMARK_SERVER_TOKEN: 'postmark-token', MAIL_FROM: 'licenses@acme.test', POSTMARK_API_URL: 'http://127.0.0.1:9' } });
    try {
      const response = await mailing.gql(FORGOT, { email: 'nobody@acme.test' });
      expect(response.data.requestPasswordReset).toEqual({
        message: 'If nobody@acme.test belongs to an account, a link to choose a new password is on its way. It works once, within 30 minutes.',
        emailDeliveryMode: 'POSTMARK',
      });
    } finally {
      await mailing.close();
    }
  });
});

describe('rate limits', () => {
  it('requests are limited like sign-in (per address and per client)', async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '3' } });
    try {
      const codes = [];
      for (let n = 0; n < 5; n++) codes.push((await limited.gql(FORGOT, { email: 'someone@acme.test' })).errors?.[0].extensions?.code ?? 'ok');
      expect(codes).toEqual(['ok', 'ok', 'ok', 'RateLimited', 'RateLimited']);
      const resets = [];
      for (let n = 0; n < 5; n++) resets.push((await limited.gql(RESET, { token: 'kfr_guess', password: NEW_PASSWORD })).errors?.[0].extensions?.code);
      expect(resets).toEqual(['InvalidRequest', 'InvalidRequest', 'InvalidRequest', 'RateLimited', 'RateLimited']);
    } finally {
      await limited.close();
    }
  });
});

describe('admins recover their members from the Team page', () => {
  it('unlocks a locked member; audited; lockedUntil shows the lock', async () => {
    const member = await t.seedUser(A.tenantId, { email: 'unlock-me@acme.test', role: 'ReadOnly' });
    await failSignIns(member.email, 5);
    const team = await t.gql('{ users { nodes { email lockedUntil } } }', {}, { token: A.admin.token });
    expect(team.data.users.nodes.find((user: { email: string }) => user.email === member.email).lockedUntil).toBe(new Date(t.clock.now().getTime() + 15 * 60_000).toISOString());
    const unlocked = await t.gql(UNLOCK, { id: member.id }, { token: A.admin.token });
    expect(unlocked.data.unlockUser).toEqual({ wasLocked: true, user: { id: member.id, lockedUntil: null } });
    expect((await t.login(member.email, PASSWORD)).status).toBe('SUCCESS');
    const audit = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { action: 'UnlockAccount', entityId: member.id } });
    expect(audit).toMatchObject({ actor: A.admin.email, details: { by: 'admin' } });
  });

  it('an unlock or an MFA reset with nothing to undo answers so and writes no activity-log entry', async () => {
    const member = await t.seedUser(A.tenantId, { email: 'nothing-to-do@acme.test', role: 'ReadOnly' });
    expect((await t.gql(UNLOCK, { id: member.id }, { token: A.admin.token })).data.unlockUser.wasLocked).toBe(false);
    expect((await t.gql(RESET_MFA, { id: member.id }, { token: A.admin.token })).data.resetUserMfa.mfaWasEnabled).toBe(false);
    expect(await t.prisma.auditLogEntry.count({ where: { entityId: member.id, action: { in: ['UnlockAccount', 'DisableMfa'] } } })).toBe(0);
  });

  it("resets a member's MFA (not one's own) and sends a member a reset link; audited", async () => {
    const member = await t.seedUser(A.tenantId, { email: 'lost-phone@acme.test', role: 'ReadOnly' });
    const { token } = await t.login(member.email, PASSWORD);
    const secret = (await t.gql('mutation { startMfaEnrollment { secret } }', {}, { token })).data.startMfaEnrollment.secret;
    await t.gql('mutation($code: String!) { confirmMfaEnrollment(input: { code: $code }) { backupCodes } }', { code: currentTotp(secret, t.clock.now()) }, { token });
    expect((await t.login(member.email, PASSWORD)).status).toBe('MFA_REQUIRED');
    expect((await t.gql(RESET_MFA, { id: member.id }, { token: A.admin.token })).data.resetUserMfa).toEqual({ mfaWasEnabled: true, user: { id: member.id, mfaEnabled: false } });
    expect((await t.login(member.email, PASSWORD)).status).toBe('SUCCESS');
    expect(await t.prisma.backupCode.count({ where: { userId: member.id } })).toBe(0);
    expect(await t.prisma.auditLogEntry.findFirst({ where: { action: 'DisableMfa', entityId: member.id, actor: A.admin.email } })).not.toBeNull();
    expect((await t.gql(RESET_MFA, { id: A.admin.userId }, { token: A.admin.token })).errors?.[0].extensions?.code).toBe('Conflict');

    expect((await t.gql(SEND_LINK, { id: member.id }, { token: A.admin.token })).data.sendPasswordResetLink.user.email).toBe(member.email);
    const { email, token: link } = await resetEmailTo(member.email);
    expect(email.text).toContain(`${A.admin.email}, an admin of Acme Corp, sent you a link`);
    expect((await t.gql(RESET, { token: link, password: NEW_PASSWORD })).data.resetPassword.__typename).toBe('LoginSuccess');
    expect(await t.prisma.auditLogEntry.findFirst({ where: { action: 'SendPasswordResetLink', entityId: member.id, actor: A.admin.email, details: { equals: { by: 'admin' } } } })).not.toBeNull();
  });

  it('not across companies, not by read-only members or keys', async () => {
    const member = await t.seedUser(A.tenantId, { email: 'guarded@acme.test', role: 'ReadOnly' });
    for (const mutation of [UNLOCK, RESET_MFA, SEND_LINK]) {
      expect((await t.gql(mutation, { id: member.id }, { token: B.admin.token })).errors?.[0].extensions?.code).toBe('NotFound');
      expect((await t.gql(mutation, { id: member.id }, { apiKey: B.adminKey.key })).errors?.[0].extensions?.code).toBe('NotFound');
      expect((await t.gql(mutation, { id: member.id }, { token: A.readOnly.token })).errors?.[0].extensions?.code).toBe('Forbidden');
    }
    // Keys never act on account security, whatever their role.
    for (const mutation of [RESET_MFA, SEND_LINK]) {
      expect((await t.gql(mutation, { id: member.id }, { apiKey: A.adminKey.key })).errors?.[0].extensions?.code).toBe('Forbidden');
    }
    expect(await t.prisma.emailOutbox.count({ where: { toAddress: member.email } })).toBe(0);
    expect(await t.prisma.auditLogEntry.count({ where: { entityId: member.id, action: { in: ['UnlockAccount', 'DisableMfa', 'SendPasswordResetLink'] } } })).toBe(0);
  });

  it("the last admin's own recovery still works: locked out, 'Forgot password?' lets them back in", async () => {
    const solo = await startTestApp();
    try {
      const { user } = await solo.setupAdmin({ email: 'solo@acme.test' });
      for (let n = 0; n < 5; n++) await solo.gql(LOGIN, { email: user.email, password: 'wrong password!' });
      await expect(solo.login(user.email)).rejects.toMatchObject({ code: 'AccountLocked' });
      await solo.gql(FORGOT, { email: user.email });
      const email = await solo.prisma.emailOutbox.findFirstOrThrow({ where: { kind: 'password-reset' } });
      const token = /#token=(kfr_[\w-]+)/.exec(solo.outboxText(email))![1];
      const reset = await solo.gql(RESET, { token, password: NEW_PASSWORD });
      expect(reset.data.resetPassword.__typename).toBe('LoginSuccess');
      expect((await solo.gql('{ users { nodes { email role } } }', {}, { token: reset.data.resetPassword.accessToken })).data.users.nodes).toEqual([{ email: user.email, role: 'COMPANY_ADMIN' }]);
    } finally {
      await solo.close();
    }
  });
});

describe('a password someone else set must be changed at the next sign-in', () => {
  it('the operator reset answers PasswordChangeRequired (no session) until the user chose their own', async () => {
    const member = await t.seedUser(A.tenantId, { email: 'reset-by-operator@acme.test', role: 'ReadOnly' });
    const { generatedPassword } = await resetPassword(operator(), member.email);
    const first = await t.gql(LOGIN, { email: member.email, password: generatedPassword! });
    expect(first.data.login.__typename).toBe('PasswordChangeRequired');
    expect(first.setCookie ?? '').not.toMatch(/kf_refresh=[^;]/);
    expect(await t.prisma.refreshToken.count({ where: { userId: member.id, revokedAt: null } })).toBe(0);
    const resetToken = first.data.login.resetToken as string;
    expect(Date.parse(first.data.login.expiresAt) - t.clock.now().getTime()).toBe(15 * 60_000);
    expect((await t.gql(PREVIEW, { token: resetToken })).data.passwordReset).toMatchObject({ email: member.email, passwordMustChange: true });
    // A wrong password gets no such token.
    expect((await t.gql(LOGIN, { email: member.email, password: 'not the password' })).errors?.[0].extensions?.code).toBe('Unauthorized');
    const chosen = await t.gql(RESET, { token: resetToken, password: NEW_PASSWORD });
    expect(chosen.data.resetPassword.__typename).toBe('LoginSuccess');
    expect((await t.gql(LOGIN, { email: member.email, password: NEW_PASSWORD })).data.login.__typename).toBe('LoginSuccess');
    expect((await t.prisma.user.findUniqueOrThrow({ where: { id: member.id } })).passwordMustChange).toBe(false);
    expect(await t.prisma.auditLogEntry.findFirst({ where: { action: 'ResetPassword', entityId: member.id, details: { equals: { via: 'must-change' } } } })).not.toBeNull();
  });
});

describe('outbox previews redact single-use tokens', () => {
  it("an invitation's and a reset link's token are redacted in every preview, the addressee's included; only the sealed form is stored", async () => {
    const invited = await t.gql('mutation { inviteUser(input: { email: "newbie@acme.test", role: READ_ONLY }) { invitation { id } } }', {}, { token: A.admin.token });
    const id = invited.data.inviteUser.invitation.id;
    const stored = await t.prisma.emailOutbox.findFirstOrThrow({ where: { idempotencyKey: `invitation:${id}` } });
    const token = t.outboxToken(stored);
    const preview = async (auth: { token?: string; apiKey?: string }) =>
      (await t.gql('{ emails(first: 100) { nodes { id to textBody htmlBody } } }', {}, auth)).data.emails.nodes as { id: string; to: string; textBody: string; htmlBody: string }[];
    for (const auth of [{ token: A.admin.token }, { apiKey: A.adminKey.key }]) {
      const shown = (await preview(auth)).find((email) => email.id === stored.id)!;
      expect(shown.textBody).toContain('/accept-invite#token=kfi_REDACTED');
      expect(shown.htmlBody).toContain('#token=kfi_REDACTED');
      expect(shown.textBody + shown.htmlBody).not.toContain(token);
    }
    expect(stored.text + stored.html).not.toContain(token);
    // A reset link sent to the viewer travels by email only: their own preview is redacted too.
    await t.gql(FORGOT, { email: A.admin.email });
    const own = await resetEmailTo(A.admin.email);
    const mine = (await preview({ token: A.admin.token })).find((email) => email.id === own.email.id)!;
    expect(mine.textBody).toContain('/reset-password#token=kfr_REDACTED');
    expect(mine.textBody + mine.htmlBody).not.toContain(own.token);
  });
});

// Last: it moves the clock past every access token of the file.
describe('lifetime', () => {
  it('a link expires after 30 minutes, and a newer link spends the older one', async () => {
    const member = await t.seedUser(A.tenantId, { email: 'slow@acme.test', role: 'ReadOnly' });
    await t.gql(FORGOT, { email: member.email });
    const first = (await resetEmailTo(member.email)).token;
    t.clock.advance(1000);
    await t.gql(FORGOT, { email: member.email });
    const second = (await resetEmailTo(member.email)).token;
    expect(second).not.toBe(first);
    expect((await t.gql(RESET, { token: first, password: NEW_PASSWORD })).errors?.[0].extensions?.code).toBe('InvalidRequest');
    t.clock.advance(30 * 60_000);
    expect((await t.gql(PREVIEW, { token: second })).data.passwordReset).toBeNull();
    expect((await t.gql(RESET, { token: second, password: NEW_PASSWORD })).errors?.[0].extensions?.code).toBe('InvalidRequest');
    expect((await t.login(member.email, PASSWORD)).status).toBe('SUCCESS');
  });
});
