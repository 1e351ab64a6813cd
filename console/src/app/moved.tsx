import { Navigate, useLocation } from 'react-router';

/**
 * Earlier addresses of pages that now live under /settings/… (one scheme for every settings page). Bookmarks and
 * links to them keep working: they redirect, query and fragment kept.
 */
export const MOVED_ADDRESSES: Record<string, string> = {
  '/team': '/settings/team',
  '/api-keys': '/settings/api-keys',
  '/settings': '/settings/company',
  '/profile': '/settings/profile',
};

export function MovedTo({ to }: { to: string }) {
  const { search, hash } = useLocation();
  return <Navigate to={`${to}${search}${hash}`} replace />;
}
