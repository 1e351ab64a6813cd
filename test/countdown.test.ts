import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countdownText, daysUntil } from '../server/src/domain/countdown.js';
import { queueExpiryNotifications } from '../server/src/services/notifications/expiry.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';

// One countdown rule (UTC calendar days to the expiry date), the same on every surface: the widget and the
// license list (daysUntilExpiry), "expiring within N days" counts and filters, the expiry emails and their
// thresholds, and trialDaysRemaining. The issue that asked for it: a license expiring Nov 28 23:59 read "in 7d"
// in the widget, "in 6 days" in the admin email under "Expiring in 7 days"; a date 3 days out read "in 4d".

const NOW = new Date('2026-11-21T08:00:00.000Z'); // the daily expiry run
const at = (iso: string) => new Date(iso);

describe('daysUntil', () => {
  it('counts UTC calendar days, at the boundaries', () => {
    const cases: [string, number][] = [
      ['2026-11-28T23:59:59.999Z', 7], // the license: in 7 days all of Nov 21
      ['2026-11-29T00:00:00.000Z', 8],
      ['2026-11-24T23:59:00.000Z', 3], // "3 days out"
      ['2026-11-22T00:00:00.000Z', 1], // 16 hours away, but tomorrow
      ['2026-11-21T23:59:59.999Z', 0], // later today
      ['2026-11-21T00:00:00.000Z', 0], // earlier today
      ['2026-11-20T23:59:59.999Z', -1],
    ];
    expect(cases.map(([iso]) => daysUntil(at(iso), NOW))).toEqual(cases.map(([, days]) => days));
    expect([0, 1, 7, -1, -3].map(countdownText)).toEqual(['today', 'in 1 day', 'in 7 days', '1 day ago', '3 days ago']);
  });
});

describe('every surface uses it', () => {
  let t: TestApp;
  let token: string;
  const ids: Record<string, string> = {};
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp({ clock: new TestClock(NOW.getTime()) });
    ({ token } = await t.setupAdmin());
    const tenantId = (await t.prisma.tenant.findFirstOrThrow()).id;
    const product = await t.seedProduct(tenantId, 'Acme Studio');
    const seed = async (name: string, expiresAt: string, extra: Record<string, unknown> = {}) => {
      const { key, license } = await t.seedLicense(tenantId, product.id, { expiresAt: at(expiresAt), customerEmail: `${name}@customer.test`, ...extra });
      ids[name] = license.id;
      keys[name] = key;
    };
    await seed('week', '2026-11-28T23:59:00.000Z'); //  7
    await seed('eight', '2026-11-29T00:00:00.000Z'); // 8
    await seed('three', '2026-11-24T23:59:00.000Z'); // 3
    await seed('today', '2026-11-21T20:00:00.000Z'); // 0
    await seed('trial', '2026-11-22T03:00:00.000Z', { isTrial: true }); // 1, 19 hours away
  });
  afterAll(() => t?.close());

  it('the widget, the license list and the 7-day figures agree', async () => {
    const { data } = await t.gql('{ dashboardStats { expiringIn7Days expiringLicenses { id daysUntilExpiry } } licenses(filter: { expiringWithinDays: 7 }) { nodes { id daysUntilExpiry } } }', {}, { token });
    const widget = Object.fromEntries(data.dashboardStats.expiringLicenses.map((l: { id: string; daysUntilExpiry: number }) => [l.id, l.daysUntilExpiry]));
    expect(widget).toEqual({ [ids.today]: 0, [ids.trial]: 1, [ids.three]: 3, [ids.week]: 7, [ids.eight]: 8 });
    expect(data.dashboardStats.expiringIn7Days).toBe(4);
    const listed = Object.fromEntries(data.licenses.nodes.map((l: { id: string; daysUntilExpiry: number }) => [l.id, l.daysUntilExpiry]));
    expect(listed).toEqual({ [ids.today]: 0, [ids.trial]: 1, [ids.three]: 3, [ids.week]: 7 });
  });

  it('trialDaysRemaining is the same countdown', async () => {
    expect((await t.post('/api/v1/validate', { licenseKey: keys.trial })).json).toMatchObject({ isValid: true, isTrial: true, trialDaysRemaining: 1 });
  });

  it('the admin email says "in 7 days" under "Expiring in 7 days" (each heading by the countdown of its licenses); the thresholds follow the same days', async () => {
    const report = await queueExpiryNotifications({ db: t.deps.db, now: NOW, publicUrl: t.config.publicUrl, logger: t.deps.logger });
    // 7 → the 7-day threshold; 0 and 1 → the 1-day one; 3 and 8 → none today.
    expect(report.notices).toBe(3);
    const notices = await t.prisma.expiryNotice.findMany({ select: { licenseId: true, threshold: true } });
    expect(Object.fromEntries(notices.map((n) => [n.licenseId, n.threshold]))).toEqual({ [ids.week]: 7, [ids.today]: 1, [ids.trial]: 1 });
    const admin = await t.prisma.emailOutbox.findFirstOrThrow({ where: { kind: 'expiry-admin' } });
    const sections = admin.text.split('\n\n');
    const section = (label: string) => sections.find((part) => part.includes(label)) ?? '';
    expect(section('Expiring in 7 days')).toMatch(/Expiring in 7 days \(1\):\n- Acme Studio \| [^|]+ \| Nov 28, 2026 \(in 7 days\)/);
    // The 1-day notice holds one license expiring today and one tomorrow: the heading says both, not "in 1 day".
    expect(section('Expiring today or tomorrow')).toMatch(/^Expiring today or tomorrow \(2\):/);
    expect(section('Expiring today or tomorrow')).toContain('(today)');
    expect(section('Expiring today or tomorrow')).toContain('(in 1 day)');
    expect(admin.text).not.toContain('Expiring in 1 day');
    const customer = await t.prisma.emailOutbox.findFirstOrThrow({ where: { toAddress: 'week@customer.test' } });
    expect(customer.subject).toBe('Your Acme Studio license expires in 7 days');
  });
});
