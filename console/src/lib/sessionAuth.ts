import { authExchange } from '@urql/exchange-auth';
import type { Operation } from 'urql';
import type { Session } from './session';

/** The bearer token an operation went out with (authExchange appends it to the fetch options' headers). */
function sentToken(operation: Operation): string | null {
  const options = typeof operation.context.fetchOptions === 'function' ? operation.context.fetchOptions() : operation.context.fetchOptions;
  const header = (options?.headers as Record<string, string> | undefined)?.authorization;
  return header?.replace(/^Bearer /, '') ?? null;
}

/**
 * The GraphQL client's side of the session (@urql/exchange-auth): the bearer token on every operation and, on an
 * HTTP 401 (expired or revoked access token), one refresh and one retry. The refresh itself is the session's
 * (single-flight, serialised across tabs): a rotated refresh token presented twice ends the whole session.
 * GraphQL errors in a 200 never refresh (a wrong password is `Unauthorized` too, and must not be retried).
 */
export const sessionAuthExchange = (session: Session) =>
  authExchange(async (utils) => {
    // The token of the 401 that asked for the refresh (null: waiting for a refresh in flight). authExchange calls
    // refreshAuth right after willAuthError or didAuthError says true, so this is always the one it refers to.
    let failedToken: string | null = null;
    return {
      addAuthToOperation: (operation) => (session.accessToken ? utils.appendHeaders(operation, { authorization: `Bearer ${session.accessToken}` }) : operation),
      // A refresh in flight (the silent sign-in at start, or the scheduled one): wait for it rather than go out
      // without a token or with the one it replaces.
      willAuthError: () => {
        failedToken = null;
        return session.isRefreshing;
      },
      didAuthError: (error, operation) => {
        const sent = sentToken(operation);
        // Without a token a 401 is the answer: there is nothing to refresh.
        if (error.response?.status !== 401 || !sent) return false;
        failedToken = sent;
        return true;
      },
      refreshAuth: async () => {
        const failed = failedToken;
        // Another request refreshed while this one was in flight: retry with its token.
        if (failed && session.accessToken && session.accessToken !== failed && !session.isRefreshing) return;
        const fresh = await session.refresh();
        // After a 401, a failed refresh ends the session (the app shows sign-in) and the operation is not retried.
        if (!fresh && failed) throw new Error('Your session has ended: sign in again.');
      },
    };
  });
