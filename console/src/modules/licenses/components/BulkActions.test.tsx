import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { Client, fetchExchange, Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { renderUi } from '../../../test/render';
import { BulkActions, selectionSize } from './BulkActions';

/** A GraphQL endpoint answering the selection count with `total`, recording the operations sent. */
function server(total: { totalCount: number; totalCountCapped: boolean }) {
  const sent: { operation: string; variables: Record<string, unknown> }[] = [];
  const client = new Client({
    url: 'http://console.test/graphql',
    exchanges: [fetchExchange],
    preferGetMethod: false,
    fetch: async (_url, init) => {
      const body = JSON.parse(String(init?.body));
      const operation = /(?:query|mutation) (\w+)/.exec(body.query)![1];
      sent.push({ operation, variables: body.variables });
      const data = operation === 'BulkSelectionCount' ? { bulkSelectionTotal: { __typename: 'BulkSelectionTotal', ...total } } : null;
      return new Response(JSON.stringify({ data }), { headers: { 'content-type': 'application/json' } });
    },
  });
  return { client, sent };
}

async function openDialog(total: { totalCount: number; totalCountCapped: boolean }) {
  const { client, sent } = server(total);
  renderUi(<Provider value={client}><BulkActions filter={{ status: 'ACTIVE', search: 'acme.test' }} selectedIds={[]} canManage onFinished={() => {}} /></Provider>);
  fireEvent.click(screen.getByRole('button', { name: 'Bulk action' }));
  const dialog = await screen.findByRole('dialog', { name: 'Bulk action' });
  return { dialog, sent };
}

describe('<BulkActions> confirmation', () => {
  it('states a count below the cap exactly', async () => {
    const { dialog, sent } = await openDialog({ totalCount: 9_999, totalCountCapped: false });
    await waitFor(() => expect(within(dialog).getByTestId('bulk-confirmation').textContent).toMatch(/^This will suspend 9,999 licenses\./));
    expect(within(dialog).getByRole('button', { name: 'Suspend 9,999 licenses' })).toBeEnabled();
    expect(sent[0]).toEqual({ operation: 'BulkSelectionCount', variables: { selection: { filter: { status: 'ACTIVE', search: 'acme.test' } } } });
  });

  it('says "more than" the cap when the server stopped counting there, and the button names no number', async () => {
    const { dialog } = await openDialog({ totalCount: 10_000, totalCountCapped: true });
    await waitFor(() => expect(within(dialog).getByTestId('bulk-confirmation').textContent).toMatch(/^This will suspend more than 10,000 licenses\./));
    expect(within(dialog).getByRole('button', { name: 'Suspend all matching' })).toBeEnabled();
  });

  it('an exact count of the cap itself is not "more than"', () => {
    expect(selectionSize({ totalCount: 10_000, totalCountCapped: false })).toBe('10,000 licenses');
    expect(selectionSize({ totalCount: 10_000, totalCountCapped: true })).toBe('more than 10,000 licenses');
    expect(selectionSize({ totalCount: 1, totalCountCapped: false })).toBe('1 license');
  });
});
