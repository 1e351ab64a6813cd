import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';
import { startWorkerProcess, stopAllProcesses } from './support/processes.js';

/** `pnpm worker`: a separate process that registers and runs the scheduled jobs, and stops gracefully. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await stopAllProcesses();
  await t.close();
});

describe('job worker process', () => {
  it('starts on PostgreSQL, registers every schedule once, and stops on SIGTERM', async () => {
    const env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, LOG_LEVEL: 'info' };
    // Two workers on one store: the schedules are still stored once each.
    const [a, b] = await Promise.all([startWorkerProcess(env), startWorkerProcess(env)]);
    const rows = await t.prisma.$queryRawUnsafe<{ name: string; count: number }[]>(
      `SELECT name, count(*)::int AS count FROM agenda.agenda_jobs GROUP BY name ORDER BY name`,
    );
    expect(rows.map((row) => row.name)).toEqual(expect.arrayContaining(['email-delivery', 'expiry-notifications', 'housekeeping', 'weekly-digest']));
    for (const row of rows) expect(row.count, row.name).toBe(1);
    expect(await Promise.all([a.stop('SIGTERM'), b.stop('SIGTERM')])).toEqual([0, 0]);
    expect(a.output()).toContain('worker stopped');
  });
});
