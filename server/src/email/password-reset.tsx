/** @jsxRuntime automatic */
import { MjmlColumn, MjmlSection, MjmlText } from '@faire/mjml-react';
import { Button, Page, renderEmail, type RenderedEmail } from './layout.js';

export interface PasswordResetEmailData {
  tenantName: string;
  to: string;
  /** Who asked for it: the account holder ("forgot password") or an admin of the company. */
  requestedBy: { kind: 'self' } | { kind: 'admin'; email: string };
  lifetimeMinutes: number;
  resetUrl: string;
}

/** "Forgot password?" on the sign-in page, or an admin's "Send reset link" on the Team page. */
export async function renderPasswordResetEmail(data: PasswordResetEmailData): Promise<RenderedEmail> {
  const subject = `${data.tenantName}: choose a new password for Keyforge`;
  const intro =
    data.requestedBy.kind === 'admin'
      ? `${data.requestedBy.email}, an admin of ${data.tenantName}, sent you a link to choose a new password for ${data.to}.`
      : `Someone (hopefully you) asked to reset the password of ${data.to} on Keyforge.`;
  const terms = `The link works once and expires in ${data.lifetimeMinutes} minutes. Using it signs you out everywhere. If you did not ask for it, ignore this email: your password stays as it is.`;
  const html = await renderEmail(
    <Page title={subject} preview={intro} brand={data.tenantName} footer={`Sent to ${data.to}.`}>
      <MjmlSection padding="8px 0">
        <MjmlColumn>
          <MjmlText fontSize="20px" lineHeight="28px" fontWeight="700" padding="8px 24px 0">
            Choose a new password
          </MjmlText>
          <MjmlText>{intro}</MjmlText>
          <Button href={data.resetUrl}>Choose a new password</Button>
          <MjmlText fontSize="13px" lineHeight="20px">
            {terms}
          </MjmlText>
        </MjmlColumn>
      </MjmlSection>
    </Page>,
  );
  const text = ['Choose a new password', '', intro, '', `Choose a new password: ${data.resetUrl}`, '', terms].join('\n');
  return { subject, html, text };
}
