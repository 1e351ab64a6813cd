/** @jsxRuntime automatic */
import { MjmlColumn, MjmlSection, MjmlText } from '@faire/mjml-react';
import { Button, Page, renderEmail, type RenderedEmail } from './layout.js';

export interface PortalSignInEmailData {
  companyName: string;
  to: string;
  lifetimeMinutes: number;
  signInUrl: string;
}

/** The customer portal's sign-in link (services/portal/sign-in.ts): sent to a customer email on the company's licenses. */
export async function renderPortalSignInEmail(data: PortalSignInEmailData): Promise<RenderedEmail> {
  const subject = `Sign in to ${data.companyName}: your licenses`;
  const intro = `Someone (hopefully you) asked to sign in to ${data.companyName}'s license portal as ${data.to}. There you see your licenses and devices, and free a device you no longer use.`;
  const terms = `The link works once and expires in ${data.lifetimeMinutes} minutes. If you did not ask for it, ignore this email: nobody can sign in without it.`;
  const html = await renderEmail(
    <Page title={subject} preview={intro} brand={data.companyName} footer={`Sent to ${data.to}.`}>
      <MjmlSection padding="8px 0">
        <MjmlColumn>
          <MjmlText fontSize="20px" lineHeight="28px" fontWeight="700" padding="8px 24px 0">
            Sign in to your licenses
          </MjmlText>
          <MjmlText>{intro}</MjmlText>
          <Button href={data.signInUrl}>Sign in</Button>
          <MjmlText fontSize="13px" lineHeight="20px">
            {terms}
          </MjmlText>
        </MjmlColumn>
      </MjmlSection>
    </Page>,
  );
  const text = ['Sign in to your licenses', '', intro, '', `Sign in: ${data.signInUrl}`, '', terms].join('\n');
  return { subject, html, text };
}
