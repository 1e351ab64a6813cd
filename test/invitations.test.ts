import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MailTransport, OutboxMessage } from '../server/src/services/notifications/delivery.js';
import { DAY, startTestApp, type TestApp } from './support/harness.js';
import { seedTwoTenants } from './support/tenants.js';
import { renderToken } from '../server/src/services/notifications/sealed-token.js';

// Invite a member by email: a one-time link (URL fragment) whose token is stored only as an HMAC.

const INVITE = 'mutation($email: String!, $role: Role!, $name: String) { inviteUser(input: { email: $email, role: $role, name: $name }) { invitation { id email role name expiresAt invitedBy } } }';
const REVOKE = 'mutation($id: ID!) { revokeInvitation(input: { id: $id }) { invitation { id } } }';
const ACCEPT = 'mutation($token: String!, $password: String!, $name: String) { acceptInvitation(input: { token: $token, password: $password, name: $name }) { __typename accessToken user { email role name } } }';
const PREVIEW = 'query($token: String!) { invitation(token: $token) { email companyName role expiresAt } }';
const LIST = '{ invitations { nodes { id email role } } }';
const PASSWORD = 'a brand new password';

let t: TestApp;
let admin: { token: string; tenantId: string };
let reader: { token: string };
let otherAdmin: { token: string };

beforeAll(async () => {
  t = await startTestApp();
  const { A, B } = await seedTwoTenants(t, { catalog: false });
  admin = { token: A.admin.token, tenantId: A.tenantId };
  reader = { token: A.readOnly.token };
  otherAdmin = { token: B.admin.token };
});
afterAll(async () => {
  await t?.close();
});

async function invite(email: string, role: 'COMPANY_ADMIN' | 'READ_ONLY' = 'READ_ONLY', name?: string) {
  const response = await t.gql(INVITE, { email, role, name }, { token: admin.token });
  expect(response.errors).toBeUndefined();
  const invitation = response.data.inviteUser.invitation as { id: string; email: string; expiresAt: string };
  const emails = await t.prisma.emailOutbox.findMany({ where: { kind: 'invitation', idempotencyKey: `invitation:${invitation.id}` } });
  expect(emails).toHaveLength(1);
  // Stored with a placeholder; the token is sealed beside it and rendered in when the email is sent.
  expect(emails[0].text).toContain(`${t.config.publicUrl}/accept-invite#token=kfi_REDACTED`);
  expect(t.outboxText(emails[0])).toMatch(new RegExp(`${t.config.publicUrl}/accept-invite#token=kfi_[A-Za-z0-9_-]{43}\\b`));
  const token = /accept-invite#token=(kfi_[A-Za-z0-9_-]{43})/.exec(t.outboxText(emails[0]))?.[1];
  return { invitation, email: emails[0], token: token! };
}

