/** @jsxRuntime automatic */
// Shared pieces of the emails: formatting, the page frame, the table and the button. Templates are React
// components over MJML's (@faire/mjml-react): every value is a JSX child or attribute, so React escapes it by
// construction (no template builds HTML from strings). MJML then turns the markup into table-based,
// inline-styled HTML that renders in Gmail, Outlook and Apple Mail alike; every email also has a plain-text body.

import {
  Mjml,
  MjmlAll,
  MjmlAttributes,
  MjmlBody,
  MjmlButton,
  MjmlColumn,
  MjmlHead,
  MjmlPreview,
  MjmlSection,
  MjmlTable,
  MjmlText,
  MjmlTitle,
  MjmlWrapper,
} from '@faire/mjml-react';
import type { ReactElement, ReactNode } from 'react';
import ReactDOMServer from 'react-dom/server';
import { countdownText, daysUntil } from '../domain/countdown.js';

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

export const MONOSPACE = 'Menlo,Consolas,monospace';

const dateFormat = new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeZone: 'UTC' });
/** "Jul 1, 2026" (UTC). */
export const formatDate = (date: Date) => dateFormat.format(date);
/** The date for an HTML cell, kept on one line. */
export const DateCell = ({ date }: { date: Date }) => <span style={{ whiteSpace: 'nowrap' }}>{formatDate(date)}</span>;

/** The countdown of emails: the one rule (domain/countdown.ts), in words ("in 7 days", "today"). */
export const countdown = (expiresAt: Date, now: Date) => countdownText(daysUntil(expiresAt, now));

export const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

/** An inline-styled table for mj-table: a header row, then rows of cells. */
export function Table({ headers, rows, widths = [], tableLayout }: { headers: string[]; rows: ReactNode[][]; widths?: string[]; tableLayout?: 'fixed' }) {
  return (
    <MjmlTable tableLayout={tableLayout}>
      <tr>
        {headers.map((header, index) => (
          <th
            key={header}
            {...(widths[index] ? { width: widths[index] } : {})}
            style={{ textAlign: 'left', padding: '8px 10px', borderBottom: `2px solid ${COLORS.border}`, color: COLORS.muted, fontSize: '12px', fontWeight: 600, textTransform: 'uppercase', letterSpacing: '0.03em', wordBreak: 'keep-all', overflowWrap: 'normal' }}
          >
            {header}
          </th>
        ))}
      </tr>
      {rows.map((cells, row) => (
        <tr key={row}>
          {cells.map((cell, index) => (
            <td key={index} style={{ padding: '9px 10px', borderBottom: `1px solid ${COLORS.border}`, verticalAlign: 'top' }}>
              {cell}
            </td>
          ))}
        </tr>
      ))}
    </MjmlTable>
  );
}

export function Button({ href, children }: { href: string; children: string }) {
  return (
    <MjmlButton href={href} backgroundColor={COLORS.brand} color="#ffffff" fontSize="15px" fontWeight="600" borderRadius="6px" innerPadding="12px 24px" padding="16px 24px 24px" align="left">
      {children}
    </MjmlButton>
  );
}

/** The frame: a brand line (the tenant's name for customer emails), a white card, a footer. */
export function Page({ title, preview, brand, footer, children }: { title: string; preview: string; brand: string; footer: ReactNode; children: ReactNode }) {
  return (
    <Mjml>
      <MjmlHead>
        <MjmlTitle>{title}</MjmlTitle>
        <MjmlPreview>{preview}</MjmlPreview>
        <MjmlAttributes>
          <MjmlAll fontFamily="-apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif" />
          <MjmlText fontSize="15px" lineHeight="22px" color={COLORS.text} padding="8px 24px" />
          <MjmlTable fontSize="14px" lineHeight="20px" color={COLORS.text} padding="8px 24px" />
        </MjmlAttributes>
      </MjmlHead>
      <MjmlBody backgroundColor={COLORS.page} width="600px">
        <MjmlSection padding="24px 0 12px">
          <MjmlColumn>
            <MjmlText fontSize="14px" fontWeight="700" color={COLORS.muted} letterSpacing="0.04em">
              {brand}
            </MjmlText>
          </MjmlColumn>
        </MjmlSection>
        <MjmlWrapper backgroundColor="#ffffff" border={`1px solid ${COLORS.border}`} borderRadius="10px" padding="12px 0">
          {children}
        </MjmlWrapper>
        <MjmlSection padding="12px 0 32px">
          <MjmlColumn>
            <MjmlText fontSize="12px" lineHeight="18px" color={COLORS.muted}>
              {footer}
            </MjmlText>
          </MjmlColumn>
        </MjmlSection>
      </MjmlBody>
    </Mjml>
  );
}

/** React's own text escaping, for a value put into already-rendered HTML (the customer template's slots). */
export const escapeText = (value: string) => ReactDOMServer.renderToStaticMarkup(<>{value}</>);

type Mjml2Html = (input: string, options: { validationLevel: 'strict'; fonts: Record<string, string> }) => Promise<{ html: string }>;
let compiler: Promise<Mjml2Html> | undefined;

/** An email component → HTML. The MJML compiler is loaded on first use (it takes a moment); invalid MJML throws. */
export async function renderEmail(email: ReactElement): Promise<string> {
  const mjml = ReactDOMServer.renderToStaticMarkup(email);
  compiler ??= import('mjml').then((module) => module.default as unknown as Mjml2Html);
  // fonts: {} — MJML would otherwise link Google Fonts for "Roboto" in the font stack: a request to a third
  // party from every reader's mail client (their IP address, when they read it), and blocked offline.
  const { html } = await (await compiler)(mjml, { validationLevel: 'strict', fonts: {} });
  return html;
}
