import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTEMPT_CHECK_LEASE_MS, MAX_FAILED_LOGINS, admitAttempt } from '../server/src/services/auth/lockout.js';
import { startTestApp, TestClock, type TestApp } from './support/harness.js';
import { PASSWORD, seedTwoTenants, type SeededTenant } from './support/tenants.js';

// Concurrent sign-in steps over real HTTP GraphQL (docs/security.md "Lockout"): a right password never counts
// towards a lockout, however many arrive at once; more concurrent checks of one address than the lockout allows are
// answered RateLimited (HTTP 429, Retry-After), never AccountLocked; and no interleaving with other writers of the
// company's activity log (createWebhookEndpoint) ends in a deadlock or an internal error.

const CREATE_HOOK = 'mutation($url: String!) { createWebhookEndpoint(input: { url: $url }) { endpoint { id } } }';
const DELETE_HOOK = 'mutation($id: ID!) { deleteWebhookEndpoint(input: { id: $id }) { endpoint { id } } }';
const LOGIN = 'mutation($input: LoginInput!) { login(input: $input) { __typename } }';
const SET_PREFIX = 'mutation($prefix: String!) { updateCompanySettings(input: { keyPrefix: $prefix }) { company { keyPrefix } } }';

type Answer = { status: number; errors?: { message: string; extensions?: { code?: string } }[] };
const code = (answer: Answer) => answer.errors?.[0]?.extensions?.code ?? (answer.status === 200 ? 'ok' : `HTTP ${answer.status}`);

function tally(answers: Answer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const answer of answers) counts[code(answer)] = (counts[code(answer)] ?? 0) + 1;
  return counts;
}

