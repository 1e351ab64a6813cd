import { button, esc, formatDate, mjmlToHtml, page, type RenderedEmail } from './layout.js';

export interface TestEmailData {
  tenantName: string;
  to: string;
  now: Date;
  dashboardUrl: string;
}

/** "Send test email" on the Emails page: proves the mail setup end to end, to the admin who asked. */
export async function renderTestEmail(data: TestEmailData): Promise<RenderedEmail> {
  const subject = `${data.tenantName}: test email from Keyforge`;
  const body = `
    <mj-section padding="8px 0"><mj-column>
      <mj-text font-size="20px" line-height="28px" font-weight="700" padding="8px 24px 0">Email delivery works</mj-text>
      <mj-text>You asked for this test on ${esc(formatDate(data.now))} from the Emails page of ${esc(data.tenantName)}. Digests and expiry alerts reach ${esc(data.to)} the same way.</mj-text>
      ${button(data.dashboardUrl, 'Open the dashboard')}
    </mj-column></mj-section>`;
  const html = await mjmlToHtml(page({ title: subject, preview: 'Email delivery works', brand: 'Keyforge', body, footer: `Sent to ${esc(data.to)} because you asked for a test email.` }));
  const text = [`Email delivery works`, '', `You asked for this test from the Emails page of ${data.tenantName}.`, `Digests and expiry alerts reach ${data.to} the same way.`, '', `Open the dashboard: ${data.dashboardUrl}`].join('\n');
  return { subject, html, text };
}
