/** @jsxRuntime automatic */
import { MjmlColumn, MjmlGroup, MjmlSection, MjmlText } from '@faire/mjml-react';
import { COLORS, Button, DateCell, Page, Table, formatDate, plural, renderEmail, type RenderedEmail } from './layout.js';
import { digestHighlights, type Highlight } from '../domain/notification-thresholds.js';

/** Everything the weekly digest shows (docs/operate/jobs-and-email.md). */
export interface DigestData {
  tenantName: string;
  /** Monday of the digest's ISO week. */
  weekOf: Date;
  activeLicenses: number;
  activations7d: number;
  expiringIn7Days: number;
  expiringIn30Days: number;
  /** Up to 5, soonest first. */
  upcoming: { productName: string; customerEmail: string | null; expiresAt: Date }[];
  dashboardUrl: string;
}

function Stat({ label, value, highlight }: { label: string; value: number; highlight: Highlight }) {
  const color = highlight === 'red' ? COLORS.red : highlight === 'amber' ? COLORS.amber : COLORS.text;
  const background = highlight === 'red' ? COLORS.redBg : highlight === 'amber' ? COLORS.amberBg : COLORS.greyBg;
  const border = highlight ? color : COLORS.border;
  return (
    <MjmlColumn width="50%" padding="6px">
      <MjmlText padding="0">
        <div className="stat" data-highlight={highlight ?? 'none'} style={{ background, border: `1px solid ${border}`, borderRadius: '8px', padding: '12px 14px' }}>
          <div style={{ fontSize: '12px', color: COLORS.muted, fontWeight: 600, textTransform: 'uppercase', letterSpacing: '0.03em' }}>{label}</div>
          <div style={{ fontSize: '28px', lineHeight: '36px', fontWeight: 700, color }}>{value}</div>
        </div>
      </MjmlText>
    </MjmlColumn>
  );
}

export async function renderDigestEmail(data: DigestData): Promise<RenderedEmail> {
  const highlights = digestHighlights(data);
  const week = formatDate(data.weekOf);
  const subject = `Weekly license digest for ${data.tenantName}: ${plural(data.activeLicenses, 'active license')}, ${data.expiringIn7Days} expiring this week`;
  const rows = data.upcoming.map((item) => [item.productName, item.customerEmail ?? '—', <DateCell date={item.expiresAt} />]);
  const html = await renderEmail(
    <Page
      title={subject}
      preview={`${data.activeLicenses} active, ${data.activations7d} activations, ${data.expiringIn7Days} expiring within 7 days`}
      brand="Keyforge"
      footer={
        <>
          You receive this digest every Monday as a CompanyAdmin of {data.tenantName}. Turn it off under notification preferences in the{' '}
          <a href={data.dashboardUrl} style={{ color: COLORS.muted }}>
            dashboard
          </a>
          .
        </>
      }
    >
      <MjmlSection padding="8px 0 0">
        <MjmlColumn>
          <MjmlText fontSize="22px" lineHeight="30px" fontWeight="700" padding="8px 24px 0">
            Your weekly license digest
          </MjmlText>
          <MjmlText color={COLORS.muted} padding="4px 24px 8px">
            {data.tenantName} · week of {week}
          </MjmlText>
        </MjmlColumn>
      </MjmlSection>
      <MjmlSection padding="0 18px">
        <MjmlGroup>
          <Stat label="Active Licenses" value={data.activeLicenses} highlight={null} />
          <Stat label="Activations (7d)" value={data.activations7d} highlight={null} />
        </MjmlGroup>
      </MjmlSection>
      <MjmlSection padding="0 18px">
        <MjmlGroup>
          <Stat label="Expiring in 7 days" value={data.expiringIn7Days} highlight={highlights.expiringIn7Days} />
          <Stat label="Expiring in 30 days" value={data.expiringIn30Days} highlight={highlights.expiringIn30Days} />
        </MjmlGroup>
      </MjmlSection>
      <MjmlSection padding="8px 0 0">
        <MjmlColumn>
          <MjmlText fontSize="17px" fontWeight="700" padding="12px 24px 0">
            Upcoming expiries
          </MjmlText>
          {rows.length ? <Table headers={['Product', 'Customer', 'Expires']} rows={rows} /> : <MjmlText color={COLORS.muted}>No licenses expire in the next 30 days.</MjmlText>}
          <Button href={data.dashboardUrl}>Open the dashboard</Button>
        </MjmlColumn>
      </MjmlSection>
    </Page>,
  );
  const flag = (highlight: Highlight) => (highlight === 'red' ? '  (!) needs attention' : highlight === 'amber' ? '  (!) more than 5' : '');
  const text = [
    `Your weekly license digest — ${data.tenantName}, week of ${week}`,
    '',
    `Active licenses:      ${data.activeLicenses}`,
    `Activations (7 days): ${data.activations7d}`,
    `Expiring in 7 days:   ${data.expiringIn7Days}${flag(highlights.expiringIn7Days)}`,
    `Expiring in 30 days:  ${data.expiringIn30Days}${flag(highlights.expiringIn30Days)}`,
    '',
    'Upcoming expiries:',
    ...(data.upcoming.length
      ? data.upcoming.map((item) => `- ${item.productName} — ${item.customerEmail ?? 'no customer email'} — ${formatDate(item.expiresAt)}`)
      : ['No licenses expire in the next 30 days.']),
    '',
    `Open the dashboard: ${data.dashboardUrl}`,
    '',
    'You receive this digest every Monday as a CompanyAdmin; turn it off under notification preferences.',
  ].join('\n');
  return { subject, html, text };
}
