import { button, esc, formatDate, mjmlToHtml, page, type RenderedEmail } from './layout.js';

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
  const body = `
    <mj-section padding="8px 0"><mj-column>
      <mj-text font-size="20px" line-height="28px" font-weight="700" padding="8px 24px 0">Join ${esc(data.tenantName)}</mj-text>
      <mj-text>${esc(intro)} Choose your password to sign in.</mj-text>
      ${button(data.acceptUrl, 'Accept the invitation')}
      <mj-text font-size="13px" line-height="20px">${esc(expiry)}</mj-text>
    </mj-column></mj-section>`;
  const html = await mjmlToHtml(page({ title: subject, preview: intro, brand: data.tenantName, body, footer: `Sent to ${esc(data.to)} because ${esc(data.invitedBy)} invited you.` }));
  const text = [`Join ${data.tenantName}`, '', intro, '', `Accept the invitation and choose your password: ${data.acceptUrl}`, '', expiry].join('\n');
  return { subject, html, text };
}
