import {
  IconCreditCard,
  IconBuilding,
  IconChartBar,
  IconHistory,
  IconKey,
  IconLayoutDashboard,
  IconLicense,
  IconMail,
  IconPackage,
  IconServer,
  IconUserCircle,
  IconUsers,
  IconWebhook,
  type Icon,
} from '@tabler/icons-react';

export interface NavItem {
  label: string;
  to: string;
  icon: Icon;
  /** Only for CompanyAdmins (the API refuses the page's data to read-only members). */
  adminOnly?: boolean;
}

export interface NavSection {
  label?: string;
  items: NavItem[];
}

export const NAVIGATION: NavSection[] = [
  {
    items: [
      { label: 'Dashboard', to: '/', icon: IconLayoutDashboard },
      { label: 'Analytics', to: '/analytics', icon: IconChartBar },
      { label: 'Licenses', to: '/licenses', icon: IconLicense },
      { label: 'Products', to: '/products', icon: IconPackage },
      { label: 'Activity log', to: '/activity', icon: IconHistory },
      { label: 'Emails', to: '/emails', icon: IconMail, adminOnly: true },
      { label: 'System', to: '/system', icon: IconServer, adminOnly: true },
    ],
  },
  {
    label: 'Settings',
    items: [
      { label: 'Team', to: '/settings/team', icon: IconUsers },
      { label: 'API keys', to: '/settings/api-keys', icon: IconKey },
      { label: 'Company', to: '/settings/company', icon: IconBuilding },
      { label: 'Webhooks', to: '/settings/webhooks', icon: IconWebhook, adminOnly: true },
      { label: 'Payments', to: '/settings/payments', icon: IconCreditCard, adminOnly: true },
      { label: 'My profile', to: '/settings/profile', icon: IconUserCircle },
    ],
  },
];
