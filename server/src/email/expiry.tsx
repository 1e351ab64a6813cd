/** @jsxRuntime automatic */
import { MjmlColumn, MjmlSection, MjmlText } from '@faire/mjml-react';
import { COLORS, MONOSPACE, Button, DateCell, Page, Table, countdown, escapeText, formatDate, plural, renderEmail, type RenderedEmail } from './layout.js';
import { countdownSpanText, daysUntil } from '../domain/countdown.js';
import type { Threshold } from '../domain/notification-thresholds.js';

/** 30 days grey, 7 amber, 1 red. */
const TONE: Record<Threshold, { color: string; background: string }> = {
  30: { color: COLORS.grey, background: COLORS.greyBg },
  7: { color: COLORS.amber, background: COLORS.amberBg },
  1: { color: COLORS.red, background: COLORS.redBg },
};

/**
 * A threshold group's heading, by the countdown rule (domain/countdown.ts) of the licenses in it, not the threshold's
 * number: a notice fired the day after its day (a missed run) reads "in 29 days", a group that spans both days
 * "in 6–7 days".
 */
const groupLabel = (group: ExpiryAdminData['groups'][number], now: Date) =>
  `Expiring ${countdownSpanText(daysUntil(group.firstExpiresAt, now), daysUntil(group.lastExpiresAt, now))}`;

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
  groups: { threshold: Threshold; total: number; licenses: ExpiringLicense[]; moreUrl: string; firstExpiresAt: Date; lastExpiresAt: Date }[];
}

function ThresholdGroup({ group, now }: { group: ExpiryAdminData['groups'][number]; now: Date }) {
  const { threshold, total: count, licenses, moreUrl } = group;
  const tone = TONE[threshold];
  const rows = licenses.map((license) => [
    license.productName,
    <span style={{ fontFamily: MONOSPACE, fontSize: '13px' }}>{license.keyHint}</span>,
    <>
      <DateCell date={license.expiresAt} />
      <br />
      <span style={{ color: tone.color, fontWeight: 600 }}>{countdown(license.expiresAt, now)}</span>
    </>,
    `${license.currentActivations} / ${license.maxActivations}`,
  ]);
  return (
    <>
      <MjmlText padding="16px 24px 0">
        <div
          className="threshold"
          data-threshold={threshold}
          style={{ display: 'inline-block', background: tone.background, color: tone.color, border: `1px solid ${tone.color}`, borderRadius: '999px', padding: '2px 12px', fontSize: '13px', fontWeight: 700 }}
        >
          {groupLabel(group, now)} · {count}
        </div>
      </MjmlText>
      <Table tableLayout="fixed" headers={['Product', 'Key', 'Expires', 'Seats']} rows={rows} widths={['34%', '24%', '24%', '18%']} />
      {count > licenses.length ? (
        <MjmlText padding="4px 24px 0">
          <span className="more" data-more={count - licenses.length}>
            …and {count - licenses.length} more.{' '}
            <a href={moreUrl} style={{ color: COLORS.brand }}>
              See them all in the console
            </a>
          </span>
        </MjmlText>
      ) : null}
    </>
  );
}

