import { Client, fetchExchange, gql } from 'urql';
import { describe, expect, it } from 'vitest';
import { Session } from './session';
import { sessionAuthExchange } from './sessionAuth';

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const refreshed = (token: string) => json({ data: { refreshSession: { accessToken: token, accessTokenExpiresAt: null } } });
const noSession = () => json({ data: null, errors: [{ message: 'No session: sign in.', extensions: { code: 'Unauthorized' } }] });
const unauthorized = () => json({ errors: [{ message: 'The access token has expired.', extensions: { code: 'Unauthorized' } }] }, 401);
const USERS = gql`
  query Users {
    users {
      id
    }
  }
`;
const isRefresh = (init: RequestInit) => String(init.body).includes('refreshSession');
const bearer = (init: RequestInit) => new Headers(init.headers).get('authorization');

/**
 * A urql client as the console builds it (the session's exchange, then fetch) against `server`: one fetch for the
 * session's refresh requests and the client's operations, each call recorded as 'refresh' or the bearer it sent.
 */
function setup(server: (init: RequestInit) => Response | Promise<Response>) {
  const calls: string[] = [];
  const fetch = async (_input: RequestInfo | URL, init: RequestInit = {}) => {
    calls.push(isRefresh(init) ? 'refresh' : (bearer(init) ?? 'no token'));
    return server(init);
  };
  const session = new Session({ fetch: fetch as typeof globalThis.fetch, setTimer: () => null, clearTimer: () => {} });
  const client = new Client({ url: 'http://console.test/api/graphql', exchanges: [sessionAuthExchange(session), fetchExchange], fetch, preferGetMethod: false, requestPolicy: 'network-only' });
  const users = () => client.query(USERS, {}).toPromise();
  return { session, client, calls, users };
}

describe('sessionAuthExchange (@urql/exchange-auth on the session)', () => {
  it('sends the bearer token with every operation', async () => {
    const { session, calls, users } = setup(() => json({ data: { users: [] } }));
    session.signIn({ accessToken: 'abc', accessTokenExpiresAt: null });
    expect((await users()).error).toBeUndefined();
    expect(calls).toEqual(['Bearer abc']);
  });

  it('an HTTP 401 refreshes once and retries with the new token', async () => {
    const { session, calls, users } = setup((init) => (isRefresh(init) ? refreshed('fresh') : bearer(init) === 'Bearer fresh' ? json({ data: { users: [{ id: '1' }] } }) : unauthorized()));
    session.signIn({ accessToken: 'stale', accessTokenExpiresAt: null });
    const result = await users();
    expect(result.error).toBeUndefined();
    expect(result.data).toEqual({ users: [{ id: '1' }] });
    expect(calls).toEqual(['Bearer stale', 'refresh', 'Bearer fresh']);
  });

  it('when the refresh fails after a 401, the session ends and the operation is not retried', async () => {
    const { session, calls, users } = setup((init) => (isRefresh(init) ? noSession() : unauthorized()));
    session.signIn({ accessToken: 'stale', accessTokenExpiresAt: null });
    const result = await users();
    expect(result.error?.message).toMatch(/session has ended/);
    expect(session.status).toBe('signedOut');
    expect(calls).toEqual(['Bearer stale', 'refresh']);
  });

  it('a GraphQL Unauthorized error in a 200 (e.g. a wrong password) is not retried', async () => {
    const { session, calls, users } = setup(() => json({ data: null, errors: [{ message: 'Invalid email or password.', extensions: { code: 'Unauthorized' } }] }));
    session.signIn({ accessToken: 'abc', accessTokenExpiresAt: null });
    expect((await users()).error?.graphQLErrors[0].message).toBe('Invalid email or password.');
    expect(calls).toEqual(['Bearer abc']);
  });

  it('a 401 to a request sent without a token is the answer (nothing to refresh)', async () => {
    const { calls, users } = setup(() => unauthorized());
    expect((await users()).error?.response?.status).toBe(401);
    expect(calls).toEqual(['no token']);
  });

  it('concurrent 401s share one refresh (a rotated refresh token must never be presented twice)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { session, client, calls } = setup(async (init) => {
      if (isRefresh(init)) return refreshed('fresh');
      if (bearer(init) === 'Bearer fresh') return json({ data: { users: [] } });
      await gate; // both stale requests are in flight before either answers
      return unauthorized();
    });
    session.signIn({ accessToken: 'stale', accessTokenExpiresAt: null });
    const results = Promise.all([1, 2, 3].map((first) => client.query(USERS, { first }).toPromise()));
    await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    for (const result of await results) expect(result.error).toBeUndefined();
    expect(calls.filter((call) => call === 'refresh')).toHaveLength(1);
    expect(calls.filter((call) => call === 'Bearer fresh')).toHaveLength(3);
  });

  it('a 401 arriving after another request already refreshed retries with that token, without refreshing again', async () => {
    let releaseSlow!: () => void;
    const slowGate = new Promise<void>((resolve) => (releaseSlow = resolve));
    const { session, client, calls } = setup(async (init) => {
      if (isRefresh(init)) return refreshed('fresh');
      if (bearer(init) === 'Bearer fresh') return json({ data: { users: [] } });
      if (String(init.body).includes('"first":2')) await slowGate; // answers 401 only after the first one refreshed
      return unauthorized();
    });
    session.signIn({ accessToken: 'stale', accessTokenExpiresAt: null });
    const slow = client.query(USERS, { first: 2 }).toPromise();
    expect((await client.query(USERS, { first: 1 }).toPromise()).error).toBeUndefined();
    expect(session.accessToken).toBe('fresh');
    releaseSlow();
    expect((await slow).error).toBeUndefined();
    expect(calls.filter((call) => call === 'refresh')).toHaveLength(1);
  });

  it('operations wait for the silent sign-in at start instead of going out without a token', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { session, calls, users } = setup(async (init) => {
      if (!isRefresh(init)) return json({ data: { users: [] } });
      await gate;
      return refreshed('boot');
    });
    const booting = session.refresh();
    const result = users();
    await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    await booting;
    expect((await result).error).toBeUndefined();
    expect(calls).toEqual(['refresh', 'Bearer boot']);
  });

  it('when the silent sign-in finds no session, waiting operations go out without a token (sign-in and setup work signed out)', async () => {
    const { session, calls, users } = setup((init) => (isRefresh(init) ? noSession() : json({ data: { users: [] } })));
    const booting = session.refresh();
    const result = await users();
    await booting;
    expect(result.error).toBeUndefined();
    expect(calls).toEqual(['refresh', 'no token']);
  });
});
