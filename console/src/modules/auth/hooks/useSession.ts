import { useSyncExternalStore } from 'react';
import { useClient } from 'urql';
import { session } from '../../../lib/session';
import { LogoutMutation } from '../graphql/documents';

/** The session status ('unknown' while the first refresh runs), re-rendering on change. */
export function useSessionStatus() {
  return useSyncExternalStore(session.subscribe, session.getStatus);
}

/** Stores the tokens of a successful login/setup. Returns false for MfaRequired. */
export function acceptSession(fields: { accessToken: string; accessTokenExpiresAt: string } | { __typename: 'MfaRequired' }): boolean {
  if (!('accessToken' in fields)) return false;
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
