import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { fakeGraphQL } from '../../../test/graphql';
import { renderUi } from '../../../test/render';
import { ReissueKeyAction } from './ReissueKeyAction';

const LICENSE = { id: 'lic-1', keyHint: 'ACME-…-WZ3P', product: { name: 'Studio' } };
const NEW_KEY = 'ACME-7KQ2-M9XH-4TRB-N3W9';

/** A GraphQL endpoint recording each mutation and answering the reissue with `previousKeyValidUntil`. */
function server(previousKeyValidUntil: string | null) {
  return fakeGraphQL(() => ({ reissueLicenseKey: { __typename: 'ReissueLicenseKeyPayload', key: NEW_KEY, previousKeyValidUntil, license: { __typename: 'License', ...LICENSE, keyHint: 'ACME-…-N3W9' } } }));
}

describe('<ReissueKeyAction>', () => {
  it('asks first, sends the chosen overlap, then shows the new key once with a copy button', async () => {
    const { client, sent } = server('2026-06-02T12:00:00.000Z');
    renderUi(<Provider value={client}><ReissueKeyAction license={LICENSE} /></Provider>);
    fireEvent.click(screen.getByRole('button', { name: 'Reissue key' }));
    const confirm = await screen.findByRole('dialog', { name: 'Reissue the key of this license?' });
    expect(within(confirm).getByRole('radio', { name: /Stop the old key now/ })).toBeChecked(); // the default: at once
    fireEvent.click(within(confirm).getByRole('radio', { name: /24 hours/ }));
    expect(sent).toEqual([]);
    fireEvent.click(within(confirm).getByRole('button', { name: 'Reissue key' }));
    await waitFor(() => expect(sent).toEqual([{ id: 'lic-1', overlapHours: 24 }]));
    const shown = await screen.findByRole('dialog', { name: 'New license key' });
    expect(within(shown).getByTestId('secret-value')).toHaveTextContent(NEW_KEY);
    expect(within(shown).getByRole('button', { name: 'Copy license key' })).toBeInTheDocument();
    expect(within(shown).getByText(/The old key keeps working until/)).toBeInTheDocument();
  });

  it('says so when the old key stopped at once', async () => {
    const { client, sent } = server(null);
    renderUi(<Provider value={client}><ReissueKeyAction license={LICENSE} /></Provider>);
    fireEvent.click(screen.getByRole('button', { name: 'Reissue key' }));
    const confirm = await screen.findByRole('dialog', { name: 'Reissue the key of this license?' });
    fireEvent.click(within(confirm).getByRole('button', { name: 'Reissue key' }));
    await waitFor(() => expect(sent).toEqual([{ id: 'lic-1', overlapHours: 0 }]));
    expect(within(await screen.findByRole('dialog', { name: 'New license key' })).getByText(/The old key no longer works\./)).toBeInTheDocument();
  });
});
