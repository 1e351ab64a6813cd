import { createContext, useContext, type ReactNode } from 'react';
import type { ResultOf } from '../../../graphql';
import type { CurrentUserQuery } from '../graphql/documents';

export type CurrentUser = ResultOf<typeof CurrentUserQuery>['me'];
type Company = ResultOf<typeof CurrentUserQuery>['company'];

const CurrentUserContext = createContext<{ user: CurrentUser; company: Company } | null>(null);

export function CurrentUserProvider({ user, company, children }: { user: CurrentUser; company: Company; children: ReactNode }) {
  return <CurrentUserContext.Provider value={{ user, company }}>{children}</CurrentUserContext.Provider>;
}

export function useCurrentUser() {
  const value = useContext(CurrentUserContext);
  if (!value) throw new Error('useCurrentUser outside the signed-in layout');
  return value;
}

/** CompanyAdmins manage; ReadOnly users see the same pages with management actions disabled. */
export function useCanManage(): boolean {
  return useContext(CurrentUserContext)?.user.role === 'COMPANY_ADMIN';
}
