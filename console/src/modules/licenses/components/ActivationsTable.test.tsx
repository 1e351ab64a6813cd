import { fireEvent, screen } from '@testing-library/react';
import { cacheExchange } from '@urql/exchange-graphcache';
import { Client, fetchExchange, Provider } from 'urql';
import { cacheConfig } from '../../../lib/client';
import { describe, expect, it } from 'vitest';
import { renderUi } from '../../../test/render';
import { ActivationsTable } from './ActivationsTable';

/** A GraphQL endpoint serving 25 activations of one license, 20 per page, recording the variables it was asked. */
function activationsServer() {
  const asked: { first?: number; after?: string | null }[] = [];
  const activation = (n: number) => ({
    __typename: 'Activation', id: `act-${n}`, active: n > 4, offline: n === 5, deviceId: `dev-${n}`, deviceName: `Device ${n}`, version: null, userEmail: null,
    ip: null, createdAt: '2026-06-01T12:00:00.000Z', lastSeenAt: '2026-06-01T12:00:00.000Z', deactivatedAt: n > 4 ? null : '2026-06-02T12:00:00.000Z',
  });
  const client = new Client({
    url: 'http://console.test/graphql',
    exchanges: [cacheExchange(cacheConfig), fetchExchange],
    fetch: async (url, init) => {
      // Queries go as GET (variables in the URL) when short enough, else as a POST body.
      const variables = init?.body ? JSON.parse(String(init.body)).variables : JSON.parse(new URL(String(url)).searchParams.get('variables') ?? '{}');
      asked.push(variables);
      const second = variables.after === 'cursor-20';
      const nodes = (second ? [21, 22, 23, 24, 25] : Array.from({ length: 20 }, (_, i) => i + 1)).map(activation);
      const license = {
        __typename: 'License', id: 'lic-1', currentActivations: 21,
        activations: { __typename: 'ActivationConnection', totalCount: 25, totalCountCapped: false, nodes, pageInfo: { __typename: 'PageInfo', endCursor: second ? 'cursor-25' : 'cursor-20', hasNextPage: !second } },
      };
      return new Response(JSON.stringify({ data: { license } }), { headers: { 'content-type': 'application/json' } });
    },
  });
  return { client, asked };
}

describe('<ActivationsTable>', () => {
  it('shows a page of activations with the counts, and loads the next page with the cursor (graphcache merges them)', async () => {
    const { client, asked } = activationsServer();
    renderUi(
      <Provider value={client}>
        <ActivationsTable licenseId="lic-1" canManage />
      </Provider>,
    );
    expect(await screen.findByText('Showing 20 of 25')).toBeInTheDocument();
    expect(screen.getAllByTestId('activation-row')).toHaveLength(20);
    expect(screen.getByText(/21 active · 25 in all/)).toBeInTheDocument();
    expect(asked[0]).toMatchObject({ id: 'lic-1', first: 20 });

    fireEvent.click(screen.getByRole('button', { name: 'Load more' }));
    expect(await screen.findByText('Showing 25 of 25')).toBeInTheDocument();
    expect(screen.getAllByTestId('activation-row')).toHaveLength(25);
    expect(screen.queryByRole('button', { name: 'Load more' })).toBeNull();
    expect(asked.at(-1)).toMatchObject({ id: 'lic-1', first: 20, after: 'cursor-20' });
  });
});
