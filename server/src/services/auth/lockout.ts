import { Prisma } from '../../generated/prisma/client.js';
import { AppError } from '../../domain/errors.js';

// The sign-in lockout (docs/security.md "Sign-in abuse"), kept per key in login_failures: an email address, known or
// not, or a trusted browser's `device:…` (devices.ts). Sign-ins and re-authentications share it.
//
// Only wrong answers count. A right password never counts towards a lock, however many arrive at once: each attempt
// takes a place among those being checked (pending_count) before its password is hashed, and a key admits at most
// MAX_FAILED_LOGINS minus its failures at once — so even if every one of them is wrong, no more guesses are checked
// than the lockout allows. An attempt beyond that is answered RateLimited (retry in a second), never AccountLocked.
//
// Every statement here is a single statement outside any transaction (never inside one that then takes another lock):
// the counters take part in no lock cycle, and the argon2 work happens between statements, holding no lock.

type Db = Pick<Prisma.TransactionClient, '$queryRaw' | '$executeRaw'>;

/** This many failures within FAILED_LOGIN_WINDOW_MS lock the key for LOCK_MS. */
export const MAX_FAILED_LOGINS = 5;
export const FAILED_LOGIN_WINDOW_MS = 15 * 60_000;
export const LOCK_MS = 15 * 60_000;
/**
 * How long an admitted attempt holds its place at most: far longer than a check takes, so that the place of a
 * process that died mid-check is given back, not lost for good.
 */
export const ATTEMPT_CHECK_LEASE_MS = 60_000;
/** What a refused concurrent attempt is told to wait. */
export const BUSY_RETRY_AFTER_SECONDS = 1;

type Row = { failed_count: number; locked_until: Date | null; pending_count: number };

/** What the lockout answers an attempt before its password is checked. */
export type Admission =
  /** Check the password, then settle the attempt (failed, givenBack or succeeded). */
  | { kind: 'admitted'; attempt: AdmittedAttempt }
  /** Locked: refused unchecked; `count` counts this attempt too (the 10th, 100th… are audited). */
  | { kind: 'locked'; count: number; lockedUntil: Date }
  /** As many checks of this key are under way as the lockout allows: refused unchecked, not counted. */
  | { kind: 'busy' };

/** The answer to a busy attempt: HTTP 429 with Retry-After over GraphQL. */
export function busyError(): AppError {
  return new AppError('RateLimited', `Other sign-in checks of this account are under way: retry in ${BUSY_RETRY_AFTER_SECONDS} second.`, {
    retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS,
    rateLimitName: 'signin_concurrent',
  });
}

/**
 * Admits one attempt for a key, in one statement. A window of failures ends FAILED_LOGIN_WINDOW_MS after its first
 * failure, a lock LOCK_MS after it was set; either way the failures are then forgotten. While locked, the attempt is
 * counted (not checked). Otherwise it takes a place among the checks under way and is refused (the place given back)
 * when failures and checks would exceed MAX_FAILED_LOGINS.
 */
export async function admitAttempt(db: Db, key: string, now: Date): Promise<Admission> {
  const windowStart = new Date(now.getTime() - FAILED_LOGIN_WINDOW_MS);
  const leaseEnd = new Date(now.getTime() + ATTEMPT_CHECK_LEASE_MS);
  const locked = Prisma.sql`(login_failures.locked_until > ${now})`;
  const inWindow = Prisma.sql`(login_failures.locked_until IS NULL AND login_failures.first_failed_at > ${windowStart})`;
  const pending = Prisma.sql`(CASE WHEN login_failures.pending_until > ${now} THEN login_failures.pending_count ELSE 0 END)`;
  const [row] = await db.$queryRaw<Row[]>`
    INSERT INTO login_failures (email, failed_count, pending_count, pending_until, updated_at) VALUES (${key}, 0, 1, ${leaseEnd}, ${now})
    ON CONFLICT (email) DO UPDATE SET
      failed_count = CASE WHEN ${locked} THEN login_failures.failed_count + 1 WHEN ${inWindow} THEN login_failures.failed_count ELSE 0 END,
      first_failed_at = CASE WHEN ${locked} OR ${inWindow} THEN login_failures.first_failed_at ELSE NULL END,
      locked_until = CASE WHEN ${locked} THEN login_failures.locked_until ELSE NULL END,
      pending_count = CASE WHEN ${locked} THEN ${pending} ELSE ${pending} + 1 END,
      pending_until = CASE WHEN ${locked} THEN login_failures.pending_until ELSE ${leaseEnd} END,
      updated_at = ${now}
    RETURNING failed_count, locked_until, pending_count`;
  // Now and then, forget finished windows (the table holds every email anyone tried, known or not).
  if (Math.random() < 0.01) {
    await db.$executeRaw`DELETE FROM login_failures WHERE email IN (SELECT email FROM login_failures
      WHERE updated_at < ${windowStart} AND (locked_until IS NULL OR locked_until < ${now}) LIMIT 1000)`;
  }
  if (row.locked_until && row.locked_until > now) return { kind: 'locked', count: row.failed_count, lockedUntil: row.locked_until };
  if (row.failed_count + row.pending_count > MAX_FAILED_LOGINS) {
    await givePlaceBack(db, key);
    return { kind: 'busy' };
  }
  return { kind: 'admitted', attempt: new AdmittedAttempt(db, key, now) };
}

