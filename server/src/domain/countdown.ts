// The one countdown rule. "Expires in N days" means N UTC calendar days from today to the expiry date, wherever it
// is shown or used: the dashboard widget and the license list (daysUntilExpiry), the expiry and digest emails, the
// expiry thresholds (30, 7, 1), "expiring within N days" counts and filters, and trialDaysRemaining.

export const DAY_MS = 86_400_000;

/** `days` whole days after (or, negative, before) `date`. */
export const daysFrom = (date: Date, days: number) => new Date(date.getTime() + days * DAY_MS);

/** Midnight (UTC) that starts `date`'s day. */
export const startOfUtcDay = (date: Date) => new Date(Math.floor(date.getTime() / DAY_MS) * DAY_MS);

/**
 * UTC calendar days from today to the expiry date: 0 when it expires today (later today, or earlier today),
 * 1 tomorrow, negative that many days ago. A license expiring Nov 28 23:59 is "in 7 days" all of Nov 21.
 */
export function daysUntil(expiresAt: Date, now: Date): number {
  return Math.round((startOfUtcDay(expiresAt).getTime() - startOfUtcDay(now).getTime()) / DAY_MS);
}

/**
 * The countdowns of a group (first ≤ last, neither past) in words: "in 7 days" when they agree, else "in 6–7 days",
 * "today or tomorrow", "within 5 days".
 */
export function countdownSpanText(first: number, last: number): string {
  if (first === last) return countdownText(first);
  if (first <= 0) return last === 1 ? 'today or tomorrow' : `within ${last} days`;
  return `in ${first}–${last} days`;
}

/** "today", "in 1 day", "in N days"; past dates "N days ago" (for people: emails, messages). */
export function countdownText(days: number): string {
  if (days === 0) return 'today';
  if (days > 0) return days === 1 ? 'in 1 day' : `in ${days} days`;
  return days === -1 ? '1 day ago' : `${-days} days ago`;
}
