/** Labels for time buckets (UTC): "Jun 3", "Jun 3–9" (ISO week), "Jun 2026"; "14:00" for hours. */
export type Granularity = 'DAY' | 'WEEK' | 'MONTH' | 'HOUR';

export function bucketLabel(startIso: string, granularity: Granularity): string {
  const start = new Date(startIso);
  const day = (date: Date) => date.toLocaleDateString(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
  switch (granularity) {
    case 'HOUR':
      return start.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });
    case 'WEEK': {
      const end = new Date(start.getTime() + 6 * 86_400_000);
      return `${day(start)}–${end.getUTCMonth() === start.getUTCMonth() ? end.getUTCDate() : day(end)}`;
    }
    case 'MONTH':
      return start.toLocaleDateString(undefined, { month: 'short', year: 'numeric', timeZone: 'UTC' });
    default:
      return day(start);
  }
}
