import { fireEvent, screen, waitFor } from '@testing-library/react';
import { Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { fakeGraphQL } from '../../../test/graphql';
import { renderUi } from '../../../test/render';
import { PaymentsPage } from './PaymentsPage';

const integration = {
  __typename: 'PaymentIntegration',
  id: 'i1',
  provider: 'STRIPE',
  name: 'Stripe',
  webhookUrl: 'https://licensing.example.com/api/v1/payments/i1/webhook',
  secretHint: '…9876',
  refundAction: 'SUSPEND',
  enabled: true,
};
const plans = { __typename: 'PlanConnection', nodes: [{ __typename: 'Plan', id: 'plan1', name: 'Pro monthly', product: { __typename: 'ProductRef', id: 'p1', name: 'Studio' } }] };

describe('Settings → Payments', () => {
  it('shows the webhook URL to paste, the mapped prices and the received events with their outcome; maps a price', async () => {
    const { client, sent } = fakeGraphQL((variables) => {
      const input = variables.input as Record<string, unknown> | undefined;
      if (input?.priceId) return { mapPaymentPrice: { __typename: 'MapPaymentPricePayload', paymentPriceMapping: { __typename: 'PaymentPriceMapping', id: 'm2', priceId: input.priceId } } };
      if ('id' in variables)
        return {
          paymentPrices: { __typename: 'PaymentPriceMappingConnection', totalCount: 1, nodes: [{ __typename: 'PaymentPriceMapping', id: 'm1', priceId: 'price_pro', plan: { __typename: 'Plan', id: 'plan1', name: 'Pro monthly' } }] },
          paymentEvents: {
            __typename: 'PaymentEventConnection',
            totalCount: 1,
            nodes: [{ __typename: 'PaymentEvent', id: 'e1', providerEventId: 'evt_123', type: 'invoice.paid', outcome: 'APPLIED', detail: 'license created, key emailed', receivedAt: '2026-06-01T12:00:00.000Z' }],
          },
        };
      return { paymentIntegrations: { __typename: 'PaymentIntegrationConnection', totalCount: 1, nodes: [integration] }, plans };
    });
    renderUi(
      <Provider value={client}>
        <PaymentsPage />
      </Provider>,
    );
    expect((await screen.findByTestId('payment-webhook-url')).textContent).toBe(integration.webhookUrl);
    expect(await screen.findByText('price_pro')).toBeTruthy();
    expect(screen.getByText('evt_123')).toBeTruthy();
    expect(screen.getByText('applied')).toBeTruthy();
    expect(screen.getByText('license created, key emailed')).toBeTruthy();
    expect(screen.queryByText(/whsec_/)).toBeNull();
    fireEvent.change(screen.getByLabelText(/Stripe price id/), { target: { value: 'price_team' } });
    fireEvent.click(screen.getByRole('button', { name: 'Map price' }));
    // The plan is required: nothing is sent without one.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sent.some((variables) => (variables.input as { priceId?: string } | undefined)?.priceId)).toBe(false);
  });

  it('says what to do when no provider is connected', async () => {
    const { client } = fakeGraphQL(() => ({ paymentIntegrations: { __typename: 'PaymentIntegrationConnection', totalCount: 0, nodes: [] }, plans }));
    renderUi(
      <Provider value={client}>
        <PaymentsPage />
      </Provider>,
    );
    await waitFor(() => expect(screen.getByText('No payment provider connected')).toBeTruthy());
  });
});
