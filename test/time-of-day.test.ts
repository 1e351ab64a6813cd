import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS, countdownText, daysUntil, startOfUtcDay } from '../server/src/domain/countdown.js';
import { digestFigures, isoWeek } from '../server/src/services/notifications/digest.js';
import { claimDueEmails } from '../server/src/services/notifications/delivery.js';
import { expiryRun, queueExpiryNotifications } from '../server/src/services/notifications/expiry.js';
import { enqueueEmails } from '../server/src/services/notifications/outbox.js';
import { THRESHOLDS, thresholdFor } from '../server/src/domain/notification-thresholds.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { expiryOnCountdown } from './support/time.js';

// The rules that read the clock — UTC calendar-day countdowns and the expiry thresholds, "expiring within N days",
// trialDaysRemaining, the weekly digest's week and 7-day window, the every-minute delivery's due check, calendar
// metering periods — run at the instants where a rule written against the wall clock goes wrong: just after
// midnight, either side of noon, just before midnight, a Monday either side of the digest's 09:00, and the last
// minute of a month. Every expectation is computed from the instant by the rule, never from a fixed date, so each
// instant checks the same promises. docs/development.md says how to run other suites at an injected instant.
export const INSTANTS = [
  '2026-06-02T00:00:30.000Z', // just after midnight
  '2026-06-03T11:59:00.000Z', // before noon (the fault-worker test failed after noon only)
  '2026-06-03T12:01:00.000Z', // after noon
  '2026-06-04T23:59:30.000Z', // just before midnight
  '2026-06-08T08:59:00.000Z', // a Monday, before the digest's 09:00
  '2026-06-08T09:01:00.000Z', // the same Monday, after it
  '2026-06-30T23:59:30.000Z', // the last minute of a month
  '2026-12-31T23:59:59.000Z', // the last second of a year (ISO week 53)
];

const clock = new TestClock();
let t: TestApp;
let token: string;
let adminTenant: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  await t.setupAdmin({ keyPrefix: 'TIME' });
  adminTenant = (await t.prisma.tenant.findFirstOrThrow()).id;
});
afterAll(() => t?.close());

