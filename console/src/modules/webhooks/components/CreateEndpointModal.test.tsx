import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { Provider } from 'urql';
import { describe, expect, it, vi } from 'vitest';
import { fakeGraphQL } from '../../../test/graphql';
import { renderUi } from '../../../test/render';
import { CreateEndpointModal } from './CreateEndpointModal';

const SECRET = 'whsec_MfKQ9r3Z2yZ7Jb2m8rVt4Q==';

/** A GraphQL endpoint recording the variables it gets and answering createWebhookEndpoint with `warning`. */
function server(warning: string | null) {
  const endpoint = { __typename: 'WebhookEndpoint', id: 'wh-1', url: 'https://10.0.0.5/hooks', eventTypes: [], enabled: true, consecutiveFailures: 0, disabledReason: null, createdAt: '2026-06-01T00:00:00.000Z' };
  return fakeGraphQL(() => ({ createWebhookEndpoint: { __typename: 'CreateWebhookEndpointPayload', secret: SECRET, warning, endpoint } }));
}

describe('<CreateEndpointModal>', () => {
  it('adds the endpoint, then shows its signing secret once with the server warning; I have stored it closes', async () => {
    const { client, sent } = server('10.0.0.5 is an internal address: deliveries to it are refused.');
    const onClose = vi.fn();
    renderUi(<Provider value={client}><CreateEndpointModal opened onClose={onClose} /></Provider>);
    const form = await screen.findByRole('dialog', { name: 'Add webhook endpoint' });
    fireEvent.change(within(form).getByLabelText(/^URL/), { target: { value: 'https://10.0.0.5/hooks' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Add endpoint' }));
    await waitFor(() => expect(sent).toEqual([{ url: 'https://10.0.0.5/hooks', eventTypes: [] }]));
    const shown = await screen.findByRole('dialog', { name: 'Your signing secret' });
    expect(within(shown).getByTestId('secret-value')).toHaveTextContent(SECRET);
    expect(within(shown).getByText('Deliveries to this URL will be refused')).toBeInTheDocument();
    expect(within(shown).getByRole('button', { name: 'Copy signing secret' })).toBeInTheDocument();
    fireEvent.click(within(shown).getByRole('button', { name: 'I have stored it' }));
    expect(onClose).toHaveBeenCalledOnce();
  });
});
