import pg from 'pg';
import { afterAll, beforeAll, expect } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';
import { describeWith, itWith } from './support/optional.js';
import { adminUrl } from './support/pg.js';
import { needPgBouncer, startPgBouncer, type PgBouncer } from './support/pgbouncer.js';
import { postJson, runCli, startServerProcess, startWorkerProcess, stopAllProcesses } from './support/processes.js';

/**
 * docs/operate/deployment.md "Connection poolers and the connection budget": the server, the worker and the CLI start
 * and work through PgBouncer in transaction mode, start after start, with the job store's schema created by processes
 * racing each other (its lock must be transaction-scoped: a session lock taken on one pooled connection and released
 * on another hung later starts), and no LISTEN through the pooler (DATABASE_POOL_MODE=transaction: workers poll).
 */
const need = needPgBouncer();
const it = itWith(need);

let bouncer: PgBouncer;
let t: TestApp;

beforeAll(async () => {
  if (need.missing) return;
  bouncer = await startPgBouncer(adminUrl(), { poolSize: 3 });
  t = await startTestApp();
}, 60_000);
afterAll(async () => {
  await stopAllProcesses();
  await t?.close();
  await bouncer?.stop();
});

describeWith(need)('server, worker and CLI through PgBouncer in transaction mode', () => {
  it('start, serve, run jobs and stop, twice over, while racing to create the job store', async () => {
    const { key } = await t.seedBasic({ maxActivations: 5 });
    const env = {
      DATABASE_URL: bouncer.urlFor(t.databaseUrl),
      DATABASE_POOL_MODE: 'transaction',
      SERVER_SECRET: t.config.serverSecret!,
      DATA_DIR: t.config.dataDir,
      JOBS_WORKER: 'false',
      LOG_LEVEL: 'info',
      SHUTDOWN_DRAIN_SECONDS: '0',
    };
    for (let round = 1; round <= 2; round++) {
      // The job store is gone: the processes starting together race to create it.
      const owner = new pg.Client({ connectionString: t.ownerUrl });
      await owner.connect();
      await owner.query('DROP SCHEMA IF EXISTS agenda CASCADE');
      await owner.end();

      const [server, workerA, workerB] = await Promise.all([startServerProcess(env), startWorkerProcess(env), startWorkerProcess(env)]);
      expect(workerA.output(), `round ${round}`).toContain('polling');
      expect((await postJson(`${server.url}/api/v1/validate`, { licenseKey: key })).json, `round ${round}`).toMatchObject({ isValid: true });

      const listed = runCli(['jobs:list', '--json'], env);
      expect(listed.status, listed.stderr).toBe(0);
      expect(listed.json.store).toMatch(/polling/);
      expect(listed.json.jobs.map((job: { name: string }) => job.name)).toEqual(expect.arrayContaining(['email-delivery', 'expiry-notifications', 'housekeeping', 'weekly-digest']));
      // One stored schedule per job, whoever created the store.
      const counts = await t.prisma.$queryRawUnsafe<{ count: number }[]>(`SELECT count(*)::int AS count FROM agenda.agenda_jobs GROUP BY name`);
      expect(counts.every((row) => row.count === 1), JSON.stringify(counts)).toBe(true);

      expect(await Promise.all([server.stop('SIGTERM'), workerA.stop('SIGTERM'), workerB.stop('SIGTERM')]), `round ${round}`).toEqual([0, 0, 0]);
      for (const output of [server.output(), workerA.output(), workerB.output()]) expect(output).not.toMatch(/"level":(50|60)/);
    }
    expect(bouncer.log()).not.toMatch(/unsupported startup parameter/);
  }, 420_000);
});