describe.each(INSTANTS)('at %s', (instant) => {
  const now = new Date(instant);
  const midnight = startOfUtcDay(now);
  /** The first and the last millisecond of the UTC day `days` after today. */
  const dayEdges = (days: number) => [new Date(midnight.getTime() + days * DAY_MS), new Date(midnight.getTime() + (days + 1) * DAY_MS - 1)];
  let product: { id: string; name: string };
  const seeded: { id: string; key: string; days: number; expiresAt: Date; isTrial: boolean }[] = [];

  beforeAll(async () => {
    clock.set(instant);
    ({ token } = await t.login('admin@acme.test')); // a session of this instant
    // A product of its own per instant: the counts below are about this instant's licenses only.
    product = await t.seedProduct(adminTenant, `Product ${instant}`);
    // Countdowns around every threshold and the 7/30-day edges, each at the first and last millisecond of its day.
    for (const days of [0, 1, 2, 6, 7, 8, 29, 30, 31]) {
      for (const [index, expiresAt] of dayEdges(days).entries()) {
        if (expiresAt <= now) continue; // already expired: not an active license
        const isTrial = index === 1;
        const { key, license } = await t.seedLicense(adminTenant, product.id, { expiresAt, isTrial, customerEmail: `d${days}-${index}-${randomBytes(3).toString('hex')}@customer.test` });
        seeded.push({ id: license.id, key, days, expiresAt, isTrial });
      }
    }
    // Expired a millisecond ago: written directly (the services refuse an expiry in the past).
    const { key, license: expired } = await t.seedLicense(adminTenant, product.id, { expiresAt: dayEdges(1)[0] });
    await t.prisma.license.update({ where: { id: expired.id }, data: { expiresAt: new Date(now.getTime() - 1) } });
    seeded.push({ id: expired.id, key, days: daysUntil(new Date(now.getTime() - 1), now), expiresAt: new Date(now.getTime() - 1), isTrial: false });
  });

  it('the countdown of each license is its UTC calendar days, in the widget, the list and the 7/30-day figures', async () => {
    clock.set(instant);
    const active = seeded.filter((license) => license.expiresAt > now);
    for (const license of active) expect(daysUntil(license.expiresAt, now)).toBe(license.days);
    const { data, errors, text } = await t.gql(
      `query($product: ID!) { licenses(first: 100, filter: { productId: $product, expiringWithinDays: 30 }) { totalCount nodes { id daysUntilExpiry } } week: licenses(first: 100, filter: { productId: $product, expiringWithinDays: 7 }) { totalCount } }`,
      { product: product.id },
      { token },
    );
    expect(errors, text).toBeUndefined();
    expect(data, text).toBeTruthy();
    const listed = Object.fromEntries(data.licenses.nodes.map((license: { id: string; daysUntilExpiry: number }) => [license.id, license.daysUntilExpiry]));
    expect(listed).toEqual(Object.fromEntries(active.filter((license) => license.days <= 30).map((license) => [license.id, license.days])));
    expect(data.week.totalCount).toBe(active.filter((license) => license.days <= 7).length);
  });

  it('trialDaysRemaining is the countdown; a license expired a millisecond ago is refused', async () => {
    clock.set(instant);
    for (const license of seeded.filter((entry) => entry.isTrial && entry.expiresAt > now)) {
      expect((await t.post('/api/v1/validate', { licenseKey: license.key })).json).toMatchObject({ isValid: true, isTrial: true, trialDaysRemaining: license.days });
    }
    const expired = seeded.at(-1)!;
    expect((await t.post('/api/v1/validate', { licenseKey: expired.key })).json).toMatchObject({ isValid: false, errorCode: 'LicenseExpired' });
  });

  it('the expiry run notices exactly the licenses on a threshold or a day past it, and the emails say "in N days"', async () => {
    clock.set(instant);
    expect(expiryRun.period(now)).toBe(instant.slice(0, 10));
    await queueExpiryNotifications({ db: t.deps.db, now, publicUrl: t.config.publicUrl, logger: t.deps.logger });
    const notices = await t.prisma.expiryNotice.findMany({ where: { license: { productId: product.id } }, select: { licenseId: true, threshold: true } });
    const expected = seeded.filter((license) => license.expiresAt > now && thresholdFor(license.days) !== null);
    expect(expected.length).toBeGreaterThanOrEqual(8); // 30, 29, 7, 6, 1 (and 0) days: both edges of each day
    expect(Object.fromEntries(notices.map((notice) => [notice.licenseId, notice.threshold]))).toEqual(Object.fromEntries(expected.map((license) => [license.id, thresholdFor(license.days)])));
    for (const license of expected) {
      const customer = await t.prisma.emailOutbox.findFirstOrThrow({ where: { kind: 'expiry-customer', idempotencyKey: { contains: license.id } }, select: { subject: true } });
      expect(customer.subject).toBe(`Your ${product.name} license expires ${countdownText(license.days)}`);
    }
  });

  it('the fault-worker seed (noon of the threshold day) meets its threshold at this instant', () => {
    for (const threshold of THRESHOLDS) expect(thresholdFor(daysUntil(expiryOnCountdown(now, threshold), now))).toBe(threshold);
  });

  it('the digest counts activations of the past 7 days to the millisecond, in the ISO week of the instant', async () => {
    clock.set(instant);
    const { label, monday } = isoWeek(now);
    expect(monday.getUTCDay()).toBe(1);
    expect(now.getTime() - monday.getTime()).toBeLessThan(7 * DAY_MS);
    expect(now >= monday).toBe(true);
    const tenant = await t.seedTenant({ name: `Digest ${instant}`, keyPrefix: `D${randomBytes(3).toString('hex').toUpperCase()}` });
    const digestProduct = await t.seedProduct(tenant.id, 'Digest product');
    const { license } = await t.seedLicense(tenant.id, digestProduct.id, { expiresAt: dayEdges(7)[1] });
    await t.prisma.activation.createMany({
      data: [7 * DAY_MS, 7 * DAY_MS - 1, 0].map((ago, index) => ({ tenantId: tenant.id, licenseId: license.id, deviceId: `d${index}`, createdAt: new Date(now.getTime() - ago) })),
    });
    const figures = await digestFigures({ db: t.deps.db, now }, tenant.id);
    expect(figures).toMatchObject({ activeLicenses: 1, activations7d: 2, expiringIn7Days: 1, expiringIn30Days: 1 });
    expect(label).toMatch(/^\d{4}-W\d{2}$/);
  });

  it('the every-minute delivery claims what is due at this instant and nothing a millisecond later', async () => {
    clock.set(instant);
    const tag = randomBytes(4).toString('hex');
    await enqueueEmails(t.prisma, [{ tenantId: adminTenant, kind: 'test', idempotencyKey: `due:${tag}`, to: `due-${tag}@x.test`, subject: 'due', html: '<p>due</p>', text: 'due' }], now);
    await enqueueEmails(t.prisma, [{ tenantId: adminTenant, kind: 'test', idempotencyKey: `later:${tag}`, to: `later-${tag}@x.test`, subject: 'later', html: '<p>later</p>', text: 'later' }], new Date(now.getTime() + 1));
    const ctx = { db: t.deps.db, now };
    const claimed = await claimDueEmails(ctx, 1_000);
    expect(claimed.map((email) => email.to).filter((to) => to.endsWith(`${tag}@x.test`))).toEqual([`due-${tag}@x.test`]);
    const next = await claimDueEmails({ ...ctx, now: new Date(now.getTime() + 1) }, 1_000, new Date(now.getTime() + 1));
    expect(next.map((email) => email.to).filter((to) => to.endsWith(`${tag}@x.test`))).toEqual([`later-${tag}@x.test`]);
  });

  it('metered usage counts in the calendar period of the instant, and the next millisecond of a new period starts at 0', async () => {
    clock.set(instant);
    const { key } = await t.seedLicense(adminTenant, product.id, {});
    const meter = () => t.post('/api/v1/meter', { licenseKey: key, event: 'time.check', quantity: 2 });
    const first = (await meter()).json;
    const month = { start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)), end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)) };
    expect(first).toMatchObject({ isValid: true, period: 'month', periodStart: month.start.toISOString(), periodEnd: month.end.toISOString(), total: 2 });
    // The last millisecond of the month still adds up; the first of the next one starts over.
    clock.set(new Date(month.end.getTime() - 1).toISOString());
    expect((await meter()).json).toMatchObject({ total: 4, periodStart: month.start.toISOString() });
    clock.set(month.end.toISOString());
    expect((await meter()).json).toMatchObject({ total: 2, periodStart: month.end.toISOString() });
    clock.set(instant);
  });
});
