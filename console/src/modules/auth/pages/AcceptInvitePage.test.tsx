import { screen } from '@testing-library/react';
import { Client, Provider, fetchExchange } from 'urql';
import { afterEach, describe, expect, it } from 'vitest';
import { renderUi } from '../../../test/render';
import { AcceptInvitePage, tokenFromHash } from './AcceptInvitePage';

/** A client whose every answer is `data`; records the variables it was asked with (by POST). */
function answering(data: unknown) {
  const asked: unknown[] = [];
  const client = new Client({
    url: 'http://console.test/api/graphql',
    exchanges: [fetchExchange],
    preferGetMethod: false, // as the console's client (lib/client.ts): the token never goes in a URL
    fetch: async (_url, init) => {
      asked.push(JSON.parse(String(init?.body)).variables);
      const body = JSON.stringify({ data });
      return { ok: true, status: 200, statusText: 'OK', headers: new Headers({ 'content-type': 'application/json' }), text: async () => body, json: async () => JSON.parse(body) } as unknown as Response;
    },
  });
  return { client, asked };
}

afterEach(() => window.history.replaceState(null, '', '/'));

describe('accept-invite page', () => {
  it('reads the token from the URL fragment', () => {
    expect(tokenFromHash('#token=kfi_abc-DEF_123')).toBe('kfi_abc-DEF_123');
    expect(tokenFromHash('')).toBe('');
    expect(tokenFromHash('#other=1')).toBe('');
  });

  it('shows the company and address of a usable link', async () => {
    window.history.replaceState(null, '', '/accept-invite#token=kfi_good');
    const { client, asked } = answering({ invitation: { email: 'carol@acme.test', name: 'Carol', role: 'READ_ONLY', companyName: 'Acme Corp', expiresAt: '2026-12-02T07:00:00.000Z' } });
    renderUi(
      <Provider value={client}>
        <AcceptInvitePage />
      </Provider>,
    );
    expect(await screen.findByText('Join Acme Corp')).toBeTruthy();
    expect(screen.getByText('as carol@acme.test')).toBeTruthy();
    expect(asked).toEqual([{ token: 'kfi_good' }]);
  });

  it('an unusable link says so and offers to sign in', async () => {
    window.history.replaceState(null, '', '/accept-invite#token=kfi_used');
    const { client } = answering({ invitation: null });
    renderUi(
      <Provider value={client}>
        <AcceptInvitePage />
      </Provider>,
    );
    expect(await screen.findByText('This invitation link does not work')).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Sign in' }).getAttribute('href')).toBe('/login');
  });
});
