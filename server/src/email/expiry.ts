import { COLORS, button, countdown, dateCell, esc, formatDate, mjmlToHtml, page, plural, table, type RenderedEmail } from './layout.js';
import type { Threshold } from '../services/notifications/thresholds.js';

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
  /**
   * Most urgent first. `licenses` is what the email lists (the most urgent few, soonest first); `total` how
   * many reached the threshold; the rest are behind `moreUrl` (the console's license list, filtered).
   */
  groups: { threshold: Threshold; total: number; licenses: ExpiringLicense[]; moreUrl: string }[];
}

export async function renderExpiryAdminEmail(data: ExpiryAdminData): Promise<RenderedEmail> {
  const total = data.groups.reduce((sum, group) => sum + group.total, 0);
  const first = new Date(Math.min(...data.groups.flatMap((group) => group.licenses.map((license) => license.expiresAt.getTime()))));
  const subject = `${data.tenantName}: ${plural(total, 'license')} ${total === 1 ? `expires ${countdown(first, data.now)}` : `expire soon, the first ${countdown(first, data.now)}`}`;
  const sections = data.groups.map(({ threshold, total: count, licenses, moreUrl }) => {
    const tone = TONE[threshold];
    const rows = licenses.map((license) => [
      esc(license.productName),
      `<span style="font-family:Menlo,Consolas,monospace;font-size:13px">${esc(license.keyHint)}</span>`,
      `${dateCell(license.expiresAt)}<br><span style="color:${tone.color};font-weight:600">${esc(countdown(license.expiresAt, data.now))}</span>`,
      `${esc(license.currentActivations)} / ${esc(license.maxActivations)}`,
    ]);
    return `<mj-text padding="16px 24px 0"><div class="threshold" data-threshold="${threshold}" style="display:inline-block;background:${tone.background};color:${tone.color};border:1px solid ${tone.color};border-radius:999px;padding:2px 12px;font-size:13px;font-weight:700">${esc(tone.label)} · ${esc(count)}</div></mj-text>
      <mj-table table-layout="fixed">${table(['Product', 'Key', 'Expires', 'Activations'], rows, ['34%', '24%', '24%', '18%'])}</mj-table>${
        count > licenses.length
          ? `\n      <mj-text padding="4px 24px 0"><span class="more" data-more="${count - licenses.length}">…and ${esc(count - licenses.length)} more. <a href="${esc(moreUrl)}" style="color:${COLORS.brand}">See them all in the console</a></span></mj-text>`
          : ''
      }`;
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
    ...data.groups.flatMap(({ threshold, total: count, licenses, moreUrl }) => [
      `${TONE[threshold].label} (${count}):`,
      ...licenses.map(
        (license) => `- ${license.productName} | ${license.keyHint} | ${formatDate(license.expiresAt)} (${countdown(license.expiresAt, data.now)}) | ${license.currentActivations}/${license.maxActivations} activations`,
      ),
      ...(count > licenses.length ? [`…and ${count - licenses.length} more: ${moreUrl}`] : []),
      '',
    ]),
    `Open the dashboard: ${data.dashboardUrl}`,
    '',
    'You receive expiry alerts as a CompanyAdmin; turn them off under notification preferences.',
  ].join('\n');
  return { subject, html, text };
}

/** The vendor as its customers see it: the name brands the email; the contact lines appear when set. */
export interface Vendor {
  name: string;
  renewalUrl: string | null;
  supportEmail: string | null;
}

export interface ExpiryCustomerData {
  vendor: Vendor;
  now: Date;
  threshold: Threshold;
  license: Pick<ExpiringLicense, 'productName' | 'keyHint' | 'expiresAt'>;
}

/** The shorter customer notice, branded with the vendor (tenant) name. */
export async function renderExpiryCustomerEmail(data: ExpiryCustomerData): Promise<RenderedEmail> {
  const { license, vendor } = data;
  const tenantName = vendor.name;
  const when = countdown(license.expiresAt, data.now);
  const subject = `Your ${license.productName} license expires ${when}`;
  const text = [
    `Your license expires ${when}`,
    '',
    `Your ${license.productName} license (${license.keyHint}) from ${tenantName} expires on ${formatDate(license.expiresAt)}.`,
    `To keep using ${license.productName} without interruption, renew it with ${tenantName} before then.`,
    ...(vendor.renewalUrl ? ['', `Renew: ${vendor.renewalUrl}`] : []),
    ...(vendor.supportEmail ? [`Questions? Write to ${vendor.supportEmail}.`] : []),
    '',
    `— ${tenantName}`,
  ].join('\n');
  const values: Record<string, string> = { PRODUCT: license.productName, HINT: license.keyHint, WHEN: when, DATE: formatDate(license.expiresAt) };
  // MJML takes ~7 ms per email: one compile per (tenant, threshold), then only the values change (each
  // escaped, as the template escapes them), in one pass so a value is never scanned again.
  if ([vendor.name, vendor.renewalUrl, vendor.supportEmail].some((value) => value && SLOT.test(value))) return { subject, html: await mjmlToHtml(customerMjml(vendor, data.threshold, values)), text };
  const html = await customerTemplate(vendor, data.threshold);
  return { subject, html: html.replace(SLOTS, (_slot, name: string) => esc(values[name])), text };
}

const SLOT = /KFSLOT/;
const SLOTS = /KFSLOT(PRODUCT|HINT|WHEN|DATE)/g;
const templates = new Map<string, Promise<string>>();

function customerTemplate(vendor: Vendor, threshold: Threshold): Promise<string> {
  const key = JSON.stringify([threshold, vendor.name, vendor.renewalUrl, vendor.supportEmail]);
  let template = templates.get(key);
  if (!template) {
    if (templates.size >= 200) templates.delete(templates.keys().next().value!);
    template = mjmlToHtml(customerMjml(vendor, threshold, { PRODUCT: 'KFSLOTPRODUCT', HINT: 'KFSLOTHINT', WHEN: 'KFSLOTWHEN', DATE: 'KFSLOTDATE' }));
    template.catch(() => templates.delete(key));
    templates.set(key, template);
  }
  return template;
}

function customerMjml(vendor: Vendor, threshold: Threshold, values: Record<'PRODUCT' | 'HINT' | 'WHEN' | 'DATE', string>): string {
  const tenantName = vendor.name;
  const tone = TONE[threshold];
  const { PRODUCT: product, HINT: hint, WHEN: when, DATE: date } = values;
  const body = `
    <mj-section padding="8px 0"><mj-column>
      <mj-text font-size="20px" line-height="28px" font-weight="700" padding="8px 24px 0">Your license expires ${esc(when)}</mj-text>
      <mj-text>Your <strong>${esc(product)}</strong> license (<span style="font-family:Menlo,Consolas,monospace">${esc(hint)}</span>) from ${esc(tenantName)} expires on <strong style="color:${tone.color}">${esc(date)}</strong>.</mj-text>
      <mj-text padding="8px 24px ${vendor.renewalUrl || vendor.supportEmail ? '0' : '16px'}">To keep using ${esc(product)} without interruption, renew it with ${esc(tenantName)} before then.</mj-text>
      ${vendor.renewalUrl ? button(vendor.renewalUrl, 'Renew your license') : ''}
      ${vendor.supportEmail ? `<mj-text padding="0 24px 16px" color="${COLORS.muted}">Questions? Write to <a href="mailto:${esc(vendor.supportEmail)}" style="color:${COLORS.brand}">${esc(vendor.supportEmail)}</a>.</mj-text>` : ''}
    </mj-column></mj-section>`;
  return page({
    title: `Your ${product} license expires ${when}`,
    preview: `${product} expires on ${date}`,
    brand: tenantName,
    body,
    footer: `Sent on behalf of ${esc(tenantName)} because this license was registered with your email address.`,
  });
}
