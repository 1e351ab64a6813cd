import { graphql, type ResultOf } from '../../../graphql';

export const WebhookEndpointFields = graphql(`
  fragment WebhookEndpointFields on WebhookEndpoint {
    id
    url
    eventTypes
    enabled
    consecutiveFailures
    disabledReason
    createdAt
  }
`);
export type WebhookEndpoint = ResultOf<typeof WebhookEndpointFields>;

export const WebhookEndpointsQuery = graphql(
  `
    query WebhookEndpoints {
      webhookEndpoints(first: 50) {
        totalCount
        nodes {
          ...WebhookEndpointFields
        }
      }
    }
  `,
  [WebhookEndpointFields],
);

export const WebhookDeliveriesQuery = graphql(`
  query WebhookDeliveries($endpointId: ID!) {
    webhookDeliveries(endpointId: $endpointId, first: 50) {
      totalCount
      nodes {
        id
        eventId
        eventType
        status
        attempts
        nextAttemptAt
        lastAttemptAt
        responseCode
        responseTimeMs
        responseBodyExcerpt
        lastError
        createdAt
      }
    }
  }
`);
export type WebhookDelivery = ResultOf<typeof WebhookDeliveriesQuery>['webhookDeliveries']['nodes'][number];

export const CreateWebhookEndpointMutation = graphql(
  `
    mutation CreateWebhookEndpoint($url: String!, $eventTypes: [WebhookEventType!]) {
      createWebhookEndpoint(input: { url: $url, eventTypes: $eventTypes }) {
        secret
        warning
        endpoint {
          ...WebhookEndpointFields
        }
      }
    }
  `,
  [WebhookEndpointFields],
);

export const UpdateWebhookEndpointMutation = graphql(
  `
    mutation UpdateWebhookEndpoint($id: ID!, $enabled: Boolean) {
      updateWebhookEndpoint(input: { id: $id, enabled: $enabled }) {
        endpoint {
          ...WebhookEndpointFields
        }
      }
    }
  `,
  [WebhookEndpointFields],
);

export const DeleteWebhookEndpointMutation = graphql(`
  mutation DeleteWebhookEndpoint($id: ID!) {
    deleteWebhookEndpoint(input: { id: $id }) {
      endpoint {
        id
      }
    }
  }
`);

export const RotateWebhookSecretMutation = graphql(`
  mutation RotateWebhookSecret($id: ID!) {
    rotateWebhookSecret(input: { id: $id }) {
      secret
      endpoint {
        id
      }
    }
  }
`);

export const ResendWebhookDeliveryMutation = graphql(`
  mutation ResendWebhookDelivery($id: ID!) {
    resendWebhookDelivery(input: { id: $id }) {
      delivery {
        id
        status
        attempts
      }
    }
  }
`);

export const SendTestWebhookEventMutation = graphql(`
  mutation SendTestWebhookEvent($endpointId: ID!) {
    sendTestWebhookEvent(input: { endpointId: $endpointId }) {
      delivery {
        id
        status
        responseCode
        lastError
      }
    }
  }
`);
