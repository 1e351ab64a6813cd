/** @jsxRuntime automatic */
import { MjmlColumn, MjmlSection, MjmlText } from '@faire/mjml-react';
import { Button, Page, formatDate, renderEmail, type RenderedEmail } from './layout.js';

export interface TestEmailData {
  tenantName: string;
  to: string;
  now: Date;
  dashboardUrl: string;
}

/** "Send test email" on the Emails page: proves the mail setup end to end, to the admin who asked. */
export async function renderTestEmail(data: TestEmailData): Promise<RenderedEmail> {
  const subject = `${data.tenantName}: test email from Keyforge`;
  const html = await renderEmail(
    <Page title={subject} preview="Email delivery works" brand="Keyforge" footer={`Sent to ${data.to} because you asked for a test email.`}>
      <MjmlSection padding="8px 0">
        <MjmlColumn>
          <MjmlText fontSize="20px" lineHeight="28px" fontWeight="700" padding="8px 24px 0">
            Email delivery works
          </MjmlText>
          <MjmlText>
            You asked for this test on {formatDate(data.now)} from the Emails page of {data.tenantName}. Digests and expiry alerts reach {data.to} the same way.
          </MjmlText>
          <Button href={data.dashboardUrl}>Open the dashboard</Button>
        </MjmlColumn>
      </MjmlSection>
    </Page>,
  );
  const text = [`Email delivery works`, '', `You asked for this test from the Emails page of ${data.tenantName}.`, `Digests and expiry alerts reach ${data.to} the same way.`, '', `Open the dashboard: ${data.dashboardUrl}`].join('\n');
  return { subject, html, text };
}
