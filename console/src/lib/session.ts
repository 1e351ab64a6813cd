/**
 * The signed-in session. The access token lives in memory only (never in storage); the refresh token is an
 * httpOnly cookie scoped to /api/graphql that the server rotates on every `refreshSession`.
 *
 * - `refresh()` is single-flight (and serialised across tabs with the Web Locks API when available), because
 *   presenting a rotated refresh token twice ends the whole session on the server.
 * - The GraphQL client adds the bearer token and refreshes-and-retries on an HTTP 401 with @urql/exchange-auth
 *   (sessionAuth.ts); `fetch` does the same for the few plain HTTP requests (the CSV export).
 * - A refresh is scheduled shortly before the access token expires, so requests rarely see a 401.
 */
export type SessionStatus = 'unknown' | 'signedIn' | 'signedOut';

export interface SessionTokens {
  accessToken: string;
  accessTokenExpiresAt: string | null;
}

export const GRAPHQL_ENDPOINT = '/api/graphql';
const REFRESH_AHEAD_MS = 60_000;
const MIN_REFRESH_DELAY_MS = 5_000;
const REFRESH_MUTATION = 'mutation RefreshSession { refreshSession { accessToken accessTokenExpiresAt } }';

export interface SessionDeps {
  fetch: typeof fetch;
  now?: () => number;
  setTimer?: (run: () => void, ms: number) => unknown;
  clearTimer?: (timer: unknown) => void;
  /** Runs `task` holding a cross-tab lock (navigator.locks); defaults to running it directly. */
  withLock?: <T>(task: () => Promise<T>) => Promise<T>;
}

export class Session {
  private token: string | null = null;
  private refreshing: Promise<boolean> | null = null;
  private timer: unknown = null;
  private listeners = new Set<() => void>();
  status: SessionStatus = 'unknown';

  constructor(
    private readonly deps: SessionDeps,
    private readonly endpoint = GRAPHQL_ENDPOINT,
  ) {}

  get accessToken(): string | null {
    return this.token;
  }

  /** A refresh is in flight: requests wait for its token. */
  get isRefreshing(): boolean {
    return this.refreshing !== null;
  }

  subscribe = (listener: () => void) => {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  };

  getStatus = () => this.status;

  /** Called with the tokens of `login`, `setup` or `refreshSession`. */
  signIn(tokens: SessionTokens) {
    this.token = tokens.accessToken;
    this.schedule(tokens.accessTokenExpiresAt);
    this.setStatus('signedIn');
  }

  /** Forgets the access token (the server side is ended by the `logout` mutation). */
  signOut() {
    this.token = null;
    this.cancelTimer();
    this.setStatus('signedOut');
  }

  /** Exchanges the refresh cookie for a new access token. Resolves false when there is no session. */
  refresh(): Promise<boolean> {
    this.refreshing ??= this.runRefresh().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  /** `fetch` for plain HTTP requests outside the GraphQL client: bearer token, cookies, one refresh-and-retry on HTTP 401. */
  fetch = async (input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> => {
    if (this.refreshing) await this.refreshing;
    const sentToken = this.token;
    const response = await this.send(input, init, sentToken);
    if (response.status !== 401 || !sentToken) return response;
    // Another request may already have refreshed while this one was in flight.
    const fresh = this.token !== sentToken ? true : await this.refresh();
    return fresh ? this.send(input, init, this.token) : response;
  };

  private send(input: RequestInfo | URL, init: RequestInit, token: string | null) {
    const headers = new Headers(init.headers);
    if (token) headers.set('authorization', `Bearer ${token}`);
    else headers.delete('authorization');
    return this.deps.fetch(input, { ...init, headers, credentials: 'include' });
  }

  private async runRefresh(): Promise<boolean> {
    const withLock = this.deps.withLock ?? ((task) => task());
    try {
      const tokens = await withLock(async () => {
        const response = await this.deps.fetch(this.endpoint, {
          method: 'POST',
          credentials: 'include',
          headers: { 'content-type': 'application/json', accept: 'application/json', 'x-keyforge-csrf': '1' },
          body: JSON.stringify({ query: REFRESH_MUTATION, operationName: 'RefreshSession' }),
        });
        const body = (await response.json().catch(() => null)) as { data?: { refreshSession?: SessionTokens | null } | null } | null;
        return body?.data?.refreshSession ?? null;
      });
      if (tokens?.accessToken) {
        this.signIn(tokens);
        return true;
      }
    } catch {
      // Network failure: treated as "no session"; the sign-in page reports the server as unreachable.
    }
    this.signOut();
    return false;
  }

  private schedule(expiresAt: string | null) {
    this.cancelTimer();
    if (!expiresAt) return;
    const now = this.deps.now?.() ?? Date.now();
    const delay = Math.max(MIN_REFRESH_DELAY_MS, new Date(expiresAt).getTime() - now - REFRESH_AHEAD_MS);
    const setTimer = this.deps.setTimer ?? ((run, ms) => setTimeout(run, ms));
    this.timer = setTimer(() => void this.refresh(), delay);
  }

  private cancelTimer() {
    if (this.timer === null) return;
    (this.deps.clearTimer ?? ((timer) => clearTimeout(timer as ReturnType<typeof setTimeout>)))(this.timer);
    this.timer = null;
  }

  private setStatus(status: SessionStatus) {
    this.status = status;
    for (const listener of this.listeners) listener();
  }
}

/** Web Locks serialise refreshes across tabs of the same browser (they share the refresh cookie). */
export const browserLock = <T>(task: () => Promise<T>): Promise<T> =>
  typeof navigator !== 'undefined' && navigator.locks ? (navigator.locks.request('keyforge-refresh', task) as Promise<T>) : task();

export const session = new Session({ fetch: (input, init) => globalThis.fetch(input, init), withLock: browserLock });
