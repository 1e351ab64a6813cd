import { fireEvent, screen, waitFor } from '@testing-library/react';
import { Client, fetchExchange, Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { renderUi } from '../../../test/render';
import { earliestRenewal, LifecycleActions, type LifecycleLicense } from './LifecycleActions';

const LICENSE: LifecycleLicense = { id: 'lic-1', keyHint: 'ACME-…-WZ3P', status: 'ACTIVE', expiresAt: '2099-07-01T23:59:59.999Z', customerEmail: 'old@customer.test', product: { name: 'Studio' } };

/** A GraphQL endpoint recording each mutation; `answer` decides the response body. */
function server(answer: (operation: string, variables: Record<string, unknown>) => unknown = () => ({ data: null })) {
  const sent: { operation: string; variables: Record<string, unknown> }[] = [];
  const client = new Client({
    url: 'http://console.test/graphql',
    exchanges: [fetchExchange],
    fetch: async (_url, init) => {
      const body = JSON.parse(String(init?.body));
      const operation = /mutation (\w+)/.exec(body.query)![1];
      sent.push({ operation, variables: body.variables });
      return new Response(JSON.stringify(answer(operation, body.variables)), { headers: { 'content-type': 'application/json' } });
    },
  });
  return { client, sent };
}

const licenseData = (field: string, license: Partial<LifecycleLicense> = {}) => ({ data: { [field]: { __typename: 'X', license: { __typename: 'License', ...LICENSE, ...license } } } });

describe('<LifecycleActions>', () => {
  it('an active license offers Suspend, Renew and Transfer; suspending asks first, then sends its id', async () => {
    const { client, sent } = server(() => licenseData('suspendLicense', { status: 'SUSPENDED' }));
    renderUi(<Provider value={client}><LifecycleActions license={LICENSE} /></Provider>);
    expect(screen.queryByRole('button', { name: 'Reinstate' })).toBeNull();
    expect(screen.getByRole('button', { name: 'Renew' })).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Transfer' })).toBeInTheDocument();
    fireEvent.click(screen.getByRole('button', { name: 'Suspend' }));
    expect(sent).toEqual([]);
    fireEvent.click(await screen.findByRole('button', { name: 'Suspend license' }));
    await waitFor(() => expect(sent).toEqual([{ operation: 'SuspendLicense', variables: { id: 'lic-1' } }]));
  });

  it('renew proposes the day after the current expiry and sends the chosen day, end of day UTC', async () => {
    expect(earliestRenewal('2026-07-01T23:59:59.999Z', new Date('2026-06-01T00:00:00Z'))).toBe('2026-07-02');
    expect(earliestRenewal('2026-05-01T00:00:00.000Z', new Date('2026-06-01T12:00:00Z'))).toBe('2026-06-02');
    const { client, sent } = server(() => licenseData('renewLicense'));
    renderUi(<Provider value={client}><LifecycleActions license={LICENSE} /></Provider>);
    fireEvent.click(screen.getByRole('button', { name: 'Renew' }));
    const input = (await screen.findByLabelText('New expiry date (UTC, end of day)')) as HTMLInputElement;
    expect(input.value).toBe('2099-07-02');
    fireEvent.change(input, { target: { value: '2100-07-01' } });
    fireEvent.click(screen.getByRole('button', { name: 'Renew license' }));
    await waitFor(() => expect(sent).toEqual([{ operation: 'RenewLicense', variables: { id: 'lic-1', expiresAt: '2100-07-01T23:59:59.999Z' } }]));
  });

  it('transfer shows the server’s field error on the email input', async () => {
    const { client, sent } = server(() => ({ data: null, errors: [{ message: 'Invalid input: customerEmail: Invalid email address', extensions: { code: 'InvalidRequest', fields: { customerEmail: 'Invalid email address' } } }] }));
    renderUi(<Provider value={client}><LifecycleActions license={LICENSE} /></Provider>);
    fireEvent.click(screen.getByRole('button', { name: 'Transfer' }));
    fireEvent.change(await screen.findByLabelText('New customer email'), { target: { value: 'nope@' } });
    fireEvent.click(screen.getByRole('button', { name: 'Transfer license' }));
    expect(await screen.findByText('Invalid email address')).toBeInTheDocument();
    expect(sent).toEqual([{ operation: 'TransferLicense', variables: { id: 'lic-1', customerEmail: 'nope@' } }]);
  });

  it('a suspended license offers Reinstate instead of Suspend; a revoked one offers nothing', () => {
    const { client } = server();
    const { unmount } = renderUi(<Provider value={client}><LifecycleActions license={{ ...LICENSE, status: 'SUSPENDED' }} /></Provider>);
    expect(screen.getByRole('button', { name: 'Reinstate' })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Suspend' })).toBeNull();
    unmount();
    renderUi(<Provider value={client}><LifecycleActions license={{ ...LICENSE, status: 'REVOKED' }} /></Provider>);
    expect(screen.queryByRole('button')).toBeNull();
  });
});
