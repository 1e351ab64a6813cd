import type { ReactNode } from 'react';
import { Navigate, Outlet, useLocation, useSearchParams } from 'react-router';
import { useQuery } from 'urql';
import { NeedsSetupQuery } from '../modules/auth/graphql/documents';
import { useCanManage } from '../modules/auth/hooks/useCurrentUser';
import { useSessionStatus } from '../modules/auth/hooks/useSession';
import { NoAccess } from '../ui/QueryState';
import { safeNext } from '../modules/auth/next';
import { FullPageLoader } from './FullPageLoader';

/** Signed-in pages: wait for the first silent refresh, then send signed-out visitors to sign in (or setup). */
export function RequireSession() {
  const status = useSessionStatus();
  const location = useLocation();
  if (status === 'unknown') return <FullPageLoader />;
  if (status === 'signedOut') {
    const next = location.pathname === '/' ? '' : `?next=${encodeURIComponent(location.pathname + location.search)}`;
    return <Navigate to={`/login${next}`} replace />;
  }
  return <Outlet />;
}

/**
 * Signed-out pages (sign-in, setup): a signed-in visitor goes to the dashboard; while no user exists the
 * sign-in page hands over to setup, and setup hands back once it is done.
 */
export function PublicOnly({ page }: { page: 'login' | 'setup' }) {
  const status = useSessionStatus();
  const [params] = useSearchParams();
  const [{ data, fetching }] = useQuery({ query: NeedsSetupQuery, requestPolicy: 'network-only' });
  if (status === 'signedIn') return <Navigate to={safeNext(params.get('next'))} replace />;
  if (status === 'unknown' || (fetching && !data)) return <FullPageLoader />;
  if (page === 'login' && data?.needsSetup) return <Navigate to="/setup" replace />;
  if (page === 'setup' && data && !data.needsSetup) return <Navigate to="/login" replace />;
  return <Outlet />;
}

/** Admin-only pages: a read-only member (a bookmark, a shared link) sees why, and the page asks for nothing. */
export function RequireAdmin({ page }: { page: ReactNode }) {
  return useCanManage() ? page : <NoAccess />;
}
