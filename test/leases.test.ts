import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../server/src/generated/prisma/client.js';
import { leaseLapsed, leaseLapsedSql, nextAttempt } from '../server/src/services/leases.js';

// The lease rules of server/src/services/leases.ts: "a lease has lapsed" in code and as SQL (floating sessions, the
// outboxes' due rows, held jobs) agree on PostgreSQL, at the lease's end and on either side of it.

let client: pg.Client;
beforeAll(async () => {
  client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await client.connect();
});
afterAll(async () => {
  await client?.end();
});

const sqlLapsed = async (end: Date, now?: Date) => {
  const query = Prisma.sql`SELECT ${leaseLapsedSql(Prisma.sql`e`, now)} AS lapsed FROM (SELECT ${end}::timestamptz AS e) lease`;
  const { rows } = await client.query<{ lapsed: boolean }>(query.text, query.values as unknown[]);
  return rows[0].lapsed;
};

describe('leases', () => {
  it('a lease has lapsed at its end, not before: in code and in SQL alike', async () => {
    const end = new Date('2026-06-01T12:05:00.000Z');
    for (const offset of [-1, 0, 1, -60_000, 60_000]) {
      const now = new Date(end.getTime() + offset);
      expect(await sqlLapsed(end, now), `offset ${offset} ms`).toBe(leaseLapsed(end, now));
      expect(leaseLapsed(end, now), `offset ${offset} ms`).toBe(offset >= 0);
    }
    // Without a time, the database's clock decides (held jobs: process and test clocks do not matter).
    expect(await sqlLapsed(new Date(Date.now() - 60_000))).toBe(true);
    expect(await sqlLapsed(new Date(Date.now() + 60_000))).toBe(false);
  });

  it('a failed attempt waits its policy’s delay, and nothing follows the last attempt or a permanent failure', () => {
    const policy = { maxAttempts: 3, retryDelayMs: (attempts: number) => attempts * 1000 };
    const now = new Date('2026-06-01T12:00:00.000Z');
    expect(nextAttempt(policy, 1, now)).toEqual(new Date(now.getTime() + 1000));
    expect(nextAttempt(policy, 2, now)).toEqual(new Date(now.getTime() + 2000));
    expect(nextAttempt(policy, 3, now)).toBeNull();
    expect(nextAttempt(policy, 1, now, true)).toBeNull();
  });
});
