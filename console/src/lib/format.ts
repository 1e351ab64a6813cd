/** Display helpers. Dates arrive as ISO 8601 strings (UTC); they are shown in the browser's time zone. */

export function formatDate(iso: string | null | undefined, fallback = '—'): string {
  return iso ? new Date(iso).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' }) : fallback;
}

export function formatDateTime(iso: string | null | undefined, fallback = '—'): string {
  return iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : fallback;
}

/** A moment with its time zone ("Jun 1, 2026, 2:15 PM GMT+2"), for a time the reader acts on, such as a lock's end. */
export function formatDateTimeWithZone(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short' });
}

/**
 * "in 3d", "today" — the countdown of the widget and the license list (docs/integrate/management-api.md "Dashboard stats: `GET /api/dashboard/stats`"), from the server's
 * `daysUntilExpiry` (UTC calendar days to the expiry date: the one rule the emails use too).
 */
export function countdown(daysUntilExpiry: number): string {
  return daysUntilExpiry === 0 ? 'today' : `in ${daysUntilExpiry}d`;
}

/** "5 minutes ago", "in 2 days" … for recent timestamps. */
export function relativeTime(iso: string | null | undefined, now = new Date(), fallback = 'never'): string {
  if (!iso) return fallback;
  const seconds = Math.round((new Date(iso).getTime() - now.getTime()) / 1000);
  const units: [Intl.RelativeTimeFormatUnit, number][] = [
    ['year', 31_536_000],
    ['month', 2_592_000],
    ['day', 86_400],
    ['hour', 3_600],
    ['minute', 60],
  ];
  const format = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  for (const [unit, size] of units) if (Math.abs(seconds) >= size) return format.format(Math.round(seconds / size), unit);
  return format.format(seconds, 'second');
}

export const formatNumber = (value: number) => value.toLocaleString();

/** "1 activation", "3 activations". */
export const plural = (count: number, noun: string, nouns = `${noun}s`) => `${formatNumber(count)} ${count === 1 ? noun : nouns}`;

/** "3 / 5" seats. */
export const seats = (used: number, max: number) => `${used} / ${max}`;

/** "2026-06-01 12:00:03 UTC" — activity-log timestamps are shown in UTC (docs/integrate/management-api.md "Activity log"). */
export function formatUtc(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** "Nora Admin" → "NA", "Ada" → "AD", no name → the email's first two letters. */
export function initialsOf(name: string | null, email: string): string {
  const words = (name ?? '').trim().split(/\s+/).filter(Boolean);
  if (words.length >= 2) return (words[0][0] + words[words.length - 1][0]).toUpperCase();
  return (words[0] ?? email).slice(0, 2).toUpperCase();
}

/** Null means no grace period at all, which is not the same as zero days. */
export const graceText = (days: number | null) => (days === null ? 'none' : days === 1 ? '1 day' : `${days} days`);

/** A file size for people: 1 KB = 1000 bytes, one decimal from MB on (e.g. 340 KB, 12.5 MB). */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${unit === 0 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}
