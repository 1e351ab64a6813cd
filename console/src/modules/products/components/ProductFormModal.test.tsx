import { cacheExchange } from '@urql/exchange-graphcache';
import { fireEvent, screen } from '@testing-library/react';
import { Client, fetchExchange, Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { cacheConfig } from '../../../lib/client';
import { renderUi } from '../../../test/render';
import { ProductFormModal } from './ProductFormModal';

/** A GraphQL endpoint that refuses every createProduct with a field error, as the API does (InvalidRequest `fields`). */
function refusingClient() {
  const asked: unknown[] = [];
  const client = new Client({
    url: 'http://console.test/graphql',
    exchanges: [cacheExchange(cacheConfig), fetchExchange],
    fetch: async (_url, init) => {
      asked.push(JSON.parse(String(init?.body)).variables);
      const error = { message: 'A product with this name exists.', extensions: { code: 'InvalidRequest', fields: { name: 'A product with this name exists.' } } };
      return new Response(JSON.stringify({ data: null, errors: [error] }), { headers: { 'content-type': 'application/json' } });
    },
  });
  return { client, asked };
}

describe('<ProductFormModal>', () => {
  it('checks the name before sending, then shows the server’s field error on the input', async () => {
    const { client, asked } = refusingClient();
    renderUi(
      <Provider value={client}>
        <ProductFormModal opened onClose={() => undefined} products={[]} />
      </Provider>,
    );
    const name = await screen.findByRole('textbox', { name: /Name/ });
    fireEvent.change(name, { target: { value: '   ' } });
    fireEvent.blur(name);
    expect(await screen.findByText('Name the product.')).toBeTruthy();
    expect(asked).toHaveLength(0);

    fireEvent.change(name, { target: { value: 'Acme Studio' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create product' }));
    expect(await screen.findByText('A product with this name exists.', { selector: '.mantine-InputWrapper-error' })).toBeTruthy();
    expect(asked).toEqual([{ name: 'Acme Studio', bundleMemberIds: null, renewalUrl: '', deviceFreeLimit: null, deviceFreeWindowDays: 30, allowImportedKeys: false }]);
    expect((name as HTMLInputElement).value).toBe('Acme Studio');
  });
});