describe('invitations', () => {
  it('emails a one-time link to the invitee; the database keeps no plaintext token', async () => {
    const { invitation, email, token } = await invite('Bob@Acme.test', 'COMPANY_ADMIN', 'Bob');
    expect(invitation).toMatchObject({ email: 'bob@acme.test', role: 'COMPANY_ADMIN', name: 'Bob', invitedBy: 'admin@acme.test' });
    expect(Date.parse(invitation.expiresAt) - t.clock.now().getTime()).toBe(7 * DAY);
    expect(email.toAddress).toBe('bob@acme.test');
    expect(email.tenantId).toBe(admin.tenantId);
    const link = `${t.config.publicUrl}/accept-invite#token=${token}`;
    expect(t.outboxText(email)).toContain(link);
    expect(renderToken(email.html, token)).toContain(link);
    expect(JSON.stringify(email)).not.toContain(token);
    expect(email.html).toContain('Acme Corp');
    expect(email.text).toContain('admin@acme.test invited you');
    const row = await t.prisma.invitation.findUniqueOrThrow({ where: { id: invitation.id } });
    expect(JSON.stringify(row)).not.toContain(token);
    expect(row.tokenDigest).toBe(t.deps.secrets.digest(`invite:${token}`));
    const audit = await t.prisma.auditLogEntry.findFirst({ where: { action: 'InviteUser', entityId: invitation.id } });
    expect(audit).not.toBeNull();
    expect(JSON.stringify(audit)).not.toContain(token);

    const listed = await t.gql(LIST, {}, { token: reader.token });
    expect(listed.data.invitations.nodes.map((i: { email: string }) => i.email)).toContain('bob@acme.test');
    const preview = await t.gql(PREVIEW, { token });
    expect(preview.data.invitation).toMatchObject({ email: 'bob@acme.test', companyName: 'Acme Corp', role: 'COMPANY_ADMIN' });

    const accepted = await t.gql(ACCEPT, { token, password: PASSWORD });
    expect(accepted.errors).toBeUndefined();
    expect(accepted.data.acceptInvitation).toMatchObject({ __typename: 'AcceptInvitationPayload', user: { email: 'bob@acme.test', role: 'COMPANY_ADMIN', name: 'Bob' } });
    expect(accepted.setCookie).toContain('kf_refresh=');
    const me = await t.gql('{ me { email } }', {}, { token: accepted.data.acceptInvitation.accessToken });
    expect(me.data.me.email).toBe('bob@acme.test');
    const user = await t.prisma.user.findUniqueOrThrow({ where: { email: 'bob@acme.test' } });
    expect(user).toMatchObject({ tenantId: admin.tenantId, role: 'CompanyAdmin' });
    expect((await t.login('bob@acme.test', PASSWORD)).status).toBe('SUCCESS');
    const created = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { action: 'CreateUser', entityId: user.id } });
    expect(created).toMatchObject({ tenantId: admin.tenantId, actorId: user.id });
    expect(created.details).toMatchObject({ via: 'invitation' });

    const again = await t.gql(ACCEPT, { token, password: PASSWORD });
    expect(again.errors?.[0].extensions?.code).toBe('InvalidRequest');
    expect(again.errors?.[0].message).toContain('invalid, used or expired');
    expect((await t.gql(PREVIEW, { token })).data.invitation).toBeNull();
    expect((await t.gql(LIST, {}, { token: admin.token })).data.invitations.nodes.map((i: { email: string }) => i.email)).not.toContain('bob@acme.test');
  });

  it('accepting emits a user.created webhook event, as the other user events are', async () => {
    const endpoint = await t.prisma.webhookEndpoint.create({ data: { tenantId: admin.tenantId, url: 'https://hooks.acme.test/keyforge', eventTypes: ['user.created'], secretEncrypted: t.deps.secrets.encrypt('whsec_test') } });
    try {
      const { token } = await invite('webhooked@acme.test', 'READ_ONLY', 'Wendy');
      expect((await t.gql(ACCEPT, { token, password: PASSWORD })).errors).toBeUndefined();
      const user = await t.prisma.user.findUniqueOrThrow({ where: { email: 'webhooked@acme.test' } });
      const events = await t.prisma.webhookEvent.findMany({ where: { tenantId: admin.tenantId, type: 'user.created' } });
      expect(events.map((event) => JSON.parse(event.body).data)).toEqual([{ userId: user.id, email: 'webhooked@acme.test', name: 'Wendy', role: 'ReadOnly' }]);
      expect(await t.prisma.webhookDelivery.count({ where: { endpointId: endpoint.id } })).toBe(1);
    } finally {
      await t.prisma.webhookDelivery.deleteMany({ where: { endpointId: endpoint.id } });
      await t.prisma.webhookEndpoint.delete({ where: { id: endpoint.id } });
    }
  });

  it('two concurrent accepts create exactly one user', async () => {
    const { token } = await invite('carol@acme.test');
    const results = await Promise.all([0, 1, 2].map(() => t.gql(ACCEPT, { token, password: PASSWORD })));
    expect(results.filter((r) => !r.errors)).toHaveLength(1);
    expect(results.filter((r) => r.errors?.[0].extensions?.code === 'InvalidRequest')).toHaveLength(2);
    expect(await t.prisma.user.count({ where: { email: 'carol@acme.test' } })).toBe(1);
  });

  it('an expired link is refused', async () => {
    const { token } = await invite('dave@acme.test');
    t.clock.advance(8 * DAY);
    try {
      expect((await t.gql(PREVIEW, { token })).data.invitation).toBeNull();
      const response = await t.gql(ACCEPT, { token, password: PASSWORD });
      expect(response.errors?.[0].extensions?.code).toBe('InvalidRequest');
      expect(await t.prisma.user.count({ where: { email: 'dave@acme.test' } })).toBe(0);
    } finally {
      t.clock.advance(-8 * DAY);
    }
  });

  it('a revoked link, or one replaced by a new invitation, is refused', async () => {
    const first = await invite('erin@acme.test');
    const second = await invite('erin@acme.test');
    expect((await t.gql(ACCEPT, { token: first.token, password: PASSWORD })).errors?.[0].extensions?.code).toBe('InvalidRequest');
    const revoked = await t.gql(REVOKE, { id: second.invitation.id }, { token: admin.token });
    expect(revoked.errors).toBeUndefined();
    expect(await t.prisma.auditLogEntry.count({ where: { action: 'RevokeInvitation', entityId: second.invitation.id } })).toBe(1);
    expect((await t.gql(PREVIEW, { token: second.token })).data.invitation).toBeNull();
    expect((await t.gql(ACCEPT, { token: second.token, password: PASSWORD })).errors?.[0].extensions?.code).toBe('InvalidRequest');
    expect(await t.prisma.user.count({ where: { email: 'erin@acme.test' } })).toBe(0);
  });

  it('a read-only member cannot invite or revoke; another tenant’s admin cannot revoke', async () => {
    const { invitation, token } = await invite('frank@acme.test');
    expect((await t.gql(INVITE, { email: 'x@acme.test', role: 'READ_ONLY' }, { token: reader.token })).errors?.[0].extensions?.code).toBe('Forbidden');
    expect((await t.gql(REVOKE, { id: invitation.id }, { token: reader.token })).errors?.[0].extensions?.code).toBe('Forbidden');
    expect((await t.gql(REVOKE, { id: invitation.id }, { token: otherAdmin.token })).errors?.[0].extensions?.code).toBe('NotFound');
    expect((await t.gql(LIST, {}, { token: otherAdmin.token })).data.invitations.nodes).toEqual([]);
    expect((await t.gql(PREVIEW, { token })).data.invitation).not.toBeNull();
    expect(await t.prisma.invitation.count({ where: { email: 'x@acme.test' } })).toBe(0);
  });

  it('an existing user’s email is a conflict; a weak password is refused and the link stays usable', async () => {
    const conflict = await t.gql(INVITE, { email: 'Viewer@acme.test', role: 'READ_ONLY' }, { token: admin.token });
    expect(conflict.errors?.[0].extensions?.code).toBe('Conflict');
    const { token } = await invite('gina@acme.test');
    const weak = await t.gql(ACCEPT, { token, password: 'short' });
    expect(weak.errors?.[0].extensions?.code).toBe('InvalidRequest');
    expect((await t.gql(PREVIEW, { token })).data.invitation).not.toBeNull();
  });

  it("another company's users are not revealed: inviting their address answers like any address; only the invitee learns, on accepting", async () => {
    // admin@globex.test has an account at the other company; ghost@nowhere.test has none anywhere.
    const answers = [];
    for (const email of ['admin@globex.test', 'ghost@nowhere.test']) {
      const response = await t.gql(INVITE, { email, role: 'READ_ONLY' }, { token: admin.token });
      expect(response.errors).toBeUndefined();
      const { id, expiresAt, ...rest } = response.data.inviteUser.invitation;
      answers.push({ ...rest, email: rest.email.replace(/@.*/, ''), id: typeof id, expiresAt: typeof expiresAt });
    }
    expect(answers[0]).toEqual({ ...answers[1], email: 'admin' });
    const outbox = await t.prisma.emailOutbox.findFirstOrThrow({ where: { kind: 'invitation', toAddress: 'admin@globex.test' } });
    const token = t.outboxToken(outbox);
    const accepted = await t.gql(ACCEPT, { token, password: PASSWORD });
    expect(accepted.errors?.[0]).toMatchObject({ message: 'A user with this email already exists: sign in instead.', extensions: { code: 'Conflict' } });
    expect(await t.prisma.user.count({ where: { email: 'admin@globex.test' } })).toBe(1);
    // Adding an address with a chosen password is the operator's tool only: no mutation offers it to a company.
    const direct = await t.gql('mutation { createUser(input: { email: "admin@globex.test", password: "0123456789ab", role: READ_ONLY }) { user { id } } }', {}, { token: admin.token });
    expect(direct.errors?.[0].extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED'); // no such field, whatever the address
    expect(direct.errors?.[0].message).not.toContain('globex');
  });

  it('no token reaches the logs', async () => {
    const tokens = (await t.prisma.emailOutbox.findMany({ where: { kind: 'invitation' } })).map((e) => t.outboxToken(e));
    expect(tokens.length).toBeGreaterThan(5);
    const logs = t.logs.join('');
    expect(logs.length).toBeGreaterThan(0);
    for (const token of tokens) expect(logs).not.toContain(token);
  });

  it('is delivered at once when a mail transport runs in the process', async () => {
    const sent: OutboxMessage[] = [];
    const transport: MailTransport = {
      name: 'development',
      send: async (messages) => {
        sent.push(...messages);
        return messages.map((message) => ({ ok: true as const, messageId: `msg-${message.id}` }));
      },
      findDelivered: async () => null,
    };
    t.deps.jobs = { transport } as unknown as typeof t.deps.jobs;
    try {
      const { invitation, token } = await invite('henry@acme.test');
      const mine = sent.filter((message) => message.to === 'henry@acme.test');
      expect(mine).toHaveLength(1);
      expect(mine[0]).toMatchObject({ kind: 'invitation' });
      expect(mine[0].text).toContain(`#token=${token}`);
      const row = await t.prisma.emailOutbox.findFirstOrThrow({ where: { idempotencyKey: `invitation:${invitation.id}` } });
      expect(row.status).toBe('sent');
    } finally {
      t.deps.jobs = undefined;
    }
  });
});
