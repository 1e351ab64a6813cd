import { createBrowserRouter } from 'react-router';
import { ActivityPage } from '../modules/activity/pages/ActivityPage';
import { AnalyticsPage } from '../modules/analytics/pages/AnalyticsPage';
import { AcceptInvitePage } from '../modules/auth/pages/AcceptInvitePage';
import { ForgotPasswordPage } from '../modules/auth/pages/ForgotPasswordPage';
import { LoginPage } from '../modules/auth/pages/LoginPage';
import { ResetPasswordPage } from '../modules/auth/pages/ResetPasswordPage';
import { SetupPage } from '../modules/auth/pages/SetupPage';
import { DashboardPage } from '../modules/dashboard/pages/DashboardPage';
import { LicenseDetailPage } from '../modules/licenses/pages/LicenseDetailPage';
import { LicensesPage } from '../modules/licenses/pages/LicensesPage';
import { OutboxPage } from '../modules/outbox/pages/OutboxPage';
import { SystemPage } from '../modules/system/pages/SystemPage';
import { ProductsPage } from '../modules/products/pages/ProductsPage';
import { ReleasesPage } from '../modules/releases/pages/ReleasesPage';
import { ProfilePage } from '../modules/profile/pages/ProfilePage';
import { CompanySettingsPage } from '../modules/settings/pages/CompanySettingsPage';
import { WebhooksPage } from '../modules/webhooks/pages/WebhooksPage';
import { PaymentsPage } from '../modules/payments/pages/PaymentsPage';
import { ApiKeysPage } from '../modules/team/pages/ApiKeysPage';
import { TeamPage } from '../modules/team/pages/TeamPage';
import { PublicOnly, RequireAdmin, RequireSession } from './guards';
import { MOVED_ADDRESSES, MovedTo } from './moved';
import { NotFoundPage } from './NotFoundPage';
import { RouteError } from './RouteError';
import { SignedInLayout } from './SignedInLayout';

export const router = createBrowserRouter([
  {
    element: <PublicOnly page="login" />,
    errorElement: <RouteError />,
    children: [
      { path: '/login', element: <LoginPage /> },
      { path: '/forgot-password', element: <ForgotPasswordPage /> },
    ],
  },
  { element: <PublicOnly page="setup" />, errorElement: <RouteError />, children: [{ path: '/setup', element: <SetupPage /> }] },
  // Open to anyone holding the link, signed in or not: accepting signs this browser in as the new member.
  { path: '/accept-invite', element: <AcceptInvitePage />, errorElement: <RouteError /> },
  // The same for a reset link: using it signs this browser in as the link's user (every other session ends).
  { path: '/reset-password', element: <ResetPasswordPage />, errorElement: <RouteError /> },
  {
    element: <RequireSession />,
    errorElement: <RouteError />,
    children: [
      {
        element: <SignedInLayout />,
        children: [
          // A page that throws shows RouteError inside the layout: the navigation stays.
          {
            errorElement: <RouteError />,
            children: [
              { index: true, element: <DashboardPage /> },
              { path: '/analytics', element: <AnalyticsPage /> },
              { path: '/licenses', element: <LicensesPage /> },
              { path: '/licenses/:id', element: <LicenseDetailPage /> },
              { path: '/products', element: <ProductsPage /> },
              { path: '/products/:productId/releases', element: <ReleasesPage /> },
              { path: '/activity', element: <ActivityPage /> },
              { path: '/emails', element: <RequireAdmin page={<OutboxPage />} /> },
              { path: '/system', element: <RequireAdmin page={<SystemPage />} /> },
              { path: '/settings/team', element: <TeamPage /> },
              { path: '/settings/api-keys', element: <ApiKeysPage /> },
              { path: '/settings/company', element: <CompanySettingsPage /> },
              { path: '/settings/webhooks', element: <RequireAdmin page={<WebhooksPage />} /> },
              { path: '/settings/payments', element: <RequireAdmin page={<PaymentsPage />} /> },
              { path: '/settings/profile', element: <ProfilePage /> },
              ...Object.entries(MOVED_ADDRESSES).map(([path, to]) => ({ path, element: <MovedTo to={to} /> })),
              { path: '*', element: <NotFoundPage /> },
            ],
          },
        ],
      },
    ],
  },
]);
