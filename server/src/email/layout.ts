// Shared pieces of the MJML emails: escaping, formatting, the page frame. MJML turns them into table-based,
// inline-styled HTML that renders in Gmail, Outlook and Apple Mail alike; every email also has a plain-text body.

import { countdownText, daysUntil } from '../services/licensing/countdown.js';

export interface RenderedEmail {
  subject: string;
  html: string;
  text: string;
}

export const COLORS = {
  text: '#1d2939',
  muted: '#667085',
  border: '#eaecf0',
  page: '#f2f4f7',
  brand: '#1d4ed8',
  red: '#d92d20',
  redBg: '#fef3f2',
  amber: '#b54708',
  amberBg: '#fffaeb',
  grey: '#475467',
  greyBg: '#f9fafb',
};

/** Every value that reaches HTML goes through this. */
export const esc = (value: string | number) =>
  String(value).replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);

const dateFormat = new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeZone: 'UTC' });
/** "Jul 1, 2026" (UTC). */
export const formatDate = (date: Date) => dateFormat.format(date);
/** The date for an HTML cell, kept on one line. */
export const dateCell = (date: Date) => `<span style="white-space:nowrap">${esc(formatDate(date))}</span>`;

/** The countdown of emails: the one rule (services/licensing/countdown.ts), in words ("in 7 days", "today"). */
export const countdown = (expiresAt: Date, now: Date) => countdownText(daysUntil(expiresAt, now));

export const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

/** An inline-styled HTML table for mj-table (header row + rows of already-escaped cells). */
export function table(headers: string[], rows: string[][], widths: string[] = []): string {
  const th = headers.map((header, index) => `<th${widths[index] ? ` width="${widths[index]}"` : ''} style="text-align:left;padding:8px 10px;border-bottom:2px solid ${COLORS.border};color:${COLORS.muted};font-size:12px;font-weight:600;text-transform:uppercase;letter-spacing:0.03em">${esc(header)}</th>`);
  const body = rows.map((cells) => `<tr>${cells.map((cell) => `<td style="padding:9px 10px;border-bottom:1px solid ${COLORS.border};vertical-align:top">${cell}</td>`).join('')}</tr>`);
  return `<tr>${th.join('')}</tr>${body.join('')}`;
}

export function button(href: string, label: string): string {
  return `<mj-button href="${esc(href)}" background-color="${COLORS.brand}" color="#ffffff" font-size="15px" font-weight="600" border-radius="6px" inner-padding="12px 24px" padding="16px 24px 24px" align="left">${esc(label)}</mj-button>`;
}

/** The frame: a brand line (the tenant's name for customer emails), a white card, a footer. */
export function page(input: { title: string; preview: string; brand: string; body: string; footer: string }): string {
  return `<mjml>
  <mj-head>
    <mj-title>${esc(input.title)}</mj-title>
    <mj-preview>${esc(input.preview)}</mj-preview>
    <mj-attributes>
      <mj-all font-family="-apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif" />
      <mj-text font-size="15px" line-height="22px" color="${COLORS.text}" padding="8px 24px" />
      <mj-table font-size="14px" line-height="20px" color="${COLORS.text}" padding="8px 24px" />
    </mj-attributes>
  </mj-head>
  <mj-body background-color="${COLORS.page}" width="600px">
    <mj-section padding="24px 0 12px">
      <mj-column><mj-text font-size="14px" font-weight="700" color="${COLORS.muted}" letter-spacing="0.04em">${esc(input.brand)}</mj-text></mj-column>
    </mj-section>
    <mj-wrapper background-color="#ffffff" border="1px solid ${COLORS.border}" border-radius="10px" padding="12px 0">
      ${input.body}
    </mj-wrapper>
    <mj-section padding="12px 0 32px">
      <mj-column><mj-text font-size="12px" line-height="18px" color="${COLORS.muted}">${input.footer}</mj-text></mj-column>
    </mj-section>
  </mj-body>
</mjml>`;
}

type Mjml = (input: string, options: { validationLevel: 'strict'; fonts: Record<string, string> }) => Promise<{ html: string }>;
let compiler: Promise<Mjml> | undefined;

/** MJML → HTML. The compiler is loaded on first use (it takes a moment), and invalid MJML throws. */
export async function mjmlToHtml(mjml: string): Promise<string> {
  compiler ??= import('mjml').then((module) => module.default as unknown as Mjml);
  // fonts: {} — MJML would otherwise link Google Fonts for "Roboto" in the font stack: a request to a third
  // party from every reader's mail client (their IP address, when they read it), and blocked offline.
  const { html } = await (await compiler)(mjml, { validationLevel: 'strict', fonts: {} });
  return html;
}
