import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, expect } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';
import { answers, describeWith, itWith, needCommands } from './support/optional.js';
import { freePort } from './support/processes.js';
import { waitUntil } from './support/wait.js';

/**
 * docs/operate/deployment.md "Redis (shared rate limits)": a private redis-server (its own port, no persistence) is stopped and started again
 * under load. Nothing answers 5xx, each process says so once, /readyz shows it, and the budget is shared again after.
 */
const redisNeed = needCommands('redis-server');
const apps: TestApp[] = [];
let redis: ChildProcess | undefined;

afterAll(async () => {
  for (const app of apps) await app.close();
  redis?.kill('SIGKILL');
});

async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await waitUntil(() => answers('127.0.0.1', port), { what: 'redis-server to listen' });
  return child;
}

const stop = (child: ChildProcess) => new Promise((resolve) => child.once('exit', resolve).kill('SIGKILL'));
const from = (ip: string) => ({ 'x-forwarded-for': ip });
let ipCounter = 0;
const freshIp = () => `198.51.100.${++ipCounter % 250}-${Date.now()}-${ipCounter}`;

describeWith(redisNeed)('Redis outage under load', () => {
  itWith(redisNeed)('no 5xx while Redis is away and back; logged once per transition; /readyz shows it; the limit is shared again', async () => {
    const port = await freePort();
    redis = await startRedis(port);
    const env = { REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_KEY_PREFIX: 'outage-test:', RATE_LIMIT_PUBLIC_PER_MINUTE: '4' };
    const a = await startTestApp({ env });
    apps.push(a);
    const b = await startTestApp({ env });
    apps.push(b);
    expect((await a.get('/readyz')).json).toEqual({ status: 'ok', database: 'ok', redis: 'ok' });

    // Load from many clients (each under its limit) on both servers until told to stop.
    const statuses: number[] = [];
    let loading = true;
    const load = Promise.all(
      Array.from({ length: 8 }, async (_, lane) => {
        while (loading) statuses.push((await (lane % 2 ? a : b).get('/api/v1/nonce', from(freshIp()))).status);
      }),
    );

    await waitUntil(() => statuses.length > 50, { what: 'load before the outage' });
    await stop(redis);
    await waitUntil(async () => (await a.get('/readyz')).json.redis === 'unreachable', { what: '/readyz to show Redis unreachable' });
    const duringOutage = statuses.length;
    await waitUntil(() => statuses.length > duringOutage + 50, { what: 'load during the outage' });

    redis = await startRedis(port);
    await waitUntil(async () => (await a.get('/readyz')).json.redis === 'ok' && (await b.get('/readyz')).json.redis === 'ok', { timeout: 60_000, what: 'both servers to reach Redis again' });
    const afterRestart = statuses.length;
    await waitUntil(() => statuses.length > afterRestart + 50, { what: 'load after the restart' });
    loading = false;
    await load;

    expect(statuses.filter((status) => status >= 500)).toEqual([]);
    expect(new Set(statuses)).toEqual(new Set([200]));
    for (const app of [a, b]) {
      const lines = app.logs.join('');
      expect(lines.match(/redis unreachable: rate limits are counted per process/g)).toHaveLength(1);
      expect(lines.match(/redis reachable again: rate limits are shared again/g)).toHaveLength(1);
    }

    // Shared again: one client alternating between the two servers gets 4 answers in all, not 4 on each.
    const ip = freshIp();
    const shared = [];
    for (let i = 0; i < 6; i++) shared.push((await (i % 2 ? a : b).get('/api/v1/nonce', from(ip))).status);
    expect(shared).toEqual([200, 200, 200, 200, 429, 429]);

    // Every counter lives under this deployment's REDIS_KEY_PREFIX.
    const client = new Redis(env.REDIS_URL);
    const keys = await client.keys('*');
    await client.quit();
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.filter((key) => !key.startsWith('outage-test:ip'))).toEqual([]);
  }, 180_000);
});
