/** @jsxRuntime automatic */
import { MjmlColumn, MjmlSection, MjmlText } from '@faire/mjml-react';
import { Button, Page, formatDate, renderEmail, type RenderedEmail } from './layout.js';

export interface WebhookDisabledData {
  tenantName: string;
  to: string;
  url: string;
  failedEvents: number;
  lastError: string | null;
  now: Date;
  settingsUrl: string;
}

/** To a tenant's admins when an endpoint was disabled after repeated failed deliveries. */
export async function renderWebhookDisabledEmail(data: WebhookDisabledData): Promise<RenderedEmail> {
  const subject = `${data.tenantName}: webhook endpoint disabled after ${data.failedEvents} failed events`;
  const html = await renderEmail(
    <Page title={subject} preview={`Deliveries to ${data.url} kept failing`} brand="Keyforge" footer={`Sent to ${data.to}, an admin of ${data.tenantName}.`}>
      <MjmlSection padding="8px 0">
        <MjmlColumn>
          <MjmlText fontSize="20px" lineHeight="28px" fontWeight="700" padding="8px 24px 0">
            Webhook endpoint disabled
          </MjmlText>
          <MjmlText>
            On {formatDate(data.now)}, {data.failedEvents} events in a row could not be delivered to {data.url}, so Keyforge stopped sending to it.
            {data.lastError ? ` The last attempt answered: ${data.lastError}` : ''}
          </MjmlText>
          <MjmlText>Fix the receiver, enable the endpoint again and resend the failed deliveries from the delivery log.</MjmlText>
          <Button href={data.settingsUrl}>Open the webhook settings</Button>
        </MjmlColumn>
      </MjmlSection>
    </Page>,
  );
  const text = [
    'Webhook endpoint disabled',
    '',
    `${data.failedEvents} events in a row could not be delivered to ${data.url}, so Keyforge stopped sending to it.`,
    ...(data.lastError ? [`The last attempt answered: ${data.lastError}`] : []),
    'Fix the receiver, enable the endpoint again and resend the failed deliveries from the delivery log.',
    '',
    `Open the webhook settings: ${data.settingsUrl}`,
  ].join('\n');
  return { subject, html, text };
}
