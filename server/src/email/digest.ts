import { COLORS, button, dateCell, esc, formatDate, mjmlToHtml, page, plural, table, type RenderedEmail } from './layout.js';
import { digestHighlights, type Highlight } from '../services/notifications/thresholds.js';

/** Everything the weekly digest shows (spec §6.1). */
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

function stat(label: string, value: number, highlight: Highlight): string {
  const color = highlight === 'red' ? COLORS.red : highlight === 'amber' ? COLORS.amber : COLORS.text;
  const background = highlight === 'red' ? COLORS.redBg : highlight === 'amber' ? COLORS.amberBg : COLORS.greyBg;
  const border = highlight ? color : COLORS.border;
  return `<mj-column width="50%" padding="6px">
        <mj-text padding="0"><div class="stat" data-highlight="${highlight ?? 'none'}" style="background:${background};border:1px solid ${border};border-radius:8px;padding:12px 14px">
          <div style="font-size:12px;color:${COLORS.muted};font-weight:600;text-transform:uppercase;letter-spacing:0.03em">${esc(label)}</div>
          <div style="font-size:28px;line-height:36px;font-weight:700;color:${color}">${esc(value)}</div>
        </div></mj-text>
      </mj-column>`;
}

export async function renderDigestEmail(data: DigestData): Promise<RenderedEmail> {
  const highlights = digestHighlights(data);
  const week = formatDate(data.weekOf);
  const subject = `Weekly license digest for ${data.tenantName}: ${plural(data.activeLicenses, 'active license')}, ${data.expiringIn7Days} expiring this week`;
  const rows = data.upcoming.map((item) => [esc(item.productName), item.customerEmail ? esc(item.customerEmail) : '—', dateCell(item.expiresAt)]);
  const upcoming = rows.length
    ? `<mj-table>${table(['Product', 'Customer', 'Expires'], rows)}</mj-table>`
    : `<mj-text color="${COLORS.muted}">No licenses expire in the next 30 days.</mj-text>`;
  const body = `
    <mj-section padding="8px 0 0"><mj-column>
      <mj-text font-size="22px" line-height="30px" font-weight="700" padding="8px 24px 0">Your weekly license digest</mj-text>
      <mj-text color="${COLORS.muted}" padding="4px 24px 8px">${esc(data.tenantName)} · week of ${esc(week)}</mj-text>
    </mj-column></mj-section>
    <mj-section padding="0 18px"><mj-group>
      ${stat('Active Licenses', data.activeLicenses, null)}
      ${stat('Activations (7d)', data.activations7d, null)}
    </mj-group></mj-section>
    <mj-section padding="0 18px"><mj-group>
      ${stat('Expiring in 7 days', data.expiringIn7Days, highlights.expiringIn7Days)}
      ${stat('Expiring in 30 days', data.expiringIn30Days, highlights.expiringIn30Days)}
    </mj-group></mj-section>
    <mj-section padding="8px 0 0"><mj-column>
      <mj-text font-size="17px" font-weight="700" padding="12px 24px 0">Upcoming expiries</mj-text>
      ${upcoming}
      ${button(data.dashboardUrl, 'Open the dashboard')}
    </mj-column></mj-section>`;
  const html = await mjmlToHtml(
    page({
      title: subject,
      preview: `${data.activeLicenses} active, ${data.activations7d} activations, ${data.expiringIn7Days} expiring within 7 days`,
      brand: 'Keyforge',
      body,
      footer: `You receive this digest every Monday as a CompanyAdmin of ${esc(data.tenantName)}. Turn it off under notification preferences in the <a href="${esc(data.dashboardUrl)}" style="color:${COLORS.muted}">dashboard</a>.`,
    }),
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
