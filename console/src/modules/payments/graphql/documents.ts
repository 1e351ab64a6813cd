import { graphql, type ResultOf } from '../../../graphql';

export const PaymentIntegrationsQuery = graphql(`
  query PaymentIntegrations {
    paymentIntegrations(first: 50) {
      totalCount
      nodes {
        id
        provider
        name
        webhookUrl
        secretHint
        refundAction
        enabled
      }
    }
    plans(first: 100) {
      nodes {
        id
        name
        product {
          id
          name
        }
      }
    }
  }
`);
export type PaymentIntegration = ResultOf<typeof PaymentIntegrationsQuery>['paymentIntegrations']['nodes'][number];
export type PlanOption = ResultOf<typeof PaymentIntegrationsQuery>['plans']['nodes'][number];

export const PaymentIntegrationDetailQuery = graphql(`
  query PaymentIntegrationDetail($id: ID!) {
    paymentPrices(integrationId: $id, first: 100) {
      totalCount
      nodes {
        id
        priceId
        plan {
          id
          name
        }
      }
    }
    paymentEvents(integrationId: $id, first: 20) {
      totalCount
      nodes {
        id
        providerEventId
        type
        outcome
        detail
        licenseId
        receivedAt
      }
    }
  }
`);

export const CreatePaymentIntegrationMutation = graphql(`
  mutation CreatePaymentIntegration($input: CreatePaymentIntegrationInput!) {
    createPaymentIntegration(input: $input) {
      paymentIntegration {
        id
        webhookUrl
      }
    }
  }
`);

export const UpdatePaymentIntegrationMutation = graphql(`
  mutation UpdatePaymentIntegration($input: UpdatePaymentIntegrationInput!) {
    updatePaymentIntegration(input: $input) {
      paymentIntegration {
        id
        enabled
        refundAction
        secretHint
      }
    }
  }
`);

export const DeletePaymentIntegrationMutation = graphql(`
  mutation DeletePaymentIntegration($input: DeletePaymentIntegrationInput!) {
    deletePaymentIntegration(input: $input) {
      deletedPaymentIntegrationId
    }
  }
`);

export const MapPaymentPriceMutation = graphql(`
  mutation MapPaymentPrice($input: MapPaymentPriceInput!) {
    mapPaymentPrice(input: $input) {
      paymentPriceMapping {
        id
        priceId
      }
    }
  }
`);

export const UnmapPaymentPriceMutation = graphql(`
  mutation UnmapPaymentPrice($input: UnmapPaymentPriceInput!) {
    unmapPaymentPrice(input: $input) {
      deletedPaymentPriceMappingId
    }
  }
`);
