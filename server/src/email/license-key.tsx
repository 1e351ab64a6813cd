/** @jsxRuntime automatic */
import { MjmlColumn, MjmlSection, MjmlText } from '@faire/mjml-react';
import { Button, Page, formatDate, renderEmail, type RenderedEmail } from './layout.js';

export interface LicenseKeyEmailData {
  tenantName: string;
  productName: string;
  planName: string | null;
  to: string;
  /** What the bodies show where the key goes: the stored bodies carry a placeholder, delivery renders the key in (notifications/sealed-token.ts). */
  keyText: string;
  expiresAt: Date | null;
  maxActivations: number;
  /** The company's customer portal (`<PUBLIC_URL>/portal/<handle>`) when it is on: where the customer sees the license and frees devices. */
  portalUrl: string | null;
}

/** A purchase through a connected payment provider: the customer's license key. */
export async function renderLicenseKeyEmail(data: LicenseKeyEmailData): Promise<RenderedEmail> {
  const what = data.planName ? `${data.productName} (${data.planName})` : data.productName;
  const subject = `Your ${what} license key`;
  const validity = data.expiresAt ? `It is valid until ${formatDate(data.expiresAt)} and renews with your subscription.` : 'It does not expire.';
  const seats = `It activates on up to ${data.maxActivations} device${data.maxActivations === 1 ? '' : 's'}.`;
  const html = await renderEmail(
    <Page title={subject} preview={`Thank you for buying ${what}.`} brand={data.tenantName} footer={`Sent to ${data.to} because you bought ${what} from ${data.tenantName}.`}>
      <MjmlSection padding="8px 0">
        <MjmlColumn>
          <MjmlText fontSize="20px" lineHeight="28px" fontWeight="700" padding="8px 24px 0">
            Thank you for buying {what}
          </MjmlText>
          <MjmlText>Your license key:</MjmlText>
          <MjmlText fontSize="18px" fontFamily="ui-monospace, Menlo, Consolas, monospace" fontWeight="700">
            {data.keyText}
          </MjmlText>
          <MjmlText>
            {validity} {seats} Keep this email: the key is the proof of your purchase.
          </MjmlText>
          {data.portalUrl ? <MjmlText>See your licenses and devices, and free a device you no longer use, in the {data.tenantName} customer portal: sign in with this email address.</MjmlText> : null}
          {data.portalUrl ? <Button href={data.portalUrl}>Open the customer portal</Button> : null}
        </MjmlColumn>
      </MjmlSection>
    </Page>,
  );
  const portal = data.portalUrl ? ['', `See your licenses and devices, and free a device you no longer use, in the ${data.tenantName} customer portal (sign in with this email address): ${data.portalUrl}`] : [];
  const text = [`Thank you for buying ${what}`, '', `Your license key: ${data.keyText}`, '', `${validity} ${seats}`, 'Keep this email: the key is the proof of your purchase.', ...portal].join('\n');
  return { subject, html, text };
}
