import { useSyncExternalStore } from 'react';
import { useClient } from 'urql';
import type { FragmentOf } from '../../../graphql';
import { session } from '../../../lib/session';
import { LogoutMutation, type SessionFields } from '../graphql/documents';

/** The session status ('unknown' while the first refresh runs), re-rendering on change. */
export function useSessionStatus() {
  return useSyncExternalStore(session.subscribe, session.getStatus);
}

/** Stores the tokens of a successful login/setup. Returns false for MFA_REQUIRED. */
export function acceptSession(fields: FragmentOf<typeof SessionFields>): boolean {
  if (fields.status !== 'SUCCESS' || !fields.accessToken) return false;
  session.signIn({ accessToken: fields.accessToken, accessTokenExpiresAt: fields.accessTokenExpiresAt });
  return true;
}

/** Ends the session on the server (best effort), then forgets the token locally. */
export function useLogout() {
  const client = useClient();
  return async () => {
    await client.mutation(LogoutMutation, {}).toPromise().catch(() => undefined);
    session.signOut();
  };
}
