// A plan's duration and maintenance period: the date part of an ISO 8601 duration (P1Y, P6M, P2W, P30D, P1Y6M),
// added to a license's creation in UTC calendar terms. A month added to the 31st ends on the month's last day
// (Jan 31 + P1M = Feb 28 or 29), as billing providers count a monthly period.

/** Years, months, weeks, days, in this order, each at most 5 digits: linear, bounded input. */
const PERIOD = /^P(?:(\d{1,5})Y)?(?:(\d{1,5})M)?(?:(\d{1,5})W)?(?:(\d{1,5})D)?$/;

export interface Period {
  years: number;
  months: number;
  weeks: number;
  days: number;
}

/** The longest period a plan may hold: anything later than this from now would not be a storable date anyway. */
export const MAX_PERIOD_DAYS = 100 * 366;

/** The period of `text` (upper or lower case), or null when it is not one (empty, zero, a time part, too long). */
export function parsePeriod(text: string): Period | null {
  if (text.length > 30) return null;
  const match = PERIOD.exec(text.trim().toUpperCase());
  if (!match || text.trim().length === 1) return null;
  const [years, months, weeks, days] = match.slice(1).map((part) => (part === undefined ? 0 : Number(part)));
  const period = { years, months, weeks, days };
  const approxDays = years * 366 + months * 31 + weeks * 7 + days;
  if (approxDays === 0 || approxDays > MAX_PERIOD_DAYS) return null;
  return period;
}

/** The canonical text of a period: P1Y6M, P30D (zero parts left out). */
export function formatPeriod(period: Period): string {
  const parts: [number, string][] = [[period.years, 'Y'], [period.months, 'M'], [period.weeks, 'W'], [period.days, 'D']];
  return `P${parts.filter(([value]) => value > 0).map(([value, unit]) => `${value}${unit}`).join('')}`;
}

/** `from` plus the period, in UTC: years and months first (clamped to the month's last day), then weeks and days. */
export function addPeriod(from: Date, period: Period): Date {
  const monthIndex = from.getUTCFullYear() * 12 + from.getUTCMonth() + period.years * 12 + period.months;
  const year = Math.floor(monthIndex / 12);
  const month = monthIndex % 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const date = new Date(from.getTime());
  date.setUTCFullYear(year, month, Math.min(from.getUTCDate(), lastDay));
  date.setUTCDate(date.getUTCDate() + period.weeks * 7 + period.days);
  return date;
}
