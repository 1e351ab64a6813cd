import { describe, expect, it } from 'vitest';
import { EXPIRING_SOON_MAX_ROWS, expiringSoonView, type ExpiryStats } from './expiringSoon';

const NOW = new Date('2026-06-01T12:00:00.000Z');
const DAY = 86_400_000;
const at = (days: number) => new Date(NOW.getTime() + days * DAY).toISOString();
// What the server computes (UTC calendar days to the expiry date): the widget only displays it.
const calendarDays = (iso: string) => Math.round((Math.floor(Date.parse(iso) / DAY) * DAY - Math.floor(NOW.getTime() / DAY) * DAY) / DAY);
const license = (id: string, days: number, customerEmail: string | null = `${id}@example.com`) => ({ id, productName: `Product ${id}`, customerEmail, expiresAt: at(days), daysUntilExpiry: calendarDays(at(days)) });

const stats = (licenses: ExpiryStats['expiringLicenses'], counts: Partial<ExpiryStats> = {}): ExpiryStats => ({
  expiringIn7Days: licenses.filter((l) => Date.parse(l.expiresAt) - NOW.getTime() <= 7 * DAY).length,
  expiringIn30Days: licenses.length,
  expiringLicenses: licenses,
  ...counts,
});

describe('Licenses Expiring Soon widget rules', () => {
  it('is hidden when no active license expires within 30 days', () => {
    expect(expiringSoonView(stats([]))).toBeNull();
  });

  it('is shown as soon as one license expires within 30 days', () => {
    const view = expiringSoonView(stats([license('a', 29.5)]));
    expect(view).not.toBeNull();
    expect(view!.rows).toHaveLength(1);
  });

  it('badges: the 7-day count (red) and the 30-day count (yellow) come from the stats', () => {
    const view = expiringSoonView(stats([license('a', 2), license('b', 6.9), license('c', 20)]))!;
    expect(view.within7Days).toBe(2);
    expect(view.within30Days).toBe(3);
  });

  it("lists at most 8 licenses in the server's order (soonest first) and counts the rest", () => {
    const many = Array.from({ length: 12 }, (_, i) => license(`l${i}`, 1 + i * 2));
    const view = expiringSoonView(stats(many))!;
    expect(EXPIRING_SOON_MAX_ROWS).toBe(8);
    expect(view.rows).toHaveLength(8);
    expect(view.rows.map((row) => row.id)).toEqual(['l0', 'l1', 'l2', 'l3', 'l4', 'l5', 'l6', 'l7']);
    expect(view.more).toBe(4);
  });

  it('shows exactly 8 rows and no "more" link for exactly 8 licenses', () => {
    const view = expiringSoonView(stats(Array.from({ length: 8 }, (_, i) => license(`l${i}`, i + 1))))!;
    expect(view.rows).toHaveLength(8);
    expect(view.more).toBe(0);
  });

  it('countdown reads "in Nd" from the server\'s daysUntilExpiry (calendar days), "today" for 0', () => {
    // NOW is 12:00 UTC: +0.2 days is later today, +0.6 is tomorrow 02:24, +6.01 is 6 days on.
    const view = expiringSoonView(stats([license('a', 3), license('b', 0.2), license('e', 0.6), license('c', 6.01), license('d', 30)]))!;
    expect(Object.fromEntries(view.rows.map((row) => [row.id, row.countdown]))).toEqual({ b: 'today', e: 'in 1d', a: 'in 3d', c: 'in 6d', d: 'in 30d' });
  });

  it('each row links to its license page and keeps product and customer email', () => {
    const id = '4f1c8a2b-1c3d-4e5f-a6b7-c8d9e0f1a2b3';
    const [row] = expiringSoonView(stats([license(id, 5)]))!.rows;
    expect(row).toMatchObject({ href: `/licenses/${id}`, productName: `Product ${id}`, customerEmail: `${id}@example.com`, urgent: true });
  });

  it('marks rows within 7 days as urgent and later ones not', () => {
    const view = expiringSoonView(stats([license('soon', 7), license('later', 7.5)]))!;
    expect(view.rows.map((row) => row.urgent)).toEqual([true, false]);
  });

  it('applies no expiry rule of its own: what the server lists is shown, with its countdown', () => {
    // The server decides what is expiring (services/licenses/predicates.ts), whatever the browser's clock says.
    const view = expiringSoonView(stats([{ ...license('x', -1), daysUntilExpiry: 2 }], { expiringIn30Days: 1, expiringIn7Days: 1 }))!;
    expect(view.rows).toEqual([expect.objectContaining({ id: 'x', countdown: 'in 2d', urgent: true })]);
  });
});
