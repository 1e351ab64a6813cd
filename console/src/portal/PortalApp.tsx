import { Anchor, Box, Center, Container, Group, Image, Loader, MantineProvider, Menu, Stack, Text, Title, UnstyledButton } from '@mantine/core';
import { IconChevronDown, IconLogout } from '@tabler/icons-react';
import { useEffect, useMemo, useState } from 'react';
import { Provider, useMutation, useQuery } from 'urql';
import { createPortalClient, errorMessage, portalBase, PortalQuery, SignInMutation, SignOutMutation, type Portal } from './api';
import { LicensesPage } from './LicensesPage';
import { SignInPage } from './SignInPage';
import { portalCssVariables, portalTheme } from './theme';

/** The customer portal: `/portal/<handle>` (sign-in or the customer's licenses) and `/portal/<handle>/sign-in#token=…`. */
export function PortalApp() {
  const client = useMemo(createPortalClient, []);
  return (
    <Provider value={client}>
      <PortalRoot />
    </Provider>
  );
}

/** The token of an emailed link (`#token=kfp_…`), read once and then removed from the address bar and history. */
function takeLinkToken(): string | null {
  const match = window.location.hash.match(/token=([A-Za-z0-9_-]+)/);
  if (!window.location.pathname.endsWith('/sign-in') && !match) return null;
  window.history.replaceState(null, '', portalBase());
  return match?.[1] ?? null;
}

function PortalRoot() {
  const [linkToken] = useState(takeLinkToken);
  const [redeemed, setRedeemed] = useState(linkToken === null);
  const [redeemError, setRedeemError] = useState<string | null>(null);
  const [, signIn] = useMutation(SignInMutation);
  const [result, reload] = useQuery({ query: PortalQuery, pause: !redeemed });

  useEffect(() => {
    if (!linkToken) return;
    void signIn({ token: linkToken }).then((answer) => {
      setRedeemError(errorMessage(answer.error));
      setRedeemed(true);
    });
  }, [linkToken, signIn]);

  const portal = result.data?.portal;
  // The server answers 404 for a handle no company has or whose portal is off: nothing to wait for. Any other
  // failure (no answer, a 5xx) may pass, and says so.
  const unreachable = !portal && result.error !== undefined && result.error.response?.status !== 404;
  useEffect(() => {
    if (portal) document.title = `${portal.name} · Your licenses`;
    else if (redeemed && !result.fetching) document.title = unreachable ? 'Portal unavailable' : 'No portal at this address';
  }, [portal, redeemed, result.fetching, unreachable]);

  if (!redeemed || (result.fetching && !result.data)) {
    return (
      <MantineProvider theme={portalTheme(null)} cssVariablesResolver={portalCssVariables}>
        <Center h="100vh" component="main">
          <Loader aria-label="Loading" />
        </Center>
      </MantineProvider>
    );
  }
  if (!portal) {
    return (
      <MantineProvider theme={portalTheme(null)} cssVariablesResolver={portalCssVariables}>
        <Container size="xs" py={80} component="main">
          <Title order={1} size="h3" mb="sm">
            {unreachable ? 'The portal cannot be reached' : 'There is no portal at this address'}
          </Title>
          <Text c="dimmed">
            {unreachable ? errorMessage(result.error) : 'Check the link you followed, or ask the company that sent it for the address of its customer portal.'}
          </Text>
        </Container>
      </MantineProvider>
    );
  }
  const me = result.data?.me ?? null;
  return (
    <MantineProvider theme={portalTheme(portal.accentColor)} cssVariablesResolver={portalCssVariables}>
      <Box mih="100vh" bg="gray.0" style={{ display: 'flex', flexDirection: 'column' }}>
        <PortalHeader portal={portal} email={me?.email ?? null} onSignedOut={() => reload({ requestPolicy: 'network-only' })} />
        <Box component="main" style={{ flex: 1 }}>
          {me ? (
            <LicensesPage portal={portal} email={me.email} />
          ) : (
            <SignInPage portal={portal} notice={redeemError} />
          )}
        </Box>
        <PortalFooter portal={portal} />
      </Box>
    </MantineProvider>
  );
}

function Brand({ portal }: { portal: Portal }) {
  const [logoFailed, setLogoFailed] = useState(false);
  return (
    <Group gap="sm" wrap="nowrap">
      {portal.logoUrl && !logoFailed && <Image src={portal.logoUrl} alt="" h={32} w="auto" fit="contain" onError={() => setLogoFailed(true)} />}
      <Text fw={700} size="lg" lineClamp={1}>
        {portal.name}
      </Text>
    </Group>
  );
}

function PortalHeader({ portal, email, onSignedOut }: { portal: Portal; email: string | null; onSignedOut: () => void }) {
  const [signOut, send] = useMutation(SignOutMutation);
  const out = async (everywhere: boolean) => {
    await send({ everywhere });
    onSignedOut();
  };
  return (
    <Box component="header" bg="white" style={{ borderBottom: '1px solid var(--mantine-color-gray-3)' }}>
      <Container size="md" h={64}>
        <Group h="100%" justify="space-between" wrap="nowrap">
          <Brand portal={portal} />
          {email && (
            <Menu position="bottom-end" width={240}>
              <Menu.Target>
                <UnstyledButton aria-label={`Account: ${email}`} disabled={signOut.fetching}>
                  <Group gap={4} wrap="nowrap">
                    <Text size="sm" maw={{ base: 140, sm: 280 }} truncate="end">
                      {email}
                    </Text>
                    <IconChevronDown size={16} aria-hidden />
                  </Group>
                </UnstyledButton>
              </Menu.Target>
              <Menu.Dropdown>
                <Menu.Label>Signed in as {email}</Menu.Label>
                <Menu.Item leftSection={<IconLogout size={16} aria-hidden />} onClick={() => void out(false)}>
                  Sign out
                </Menu.Item>
                <Menu.Item onClick={() => void out(true)}>Sign out everywhere</Menu.Item>
              </Menu.Dropdown>
            </Menu>
          )}
        </Group>
      </Container>
    </Box>
  );
}

function PortalFooter({ portal }: { portal: Portal }) {
  return (
    <Box component="footer" py="lg">
      <Container size="md">
        <Stack gap={4} align="center">
          {portal.supportEmail && (
            <Text size="sm" c="dimmed" ta="center">
              Questions about your licenses? Write to{' '}
              <Anchor href={`mailto:${portal.supportEmail}`} size="sm" underline="always">
                {portal.supportEmail}
              </Anchor>
            </Text>
          )}
          <Text size="xs" c="dimmed">
            License portal by Keyforge
          </Text>
        </Stack>
      </Container>
    </Box>
  );
}
