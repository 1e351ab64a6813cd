/**
 * Polls `condition` until it returns a truthy value (returned) or `timeout` ms pass (throws, naming `what` and
 * the last value). For waits on something asynchronous — a job run, a log line, a server becoming ready —
 * instead of a fixed sleep that is either too short on a busy machine or needlessly long everywhere else.
 */
/** What a truthy value of T can be (the `false`, `0`, `''`, null and undefined of T removed). */
export type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

export async function waitUntil<T>(
  condition: () => T | Promise<T>,
  { timeout = 15_000, interval = 50, what = 'a condition' }: { timeout?: number; interval?: number; what?: string } = {},
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await condition();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what} (last value: ${JSON.stringify(value)})`);
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
