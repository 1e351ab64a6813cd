import { MantineProvider } from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { useEffect, useState } from 'react';
import { RouterProvider } from 'react-router';
import { Provider } from 'urql';
import { createClient } from '../lib/client';
import { useSessionStatus } from '../modules/auth/hooks/useSession';
import { ReauthModal } from '../ui/ReauthModal';
import { router } from './router';
import { cssVariablesResolver, theme } from './theme';

export function App() {
  const status = useSessionStatus();
  // A fresh client (and so an empty cache) for every session: nothing of one user is shown to the next.
  const [client, setClient] = useState(createClient);
  useEffect(() => {
    if (status === 'signedOut') setClient(createClient());
  }, [status]);

  return (
    <MantineProvider theme={theme} cssVariablesResolver={cssVariablesResolver}>
      <Notifications position="top-right" />
      <Provider value={client}>
        <RouterProvider router={router} />
        <ReauthModal />
      </Provider>
    </MantineProvider>
  );
}
