import { describe, expect, it, vi } from 'vitest';
import { Session } from './session';

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const refreshed = (token: string) => json({ data: { refreshSession: { accessToken: token, accessTokenExpiresAt: '2030-01-01T00:15:00.000Z' } } });
const noSession = () => json({ data: null, errors: [{ message: 'No session: sign in.', extensions: { code: 'Unauthorized' } }] });

function setup(handler: (url: string, init: RequestInit) => Response | Promise<Response>) {
  const calls: { url: string; init: RequestInit; body: string }[] = [];
  const fetch = vi.fn(async (input: RequestInfo | URL, init: RequestInit = {}) => {
    calls.push({ url: String(input), init, body: String(init.body ?? '') });
    return handler(String(input), init);
  });
  const timers: { run: () => void; ms: number }[] = [];
  const session = new Session({ fetch: fetch as typeof globalThis.fetch, now: () => Date.parse('2030-01-01T00:00:00.000Z'), setTimer: (run, ms) => timers.push({ run, ms }), clearTimer: () => {} });
  return { session, calls, timers };
}

const isRefresh = (init: RequestInit) => String(init.body).includes('refreshSession');
const bearer = (init: RequestInit) => new Headers(init.headers).get('authorization');

describe('Session', () => {
  it('a silent refresh signs in from the cookie, and schedules the next refresh before expiry', async () => {
    const { session, calls, timers } = setup(() => refreshed('token-1'));
    expect(session.status).toBe('unknown');
    expect(await session.refresh()).toBe(true);
    expect(session.status).toBe('signedIn');
    expect(session.accessToken).toBe('token-1');
    expect(calls[0].init.credentials).toBe('include');
    expect(new Headers(calls[0].init.headers).get('content-type')).toBe('application/json');
    expect(bearer(calls[0].init)).toBeNull(); // never an (expired) bearer on refresh
    expect(timers[0].ms).toBe(14 * 60_000); // 15-minute token, refreshed a minute early
  });

  it('no refresh cookie: signed out', async () => {
    const { session } = setup(() => noSession());
    expect(await session.refresh()).toBe(false);
    expect(session.status).toBe('signedOut');
    expect(session.accessToken).toBeNull();
  });

  it('concurrent refreshes share one request (a rotated token must never be presented twice)', async () => {
    const { session, calls } = setup(() => refreshed('token-1'));
    await Promise.all([session.refresh(), session.refresh(), session.refresh()]);
    expect(calls.filter((call) => isRefresh(call.init))).toHaveLength(1);
  });

  it('fetch adds the bearer token and cookies', async () => {
    const { session, calls } = setup(() => json({ data: { me: { id: '1' } } }));
    session.signIn({ accessToken: 'abc', accessTokenExpiresAt: null });
    await session.fetch('/api/graphql', { method: 'POST', body: '{}' });
    expect(bearer(calls[0].init)).toBe('Bearer abc');
    expect(calls[0].init.credentials).toBe('include');
  });

  it('an HTTP 401 refreshes once and retries with the new token', async () => {
    const { session, calls } = setup((_url, init) => {
      if (isRefresh(init)) return refreshed('fresh');
      return bearer(init) === 'Bearer fresh' ? json({ data: { ok: true } }) : json({ error: { code: 'Unauthorized' } }, 401);
    });
    session.signIn({ accessToken: 'stale', accessTokenExpiresAt: null });
    const response = await session.fetch('/api/graphql', { method: 'POST', body: '{"query":"{ users { id } }"}' });
    expect(response.status).toBe(200);
    expect(calls.map((call) => (isRefresh(call.init) ? 'refresh' : bearer(call.init)))).toEqual(['Bearer stale', 'refresh', 'Bearer fresh']);
  });

  it('when the refresh fails after a 401, the session ends (the app shows sign-in)', async () => {
    const { session } = setup((_url, init) => (isRefresh(init) ? noSession() : json({ error: { code: 'Unauthorized' } }, 401)));
    session.signIn({ accessToken: 'stale', accessTokenExpiresAt: null });
    const response = await session.fetch('/api/graphql', { method: 'POST', body: '{}' });
    expect(response.status).toBe(401);
    expect(session.status).toBe('signedOut');
  });

  it('a GraphQL Unauthorized error in a 200 (e.g. a wrong password) is not retried', async () => {
    const { session, calls } = setup(() => json({ data: null, errors: [{ message: 'Invalid email or password.', extensions: { code: 'Unauthorized' } }] }));
    await session.fetch('/api/graphql', { method: 'POST', body: '{"query":"mutation { login }"}' });
    expect(calls).toHaveLength(1);
  });

  it('requests wait for the first silent refresh instead of going out without a token', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { session, calls } = setup(async (_url, init) => {
      if (isRefresh(init)) {
        await gate;
        return refreshed('boot');
      }
      return json({ data: {} });
    });
    const booting = session.refresh();
    const request = session.fetch('/api/graphql', { method: 'POST', body: '{}' });
    release();
    await Promise.all([booting, request]);
    expect(bearer(calls[1].init)).toBe('Bearer boot');
  });

  it('notifies subscribers of status changes', async () => {
    const { session } = setup(() => refreshed('t'));
    const seen: string[] = [];
    session.subscribe(() => seen.push(session.status));
    await session.refresh();
    session.signOut();
    expect(seen).toEqual(['signedIn', 'signedOut']);
  });
});
