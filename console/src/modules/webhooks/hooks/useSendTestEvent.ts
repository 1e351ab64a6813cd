import { notifyError, notifySuccess } from '../../../ui/notify';
import { useApiMutation } from '../../../ui/useApiMutation';
import { SendTestWebhookEventMutation, type WebhookDelivery } from '../graphql/documents';

type Outcome = Pick<WebhookDelivery, 'status' | 'responseCode' | 'lastError'>;

/** The test event is sent before the mutation answers: say how it went. */
export function testOutcome(delivery: Outcome) {
  const answer = delivery.responseCode ? `answered ${delivery.responseCode}` : (delivery.lastError ?? 'no answer');
  if (delivery.status === 'SUCCEEDED') return `Test event delivered: the endpoint ${answer}.`;
  if (delivery.status === 'FAILED') return `Test event failed: ${answer}.`;
  return `Test event not delivered yet (${answer}): it is retried automatically.`;
}

/** "Send test event": a `webhook.test` to one endpoint, its outcome told in a notification. */
export function useSendTestEvent() {
  const test = useApiMutation(SendTestWebhookEventMutation);
  const send = async (endpointId: string) => {
    const delivery = (await test.run({ endpointId }))?.sendTestWebhookEvent.delivery;
    if (!delivery) return;
    if (delivery.status === 'SUCCEEDED') notifySuccess(testOutcome(delivery));
    else notifyError(testOutcome(delivery), 'Test event not delivered');
  };
  return { send, sending: test.saving };
}
