import { DAY_MS, startOfUtcDay } from '../../server/src/domain/countdown.js';

/**
 * For tests that run real processes on the wall clock through work that belongs to one UTC day (a daily job's
 * period, a countdown): when less than `margin` ms are left before UTC midnight, waits until just after it, so the
 * whole test runs inside one day. Returns how long it waited.
 */
export async function clearOfUtcMidnight(margin: number): Promise<number> {
  const left = DAY_MS - (Date.now() % DAY_MS);
  if (left >= margin) return 0;
  console.log(`waiting ${Math.ceil(left / 1000)} s for UTC midnight: this test runs on the wall clock inside one UTC day`);
  await new Promise((resolve) => setTimeout(resolve, left + 2_000));
  return left + 2_000;
}

/** Noon (UTC) of the day `countdown` UTC calendar days after `now`'s: a license expiring then reads "in `countdown` days" all day. */
export const expiryOnCountdown = (now: Date, countdown: number) => new Date(startOfUtcDay(now).getTime() + countdown * DAY_MS + DAY_MS / 2);