export async function renderExpiryAdminEmail(data: ExpiryAdminData): Promise<RenderedEmail> {
  const total = data.groups.reduce((sum, group) => sum + group.total, 0);
  const first = new Date(Math.min(...data.groups.flatMap((group) => group.licenses.map((license) => license.expiresAt.getTime()))));
  const subject = `${data.tenantName}: ${plural(total, 'license')} ${total === 1 ? `expires ${countdown(first, data.now)}` : `expire soon, the first ${countdown(first, data.now)}`}`;
  const html = await renderEmail(
    <Page
      title={subject}
      preview={`${total} ${total === 1 ? 'license reaches' : 'licenses reach'} an expiry notice today`}
      brand="Keyforge"
      footer={
        <>
          You receive expiry alerts as a CompanyAdmin of {data.tenantName}. Turn them off under notification preferences in the{' '}
          <a href={data.dashboardUrl} style={{ color: COLORS.muted }}>
            dashboard
          </a>
          ; other admins keep theirs.
        </>
      }
    >
      <MjmlSection padding="8px 0 0">
        <MjmlColumn>
          <MjmlText fontSize="22px" lineHeight="30px" fontWeight="700" padding="8px 24px 0">
            Licenses expiring soon
          </MjmlText>
          <MjmlText color={COLORS.muted} padding="4px 24px 0">
            {plural(total, 'license')} of {data.tenantName} reached an expiry notice today. Renew them or let the customers know.
          </MjmlText>
          {data.groups.map((group) => (
            <ThresholdGroup key={group.threshold} group={group} now={data.now} />
          ))}
          <Button href={data.dashboardUrl}>Open the dashboard</Button>
        </MjmlColumn>
      </MjmlSection>
    </Page>,
  );
  const text = [
    `Licenses expiring soon — ${data.tenantName}`,
    '',
    ...data.groups.flatMap((group) => [
      `${groupLabel(group, data.now)} (${group.total}):`,
      ...group.licenses.map(
        (license) => `- ${license.productName} | ${license.keyHint} | ${formatDate(license.expiresAt)} (${countdown(license.expiresAt, data.now)}) | ${license.currentActivations}/${license.maxActivations} seats`,
      ),
      ...(group.total > group.licenses.length ? [`…and ${group.total - group.licenses.length} more: ${group.moreUrl}`] : []),
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

type SlotValues = Record<'PRODUCT' | 'HINT' | 'WHEN' | 'DATE', string>;

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
  const values: SlotValues = { PRODUCT: license.productName, HINT: license.keyHint, WHEN: when, DATE: formatDate(license.expiresAt) };
  // MJML takes ~7 ms per email: one compile per (tenant, threshold), then only the values change. Each slot
  // sits in text (never in markup or an attribute) and its value is escaped by React's own text escaping, in
  // one pass so a value is never scanned again.
  if ([vendor.name, vendor.renewalUrl, vendor.supportEmail].some((value) => value && SLOT.test(value))) {
    return { subject, html: await renderEmail(<CustomerEmail vendor={vendor} threshold={data.threshold} values={values} />), text };
  }
  const html = await customerTemplate(vendor, data.threshold);
  return { subject, html: html.replace(SLOTS, (_slot, name: keyof SlotValues) => escapeText(values[name])), text };
}

const SLOT = /KFSLOT/;
const SLOTS = /KFSLOT(PRODUCT|HINT|WHEN|DATE)/g;
const templates = new Map<string, Promise<string>>();

function customerTemplate(vendor: Vendor, threshold: Threshold): Promise<string> {
  const key = JSON.stringify([threshold, vendor.name, vendor.renewalUrl, vendor.supportEmail]);
  let template = templates.get(key);
  if (!template) {
    if (templates.size >= 200) templates.delete(templates.keys().next().value!);
    template = renderEmail(<CustomerEmail vendor={vendor} threshold={threshold} values={{ PRODUCT: 'KFSLOTPRODUCT', HINT: 'KFSLOTHINT', WHEN: 'KFSLOTWHEN', DATE: 'KFSLOTDATE' }} />);
    template.catch(() => templates.delete(key));
    templates.set(key, template);
  }
  return template;
}

function CustomerEmail({ vendor, threshold, values }: { vendor: Vendor; threshold: Threshold; values: SlotValues }) {
  const tenantName = vendor.name;
  const tone = TONE[threshold];
  const { PRODUCT: product, HINT: hint, WHEN: when, DATE: date } = values;
  return (
    <Page
      title={`Your ${product} license expires ${when}`}
      preview={`${product} expires on ${date}`}
      brand={tenantName}
      footer={`Sent on behalf of ${tenantName} because this license was registered with your email address.`}
    >
      <MjmlSection padding="8px 0">
        <MjmlColumn>
          <MjmlText fontSize="20px" lineHeight="28px" fontWeight="700" padding="8px 24px 0">
            Your license expires {when}
          </MjmlText>
          <MjmlText>
            Your <strong>{product}</strong> license (<span style={{ fontFamily: MONOSPACE }}>{hint}</span>) from {tenantName} expires on{' '}
            <strong style={{ color: tone.color }}>{date}</strong>.
          </MjmlText>
          <MjmlText padding={`8px 24px ${vendor.renewalUrl || vendor.supportEmail ? '0' : '16px'}`}>
            To keep using {product} without interruption, renew it with {tenantName} before then.
          </MjmlText>
          {vendor.renewalUrl ? <Button href={vendor.renewalUrl}>Renew your license</Button> : null}
          {vendor.supportEmail ? (
            <MjmlText padding="0 24px 16px" color={COLORS.muted}>
              Questions? Write to{' '}
              <a href={`mailto:${vendor.supportEmail}`} style={{ color: COLORS.brand }}>
                {vendor.supportEmail}
              </a>
              .
            </MjmlText>
          ) : null}
        </MjmlColumn>
      </MjmlSection>
    </Page>
  );
}