async function givePlaceBack(db: Db, key: string): Promise<void> {
  await db.$executeRaw`UPDATE login_failures SET pending_count = greatest(pending_count - 1, 0) WHERE email = ${key}`;
}

/** An attempt whose password is being checked. Settle it once; `abandon` frees its place if nothing settled it. */
export class AdmittedAttempt {
  private settled = false;

  constructor(
    private readonly db: Db,
    readonly key: string,
    private readonly now: Date,
  ) {}

  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    return true;
  }

  /**
   * A wrong password or code: one failure of the window; the one that reaches MAX_FAILED_LOGINS sets the lock.
   * Answers the window's failure count, this one included (MAX_FAILED_LOGINS exactly once per lock).
   */
  async failed(): Promise<{ count: number; lockedUntil: Date | null }> {
    if (!this.settle()) throw new Error('attempt settled twice');
    const { now } = this;
    const windowStart = new Date(now.getTime() - FAILED_LOGIN_WINDOW_MS);
    const lockEnd = new Date(now.getTime() + LOCK_MS);
    const ongoing = Prisma.sql`(login_failures.locked_until > ${now} OR (login_failures.locked_until IS NULL AND login_failures.first_failed_at > ${windowStart}))`;
    const count = Prisma.sql`(CASE WHEN ${ongoing} THEN login_failures.failed_count + 1 ELSE 1 END)`;
    const [row] = await this.db.$queryRaw<Row[]>`
      INSERT INTO login_failures (email, failed_count, first_failed_at, locked_until, pending_count, updated_at)
      VALUES (${this.key}, 1, ${now}, NULL, 0, ${now})
      ON CONFLICT (email) DO UPDATE SET
        failed_count = ${count},
        first_failed_at = CASE WHEN ${ongoing} THEN login_failures.first_failed_at ELSE ${now} END,
        locked_until = CASE WHEN login_failures.locked_until > ${now} THEN login_failures.locked_until WHEN ${count} >= ${MAX_FAILED_LOGINS} THEN ${lockEnd} ELSE NULL END,
        pending_count = greatest(login_failures.pending_count - 1, 0),
        updated_at = ${now}
      RETURNING failed_count, locked_until, pending_count`;
    return { count: row.failed_count, lockedUntil: row.locked_until };
  }

  /** The password was right but a second factor is due: no failure. */
  async givenBack(): Promise<void> {
    if (this.settle()) await givePlaceBack(this.db, this.key);
  }

  /**
   * Signed in or re-authenticated: the key's failures are forgotten (its row with them when no other check is under
   * way). A lock stays: it was set by failures, never by this attempt.
   */
  async succeeded(): Promise<void> {
    if (!this.settle()) return;
    const { now, key } = this;
    const deleted = await this.db.$executeRaw`DELETE FROM login_failures WHERE email = ${key}
      AND (locked_until IS NULL OR locked_until <= ${now}) AND (pending_count <= 1 OR pending_until <= ${now})`;
    if (deleted > 0) return;
    await this.db.$executeRaw`UPDATE login_failures SET
        failed_count = CASE WHEN locked_until > ${now} THEN failed_count ELSE 0 END,
        first_failed_at = CASE WHEN locked_until > ${now} THEN first_failed_at ELSE NULL END,
        locked_until = CASE WHEN locked_until > ${now} THEN locked_until ELSE NULL END,
        pending_count = greatest(pending_count - 1, 0)
      WHERE email = ${key}`;
  }

  /** Ends an attempt nothing settled (an error midway): its place is given back. Never throws. */
  async abandon(): Promise<void> {
    if (this.settle()) await givePlaceBack(this.db, this.key).catch(() => undefined);
  }
}
