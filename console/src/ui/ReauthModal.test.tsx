import { act, fireEvent, renderHook, screen, waitFor, within } from '@testing-library/react';
import { MantineProvider } from '@mantine/core';
import type { ReactNode } from 'react';
import { Client, fetchExchange, gql, Provider } from 'urql';
import { describe, expect, it, vi } from 'vitest';
import { theme } from '../app/theme';
import { ReauthModal } from './ReauthModal';
import { useApiMutation } from './useApiMutation';

vi.mock('./notify', () => ({ notifyError: vi.fn(), notifySuccess: vi.fn() }));

const Save = gql`
  mutation CreateKey($name: String!) {
    createApiKey(input: { name: $name, role: READ_ONLY }) {
      key
    }
  }
`;

/**
 * A server whose account-security mutation answers ReauthenticationRequired until `reauthenticate` succeeded with
 * the right password and code; it records every operation it was sent.
 */
function server({ mfaEnabled }: { mfaEnabled: boolean }) {
  const sent: { operation: string; variables: Record<string, unknown> }[] = [];
  let reauthenticated = false;
  const client = new Client({
    url: 'http://console.test/graphql',
    exchanges: [fetchExchange],
    fetch: async (url, init) => {
      const body = init?.body ? JSON.parse(String(init.body)) : { query: new URL(String(url)).searchParams.get('query'), variables: JSON.parse(new URL(String(url)).searchParams.get('variables') ?? '{}') };
      const operation = /(?:mutation|query)\s+(\w+)/.exec(body.query)![1];
      sent.push({ operation, variables: body.variables });
      const answer = (payload: unknown) => new Response(JSON.stringify(payload), { headers: { 'content-type': 'application/json' } });
      if (operation === 'ReauthMe') return answer({ data: { me: { __typename: 'User', id: 'u1', mfaEnabled } } });
      if (operation === 'Reauthenticate') {
        const { password, totpCode } = body.variables.input;
        if (password !== 'my password' || (mfaEnabled && totpCode !== '123456')) {
          return answer({ data: null, errors: [{ message: 'The password is not correct.', extensions: { code: 'Unauthorized', fields: { password: 'The password is not correct.' } } }] });
        }
        reauthenticated = true;
        return answer({ data: { reauthenticate: { __typename: 'ReauthenticatePayload', reauthenticatedUntil: '2026-06-01T12:10:00.000Z' } } });
      }
      if (!reauthenticated) return answer({ data: null, errors: [{ message: 'This action needs a recent re-authentication.', extensions: { code: 'ReauthenticationRequired' } }] });
      return answer({ data: { createApiKey: { __typename: 'CreateApiKeyPayload', key: 'kf_new' } } });
    },
  });
  return { client, sent };
}

function mount(client: Client) {
  const wrapper = ({ children }: { children: ReactNode }) => (
    <MantineProvider theme={theme} env="test">
      <Provider value={client}>
        {children}
        <ReauthModal />
      </Provider>
    </MantineProvider>
  );
  return renderHook(() => useApiMutation(Save), { wrapper }).result;
}

describe('<ReauthModal> with useApiMutation', () => {
  it('asks for the password and the TOTP code when MFA is on, then retries the action once', async () => {
    const { client, sent } = server({ mfaEnabled: true });
    const result = mount(client);
    let outcome: Promise<unknown> = Promise.resolve();
    act(() => {
      outcome = result.current.run({ name: 'ci' });
    });
    const dialog = await screen.findByRole('dialog', { name: 'Confirm it is you' });
    fireEvent.change(within(dialog).getByLabelText(/Password/), { target: { value: 'wrong password' } });
    fireEvent.change(within(dialog).getByLabelText(/Authentication code/), { target: { value: '123456' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Confirm' }));
    expect(await within(dialog).findByText('The password is not correct.')).toBeInTheDocument();
    fireEvent.change(within(dialog).getByLabelText(/Password/), { target: { value: 'my password' } });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Confirm' }));
    await act(async () => expect(await outcome).toEqual({ createApiKey: { __typename: 'CreateApiKeyPayload', key: 'kf_new' } }));
    expect(sent.map((request) => request.operation)).toEqual(['CreateKey', 'ReauthMe', 'Reauthenticate', 'Reauthenticate', 'CreateKey']);
    expect(sent[3].variables).toEqual({ input: { password: 'my password', totpCode: '123456' } });
    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Confirm it is you' })).not.toBeInTheDocument());
  });

  it('asks for the password only when MFA is off; Cancel leaves the action undone (not retried)', async () => {
    const { client, sent } = server({ mfaEnabled: false });
    const result = mount(client);
    let outcome: Promise<unknown> = Promise.resolve();
    act(() => {
      outcome = result.current.run({ name: 'ci' });
    });
    const dialog = await screen.findByRole('dialog', { name: 'Confirm it is you' });
    expect(within(dialog).queryByLabelText(/Authentication code/)).not.toBeInTheDocument();
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    await act(async () => expect(await outcome).toBeNull());
    expect(sent.map((request) => request.operation)).toEqual(['CreateKey', 'ReauthMe']);
  });
});
