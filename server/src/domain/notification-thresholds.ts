// The notification rules: which expiry notices exist and when each fires, and when the digest highlights a
// figure. Pure and in domain/ so that the services that decide who is notified and the email templates that show
// it (server/src/email) read the same rule without importing each other.

/** The expiry notices (docs/operate/jobs-and-email.md): 30, 7 and 1 day(s) before a license expires, most distant first. */
export const THRESHOLDS = [30, 7, 1] as const;
export type Threshold = (typeof THRESHOLDS)[number];

/**
 * The threshold a license meets today, from its countdown (`daysUntil`: UTC calendar days to the expiry date).
 * T fires on the day the countdown reads T — the email then says "in T days" under "Expiring in T days" — or,
 * after a missed day, the day after (T − 1): within one day either side of the threshold (docs/operate/jobs-and-email.md).
 */
export function thresholdFor(days: number): Threshold | null {
  return THRESHOLDS.find((threshold) => days === threshold || days === threshold - 1) ?? null;
}

export type Highlight = 'red' | 'amber' | null;

/** The weekly digest (docs/operate/jobs-and-email.md): red when anything expires within 7 days; amber when more than 5 expire within 30 days. */
export const digestHighlights = (data: { expiringIn7Days: number; expiringIn30Days: number }) => ({
  expiringIn7Days: (data.expiringIn7Days > 0 ? 'red' : null) as Highlight,
  expiringIn30Days: (data.expiringIn30Days > 5 ? 'amber' : null) as Highlight,
});
