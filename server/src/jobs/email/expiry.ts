import { COLORS, button, countdown, dateCell, esc, formatDate, mjmlToHtml, page, plural, table, type RenderedEmail } from './layout.js';

export const THRESHOLDS = [30, 7, 1] as const;
export type Threshold = (typeof THRESHOLDS)[number];

/** Spec §6.2: 30 days grey, 7 amber, 1 red. */
const TONE: Record<Threshold, { color: string; background: string; label: string }> = {
  30: { color: COLORS.grey, background: COLORS.greyBg, label: 'Expiring in 30 days' },
  7: { color: COLORS.amber, background: COLORS.amberBg, label: 'Expiring in 7 days' },
  1: { color: COLORS.red, background: COLORS.redBg, label: 'Expiring in 1 day' },
};

export interface ExpiringLicense {
  productName: string;
  /** The display hint (PREFIX-…-LAST), never the key. */
  keyHint: string;
  expiresAt: Date;
  currentActivations: number;
  maxActivations: number;
}

export interface ExpiryAdminData {
  tenantName: string;
  now: Date;
  dashboardUrl: string;
  /** Most urgent first. */
  groups: { threshold: Threshold; licenses: ExpiringLicense[] }[];
}

export async function renderExpiryAdminEmail(data: ExpiryAdminData): Promise<RenderedEmail> {
  const total = data.groups.reduce((sum, group) => sum + group.licenses.length, 0);
  const first = new Date(Math.min(...data.groups.flatMap((group) => group.licenses.map((license) => license.expiresAt.getTime()))));
  const subject = `${data.tenantName}: ${plural(total, 'license')} ${total === 1 ? `expires ${countdown(first, data.now)}` : `expire soon, the first ${countdown(first, data.now)}`}`;
  const sections = data.groups.map(({ threshold, licenses }) => {
    const tone = TONE[threshold];
    const rows = licenses.map((license) => [
      esc(license.productName),
      `<span style="font-family:Menlo,Consolas,monospace;font-size:13px">${esc(license.keyHint)}</span>`,
      `${dateCell(license.expiresAt)}<br><span style="color:${tone.color};font-weight:600">${esc(countdown(license.expiresAt, data.now))}</span>`,
      `${esc(license.currentActivations)} / ${esc(license.maxActivations)}`,
    ]);
    return `<mj-text padding="16px 24px 0"><div class="threshold" data-threshold="${threshold}" style="display:inline-block;background:${tone.background};color:${tone.color};border:1px solid ${tone.color};border-radius:999px;padding:2px 12px;font-size:13px;font-weight:700">${esc(tone.label)} · ${esc(licenses.length)}</div></mj-text>
      <mj-table table-layout="fixed">${table(['Product', 'Key', 'Expires', 'Activations'], rows, ['34%', '24%', '24%', '18%'])}</mj-table>`;
  });
  const body = `
    <mj-section padding="8px 0 0"><mj-column>
      <mj-text font-size="22px" line-height="30px" font-weight="700" padding="8px 24px 0">Licenses expiring soon</mj-text>
      <mj-text color="${COLORS.muted}" padding="4px 24px 0">${esc(plural(total, 'license'))} of ${esc(data.tenantName)} reached an expiry notice today. Renew them or let the customers know.</mj-text>
      ${sections.join('\n')}
      ${button(data.dashboardUrl, 'Open the dashboard')}
    </mj-column></mj-section>`;
  const html = await mjmlToHtml(
    page({
      title: subject,
      preview: `${total} ${total === 1 ? 'license reaches' : 'licenses reach'} an expiry notice today`,
      brand: 'Keyforge',
      body,
      footer: `You receive expiry alerts as a CompanyAdmin of ${esc(data.tenantName)}. Turn them off under notification preferences in the <a href="${esc(data.dashboardUrl)}" style="color:${COLORS.muted}">dashboard</a>; other admins keep theirs.`,
    }),
  );
  const text = [
    `Licenses expiring soon — ${data.tenantName}`,
    '',
    ...data.groups.flatMap(({ threshold, licenses }) => [
      `${TONE[threshold].label} (${licenses.length}):`,
      ...licenses.map(
        (license) => `- ${license.productName} | ${license.keyHint} | ${formatDate(license.expiresAt)} (${countdown(license.expiresAt, data.now)}) | ${license.currentActivations}/${license.maxActivations} activations`,
      ),
      '',
    ]),
    `Open the dashboard: ${data.dashboardUrl}`,
    '',
    'You receive expiry alerts as a CompanyAdmin; turn them off under notification preferences.',
  ].join('\n');
  return { subject, html, text };
}

export interface ExpiryCustomerData {
  tenantName: string;
  now: Date;
  threshold: Threshold;
  license: Pick<ExpiringLicense, 'productName' | 'keyHint' | 'expiresAt'>;
}

/** The shorter customer notice, branded with the vendor (tenant) name. */
export async function renderExpiryCustomerEmail(data: ExpiryCustomerData): Promise<RenderedEmail> {
  const { license, tenantName } = data;
  const when = countdown(license.expiresAt, data.now);
  const tone = TONE[data.threshold];
  const subject = `Your ${license.productName} license expires ${when}`;
  const body = `
    <mj-section padding="8px 0"><mj-column>
      <mj-text font-size="20px" line-height="28px" font-weight="700" padding="8px 24px 0">Your license expires ${esc(when)}</mj-text>
      <mj-text>Your <strong>${esc(license.productName)}</strong> license (<span style="font-family:Menlo,Consolas,monospace">${esc(license.keyHint)}</span>) from ${esc(tenantName)} expires on <strong style="color:${tone.color}">${esc(formatDate(license.expiresAt))}</strong>.</mj-text>
      <mj-text padding="8px 24px 16px">To keep using ${esc(license.productName)} without interruption, renew it with ${esc(tenantName)} before then.</mj-text>
    </mj-column></mj-section>`;
  const html = await mjmlToHtml(
    page({
      title: subject,
      preview: `${license.productName} expires on ${formatDate(license.expiresAt)}`,
      brand: tenantName,
      body,
      footer: `Sent on behalf of ${esc(tenantName)} because this license was registered with your email address.`,
    }),
  );
  const text = [
    `Your license expires ${when}`,
    '',
    `Your ${license.productName} license (${license.keyHint}) from ${tenantName} expires on ${formatDate(license.expiresAt)}.`,
    `To keep using ${license.productName} without interruption, renew it with ${tenantName} before then.`,
    '',
    `— ${tenantName}`,
  ].join('\n');
  return { subject, html, text };
}
