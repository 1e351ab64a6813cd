import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';

/** `pnpm worker`: a separate process that registers and runs the scheduled jobs, and stops gracefully. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('job worker process', () => {
  it('starts on PostgreSQL, registers every schedule once, and stops on SIGTERM', async () => {
    const env = { ...process.env, DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, LOG_LEVEL: 'info' };
    const startWorker = () => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'server/src/worker.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout!.on('data', (chunk) => (output += chunk));
      child.stderr!.on('data', (chunk) => (output += chunk));
      const started = new Promise<void>((resolve, reject) => {
        const timer = setInterval(() => {
          if (output.includes('job worker started')) {
            clearInterval(timer);
            resolve();
          }
        }, 100);
        child.once('exit', (code) => {
          clearInterval(timer);
          reject(new Error(`worker exited with ${code}: ${output}`));
        });
      });
      const stopped = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      return { child, started, stopped, output: () => output };
    };
    // Two workers on one store: the schedules are still stored once each.
    const a = startWorker();
    const b = startWorker();
    await Promise.all([a.started, b.started]);
    const rows = await t.prisma.$queryRawUnsafe<{ name: string; count: number }[]>(
      `SELECT name, count(*)::int AS count FROM agenda.agenda_jobs GROUP BY name ORDER BY name`,
    );
    expect(rows.map((row) => row.name)).toEqual(expect.arrayContaining(['email-delivery', 'expiry-notifications', 'housekeeping', 'weekly-digest']));
    for (const row of rows) expect(row.count, row.name).toBe(1);
    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    expect(await a.stopped).toBe(0);
    expect(await b.stopped).toBe(0);
    expect(a.output()).toContain('worker stopped');
  });
});