/** Every answer is one of `allowed`; a RateLimited one is an HTTP 429 with Retry-After. */
function expectOnly(answers: (Answer & { headers?: Headers })[], allowed: string[]) {
  expect(Object.keys(tally(answers)).filter((key) => !allowed.includes(key)), JSON.stringify(tally(answers))).toEqual([]);
  for (const answer of answers.filter((one) => code(one) === 'RateLimited')) {
    expect(answer.status).toBe(429);
    expect(Number(answer.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
  }
}

/** The server's log says nothing of a deadlock or an unhandled error. */
function expectCleanLog(t: TestApp, from: number) {
  const lines = t.logs.slice(from).filter((line) => /deadlock|unhandled error/i.test(line));
  expect(lines.map((line) => line.slice(0, 600))).toEqual([]);
}

describe.each([
  // The shipped sign-in budget (10 steps a minute per account): most of the 30 are refused by it.
  { limits: 'the default sign-in budget', env: {} as Record<string, string> },
  // No budget in the way: all 30 reach the lockout's own accounting.
  { limits: 'no sign-in budget in the way', env: { RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '100000' } },
])('30 concurrent sign-in steps of one account, with $limits', ({ env }) => {
  let t: TestApp;
  let A: SeededTenant;
  const clock = new TestClock();
  let n = 0;

  beforeAll(async () => {
    t = await startTestApp({ clock, env: { RATE_LIMIT_SIGNIN_PER_IP_PER_MINUTE: '100000', RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '10', ...env } });
    ({ A } = await seedTwoTenants(t));
  });
  afterAll(async () => {
    await t?.close();
  });

  async function member() {
    const user = await t.seedUser(A.tenantId, { email: `parallel-${++n}@acme.test`, password: PASSWORD, role: 'CompanyAdmin' });
    return { user, token: (await t.login(user.email, PASSWORD, { reauth: false })).token };
  }

  /**
   * An admin session, re-authenticated, that writes the company's activity log meanwhile: adds webhook endpoints (and
   * removes them again), and changes the company's key prefix (an update of a unique column of the company's row,
   * which every activity-log entry references).
   */
  async function webhookWriter() {
    const { token } = await member();
    await t.stampReauth(token);
    return {
      create: (i: number) => i % 3 === 2 ? t.gql(SET_PREFIX, { prefix: `ACME${n}X${i}` }, { token }) : t.gql(CREATE_HOOK, { url: `https://hooks.acme.test/${n}/${i}` }, { token }),
      async removeAll() {
        for (const endpoint of await t.prisma.webhookEndpoint.findMany({ where: { tenantId: A.tenantId } })) {
          expect(code(await t.gql(DELETE_HOOK, { id: endpoint.id }, { token }))).toBe('ok');
        }
      },
    };
  }

  it('right passwords: every answer ok or RateLimited, the account never locked, no deadlock nor internal error', async () => {
    const writer = await webhookWriter();
    for (let round = 0; round < 3; round++) {
      const { user, token } = await member();
      const logFrom = t.logs.length;
      const [reauths, hooks] = await Promise.all([
        Promise.all(Array.from({ length: 30 }, () => t.reauthenticate(token))),
        Promise.all(Array.from({ length: 10 }, (_, i) => writer.create(i))),
      ]);
      expectCleanLog(t, logFrom);
      expectOnly(reauths, ['ok', 'RateLimited']);
      expect(tally(reauths).ok, JSON.stringify(tally(reauths))).toBeGreaterThanOrEqual(1);
      expectOnly(hooks, ['ok']);
      // Nothing was counted against the address: the next sign-in with the right password succeeds.
      const failures = await t.prisma.loginFailure.findUnique({ where: { email: user.email } });
      expect(failures?.lockedUntil ?? null).toBeNull();
      expect(failures?.failedCount ?? 0).toBe(0);
      expect(await t.prisma.auditLogEntry.count({ where: { entityId: user.id, action: { in: ['FailedReauthentication', 'LockAccount'] } } })).toBe(0);
      expect((await t.login(user.email, PASSWORD, { reauth: false })).status).toBe('SUCCESS');
      await writer.removeAll();
    }
  });

  it('right passwords at sign-in: every answer a session or RateLimited, never AccountLocked', async () => {
    const { user } = await member();
    const logFrom = t.logs.length;
    const answers = await Promise.all(Array.from({ length: 30 }, () => t.gql(LOGIN, { input: { email: user.email, password: PASSWORD } })));
    expectCleanLog(t, logFrom);
    expectOnly(answers, ['ok', 'RateLimited']);
    expect(answers.filter((answer) => answer.data?.login?.__typename === 'LoginSuccess').length).toBeGreaterThanOrEqual(1);
    expect((await t.prisma.loginFailure.findUnique({ where: { email: user.email } }))?.lockedUntil ?? null).toBeNull();
  });

  it(`wrong passwords: at most ${MAX_FAILED_LOGINS} are checked, one lock, then AccountLocked — with webhook writes alongside, no deadlock`, async () => {
    const writer = await webhookWriter();
    const { user, token } = await member();
    const logFrom = t.logs.length;
    const [reauths, hooks] = await Promise.all([
      Promise.all(Array.from({ length: 30 }, (_, i) => t.reauthenticate(token, { password: `wrong guess ${i}` }))),
      Promise.all(Array.from({ length: 10 }, (_, i) => writer.create(i))),
    ]);
    expectCleanLog(t, logFrom);
    expectOnly(reauths, ['Unauthorized', 'AccountLocked', 'RateLimited']);
    // The first five admitted are checked and fail; the fifth failure locks; nothing more is checked.
    expect(tally(reauths).Unauthorized).toBe(MAX_FAILED_LOGINS);
    expectOnly(hooks, ['ok']);
    const entries = await t.prisma.auditLogEntry.findMany({ where: { entityId: user.id } });
    expect(entries.filter((entry) => entry.action === 'FailedReauthentication' && (entry.details as { reason?: string }).reason !== 'locked')).toHaveLength(MAX_FAILED_LOGINS);
    expect(entries.filter((entry) => entry.action === 'LockAccount')).toHaveLength(1);
    expect(await t.prisma.loginFailure.findUniqueOrThrow({ where: { email: user.email } })).toMatchObject({ pendingCount: 0, lockedUntil: expect.any(Date) });
    await writer.removeAll();
  });

  it('the places of checks a dead process left unfinished are given back after the lease', async () => {
    const { user, token } = await member();
    // Five checks admitted and never settled: the process died hashing their passwords.
    for (let i = 0; i < MAX_FAILED_LOGINS; i++) expect((await admitAttempt(t.prisma, user.email, clock.now())).kind).toBe('admitted');
    const busy = await t.reauthenticate(token);
    expect(code(busy)).toBe('RateLimited');
    expect(busy.status).toBe(429);
    expect(busy.errors![0].message).toMatch(/under way/);
    clock.advance(ATTEMPT_CHECK_LEASE_MS + 1000);
    expect(code(await t.reauthenticate(token))).toBe('ok');
    expect(await t.prisma.loginFailure.findUnique({ where: { email: user.email } })).toBeNull();
  });
});

