import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestScope } from '../server/src/logger.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { itWith, needCommands } from './support/optional.js';
import { freePort, startServerProcess, stopAllProcesses } from './support/processes.js';
import { waitUntil } from './support/wait.js';

/** Logs an operator can read (docs/operate/observability.md): quiet probes, request ids on every line, a startup banner. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { LOG_LEVEL: 'info' } });
});
afterAll(async () => {
  await stopAllProcesses();
  await t.close();
});

const lines = (from: number) => t.logs.slice(from).map((line) => JSON.parse(line) as Record<string, unknown>);

describe('request logs', () => {
  it('keep info readable: probes and successful calls at debug, client errors at info with the request id of X-Request-Id', async () => {
    const { key } = await t.seedBasic();
    const from = t.logs.length;
    expect((await t.get('/healthz')).status).toBe(200);
    expect((await t.get('/readyz')).status).toBe(200);
    expect((await t.post('/api/v1/validate', { licenseKey: key })).json.isValid).toBe(true);
    const missing = await t.get('/api/v1/no-such-route');
    expect(missing.status).toBe(404);
    const requestId = missing.headers.get('x-request-id');
    expect(requestId).toMatch(/^[\w-]{8,}$/);
    const logged = lines(from).filter((line) => line.msg === 'request');
    expect(logged).toEqual([expect.objectContaining({ level: 30, path: '/api/v1/no-such-route', status: 404, requestId })]);
  });

  it('at debug, every request is logged, each with its own request id', async () => {
    const debug = await startTestApp({ env: { LOG_LEVEL: 'debug' } });
    try {
      const answers = [await debug.get('/healthz'), await debug.get('/healthz')];
      const logged = debug.logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'request' && line.path === '/healthz');
      expect(logged.map((line) => line.level)).toEqual([20, 20]);
      expect(logged.map((line) => line.requestId)).toEqual(answers.map((answer) => answer.headers.get('x-request-id')));
    } finally {
      await debug.close();
    }
  });

  it('every line logged while a request is served carries its id; none outside one', () => {
    const from = t.logs.length;
    requestScope.run({ requestId: 'req-123' }, () => t.deps.logger.warn({ detail: 1 }, 'inside a request'));
    t.deps.logger.warn('outside any request');
    expect(lines(from)).toEqual([expect.objectContaining({ msg: 'inside a request', requestId: 'req-123' }), expect.not.objectContaining({ requestId: expect.anything() })]);
  });
});

describe('startup', () => {
  // Where the run's PostgreSQL is (5432, or a cluster the run provisioned on a free port), as the banner names it.
  const database = () => {
    const url = new URL(t.databaseUrl);
    return `PostgreSQL ${url.hostname}${url.port ? `:${url.port}` : ''}${url.pathname}`;
  };
  const env = () => ({ DATABASE_URL: t.databaseUrl, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, JOBS_WORKER: 'false', LOG_LEVEL: 'info' });

  it('logs one JSON line with the facts when stdout is not a terminal', async () => {
    const server = await startServerProcess(env());
    const line = await waitUntil(() => server.output().split('\n').find((text) => text.includes('license service listening')), { timeout: 30_000, what: 'the listening line' });
    // The address it listens on (what a health check or a proxy's backend line needs), then PUBLIC_URL, another address.
    const port = new URL(server.url).port;
    expect(JSON.parse(line)).toMatchObject({ msg: `license service listening on http://127.0.0.1:${port} (PUBLIC_URL http://localhost:${port})`, listening: `http://127.0.0.1:${port}`, port: Number(port) });
    expect(JSON.parse(line)).toMatchObject({ url: expect.stringMatching(/^http:\/\//), database: database(), jobStore: 'PostgreSQL (schema agenda, LISTEN/NOTIFY)', mail: 'development', next: expect.stringMatching(/^Open http:\/\/\S+ to create your company/) });
    expect(line).not.toContain(t.databaseUrl.split('@')[0]);
    expect(server.output()).not.toContain('WEBHOOK_ALLOW_PRIVATE');
  });

  it('warns at start when WEBHOOK_ALLOW_PRIVATE=true (the SSRF guard of webhooks is off)', async () => {
    const server = await startServerProcess({ ...env(), WEBHOOK_ALLOW_PRIVATE: 'true' });
    const line = await waitUntil(() => server.output().split('\n').find((text) => text.includes('WEBHOOK_ALLOW_PRIVATE=true')), { timeout: 30_000, what: 'the warning' });
    expect(JSON.parse(line)).toMatchObject({ level: 40, msg: expect.stringMatching(/SSRF guard of webhooks is off/) });
  });

  itWith(needCommands('script'))('prints a human-readable banner on a terminal: URL, database, job store, mail mode, next step', async () => {
    const port = await freePort();
    // `script` gives the server a pseudo-terminal as stdout, like a person running pnpm start.
    const child = spawn('script', ['-qec', `${process.execPath} --import tsx server/src/main.ts`, '/dev/null'], { env: { ...process.env, ...env(), PORT: String(port), HOST: '127.0.0.1' }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    try {
      await waitUntil(() => output.includes('Next:'), { timeout: 60_000, what: 'the banner' });
      await waitUntil(() => output.includes('JSON lines'), { timeout: 5_000, what: 'the end of the banner' });
      const banner = output.replace(/\r/g, '');
      expect(banner).toContain('Keyforge is running.');
      expect(banner).toMatch(new RegExp(`URL\\s+http://localhost:${port}`));
      expect(banner).toMatch(new RegExp(`Listening on\\s+http://127\\.0\\.0\\.1:${port}`));
      expect(banner).toMatch(/Database\s+PostgreSQL /);
      expect(banner).toContain(database());
      expect(banner).toMatch(/Job store\s+PostgreSQL \(schema agenda, LISTEN\/NOTIFY\) \(jobs run in pnpm worker processes/);
      expect(banner).toMatch(/Email\s+development outbox: nothing is sent/);
      expect(banner).toContain(`Next: Open http://localhost:${port} to create your company and its first admin.`);
      expect(banner).not.toContain('license service listening');
    } finally {
      process.kill(-child.pid!, 'SIGKILL');
    }
  }, 90_000);
});
