import { AppShell, Avatar, Badge, Burger, Group, Menu, NavLink, ScrollArea, Stack, Text, UnstyledButton } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconChevronDown, IconKey, IconLogout, IconUserCircle } from '@tabler/icons-react';
import { Suspense, useEffect } from 'react';
import { Link, NavLink as RouterNavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { useQuery } from 'urql';
import { CurrentUserQuery } from '../modules/auth/graphql/documents';
import { CurrentUserProvider, type CurrentUser } from '../modules/auth/hooks/useCurrentUser';
import { useLogout } from '../modules/auth/hooks/useSession';
import { ErrorAlert, LoadingState } from '../ui/QueryState';
import { FullPageLoader } from './FullPageLoader';
import { NAVIGATION } from './navigation';
import { initialsOf } from '../lib/format';

/** The signed-in frame: header with the company and user menu, navigation (a drawer on narrow screens). */
export function SignedInLayout() {
  const [opened, { toggle, close }] = useDisclosure(false);
  const [{ data, error }, reload] = useQuery({ query: CurrentUserQuery });
  const location = useLocation();
  useEffect(close, [location.pathname, close]);

  if (!data) {
    if (error) return <ErrorAlert error={error} onRetry={() => reload({ requestPolicy: 'network-only' })} />;
    return <FullPageLoader />;
  }

  return (
    <CurrentUserProvider user={data.me} company={data.company}>
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <AppShell header={{ height: 56 }} navbar={{ width: 232, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="lg">
        <AppShell.Header>
          <Group h="100%" px="md" justify="space-between" wrap="nowrap">
            <Group gap="sm" wrap="nowrap">
              <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label={opened ? 'Close navigation' : 'Open navigation'} />
              <Link to="/" className="brand" aria-label="Keyforge dashboard">
                <IconKey size={22} color="var(--mantine-color-indigo-6)" aria-hidden />
                <Text fw={700}>Keyforge</Text>
              </Link>
              <Text c="dimmed" visibleFrom="xs" truncate>
                {data.company.name}
              </Text>
            </Group>
            <UserMenu user={data.me} />
          </Group>
        </AppShell.Header>
        <AppShell.Navbar p="xs" aria-label="Main navigation">
          <ScrollArea>
            <Stack gap="md">
              {NAVIGATION.map((section, index) => (
                <Stack key={section.label ?? index} gap={2}>
                  {section.label && (
                    <Text size="xs" fw={600} c="dimmed" tt="uppercase" px="sm" pt="xs">
                      {section.label}
                    </Text>
                  )}
                  {section.items.filter((item) => !item.adminOnly || data.me.role === 'COMPANY_ADMIN').map((item) => (
                    <NavLink key={item.to} component={RouterNavLink} to={item.to} end={item.to === '/'} label={item.label} leftSection={<item.icon size={18} stroke={1.6} />} />
                  ))}
                </Stack>
              ))}
            </Stack>
          </ScrollArea>
        </AppShell.Navbar>
        <AppShell.Main id="main" tabIndex={-1} bg="var(--mantine-color-gray-0)">
          <div className="page">
            <Suspense fallback={<LoadingState />}>
              <Outlet />
            </Suspense>
          </div>
        </AppShell.Main>
      </AppShell>
    </CurrentUserProvider>
  );
}

function UserMenu({ user }: { user: CurrentUser }) {
  const logout = useLogout();
  const navigate = useNavigate();
  const initials = initialsOf(user.name, user.email);
  return (
    <Menu position="bottom-end" width={240} withinPortal>
      <Menu.Target>
        <UnstyledButton aria-label="Account menu">
          <Group gap={8} wrap="nowrap">
            <Avatar size={30} radius="xl" color="indigo">
              {initials}
            </Avatar>
            <Stack gap={0} visibleFrom="sm">
              <Text size="sm" fw={500} lh={1.2}>
                {user.name ?? user.email}
              </Text>
              <Text size="xs" c="dimmed" lh={1.2}>
                {user.role === 'COMPANY_ADMIN' ? 'Admin' : 'Read-only'}
              </Text>
            </Stack>
            <IconChevronDown size={14} aria-hidden />
          </Group>
        </UnstyledButton>
      </Menu.Target>
      <Menu.Dropdown>
        <Menu.Label>
          {user.email}
          {user.role === 'READ_ONLY' && (
            <Badge ml={6} size="xs" variant="light" color="gray">
              read-only
            </Badge>
          )}
        </Menu.Label>
        <Menu.Item leftSection={<IconUserCircle size={16} />} onClick={() => navigate('/settings/profile')}>
          My profile
        </Menu.Item>
        <Menu.Divider />
        <Menu.Item leftSection={<IconLogout size={16} />} onClick={() => void logout()}>
          Sign out
        </Menu.Item>
      </Menu.Dropdown>
    </Menu>
  );
}

