/** @jsxRuntime automatic */
import { MjmlColumn, MjmlSection, MjmlText } from '@faire/mjml-react';
import { Button, Page, formatDate, renderEmail, type RenderedEmail } from './layout.js';

export interface InvitationEmailData {
  tenantName: string;
  to: string;
  invitedBy: string;
  role: 'CompanyAdmin' | 'ReadOnly';
  expiresAt: Date;
  acceptUrl: string;
}

const ROLE_WORDS = { CompanyAdmin: 'an admin', ReadOnly: 'a read-only member' } as const;

/** "Invite by email" on the Team page: a one-time link to join the company and choose a password. */
export async function renderInvitationEmail(data: InvitationEmailData): Promise<RenderedEmail> {
  const subject = `${data.tenantName}: you are invited to join the team on Keyforge`;
  const intro = `${data.invitedBy} invited you to join ${data.tenantName} on Keyforge as ${ROLE_WORDS[data.role]}.`;
  const expiry = `The link works once and expires on ${formatDate(data.expiresAt)}. If you did not expect this invitation, ignore this email.`;
  const html = await renderEmail(
    <Page title={subject} preview={intro} brand={data.tenantName} footer={`Sent to ${data.to} because ${data.invitedBy} invited you.`}>
      <MjmlSection padding="8px 0">
        <MjmlColumn>
          <MjmlText fontSize="20px" lineHeight="28px" fontWeight="700" padding="8px 24px 0">
            Join {data.tenantName}
          </MjmlText>
          <MjmlText>{intro} Choose your password to sign in.</MjmlText>
          <Button href={data.acceptUrl}>Accept the invitation</Button>
          <MjmlText fontSize="13px" lineHeight="20px">
            {expiry}
          </MjmlText>
        </MjmlColumn>
      </MjmlSection>
    </Page>,
  );
  const text = [`Join ${data.tenantName}`, '', intro, '', `Accept the invitation and choose your password: ${data.acceptUrl}`, '', expiry].join('\n');
  return { subject, html, text };
}
