import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { decodeProtectedHeader } from 'jose';
import { verifyAuditChain } from '../server/src/services/audit/audit-log.js';
import { rotateSigningKey } from '../server/src/services/signing/signing-keys.js';
import { startTestApp, TestClock, type TestApp } from './support/harness.js';
import { answers, describeWith, itWith, needRedis, type Need } from './support/optional.js';
import { adminUrl } from './support/pg.js';
import { needPgBouncer, startPgBouncer, type PgBouncer } from './support/pgbouncer.js';
import { freePort, startServerProcess, startWorkerProcess, stopAllProcesses, type ServerProcess } from './support/processes.js';
import { waitUntil } from './support/wait.js';

/**
 * docs/operate/deployment.md: the recipe's topology on loopback ports —
 * Debian's HAProxy configured from the shipped server/deploy/haproxy.cfg (only addresses, ports and the health-check
 * interval substituted) → three servers (JOBS_WORKER=false, one SERVER_SECRET, shared Redis, TRUST_PROXY naming the
 * balancer) and a worker → PgBouncer in transaction mode → PostgreSQL with the owner and app roles. Every guarantee is
 * proven through the balancer.
 */
const HAPROXY = process.env.HAPROXY_PATH || '/usr/sbin/haproxy';
const pgbouncerNeed = needPgBouncer();
const redisNeed = await needRedis();
const missing = [existsSync(HAPROXY) ? undefined : `no HAProxy at ${HAPROXY} (install Debian's haproxy, or set HAPROXY_PATH)`, pgbouncerNeed.missing, redisNeed.missing].filter(Boolean);
const need: Need = { what: 'HAProxy, PgBouncer and Redis', missing: missing.length ? missing.join('; ') : undefined };
const it = itWith(need);

const SERVERS = 3;
const RATE_LIMIT = 45;
let bouncer: PgBouncer;
let t: TestApp;
let haproxy: ChildProcess;
let haproxyOutput = '';
let haproxyDir: string;
let balancer: string;
let serverEnv: Record<string, string>;
const ports: number[] = [];
const servers: ServerProcess[] = [];
let admin: { token: string; tenantId: string };

/** The shipped config with this machine's loopback ports, a fast health check, an admin socket and the answering server's name. */
function haproxyConfig(frontendPort: number, socket: string) {
  const shipped = readFileSync('server/deploy/haproxy.cfg', 'utf8');
  const config = shipped
    // The shipped admin socket (what the rolling restart of docs/operate/upgrades.md waits on), in this run's folder.
    .replace(/stats socket \/run\/haproxy\/admin\.sock /, `stats socket ${socket} `)
    .replace(/bind :8080/, `bind 127.0.0.1:${frontendPort}`)
    // The shipped `timeout check` keeps a slow answer on a loaded machine from counting as a failed check.
    .replace(/default-server inter 1s fall 2 rise 2/, 'default-server inter 300ms fall 2 rise 2')
    .replace(/(    server app1 .*\n)(?:    server app\d .*\n?)*/, ports.map((port, i) => `    server app${i + 1} 127.0.0.1:${port} check\n`).join('') + '    http-response set-header x-served-by %s\n');
  // The substitutions must all have happened: the shipped file is what runs.
  for (const expected of [`stats socket ${socket} mode 600 level admin`, `bind 127.0.0.1:${frontendPort}`, 'inter 300ms', 'balance roundrobin', 'option httpchk GET /readyz', 'option forwardfor', 'timeout check 3s', `app${SERVERS} 127.0.0.1`]) expect(config).toContain(expected);
  return config;
}

/** HAProxy's view of each backend server: 'UP', 'DOWN', … (its admin socket's `show stat`). */
async function backendStatus(): Promise<Record<string, string>> {
  const csv = await new Promise<string>((resolve, reject) => {
    let data = '';
    const socket = connect({ path: path.join(haproxyDir, 'admin.sock') }, () => socket.end('show stat\n'));
    socket.on('data', (chunk) => (data += chunk)).on('end', () => resolve(data)).on('error', reject);
  });
  const [header, ...rows] = csv.replace(/^# /, '').trim().split('\n').map((line) => line.split(','));
  const column = (name: string) => header.indexOf(name);
  return Object.fromEntries(rows.filter((row) => row[column('pxname')] === 'keyforge_servers' && /^app\d$/.test(row[column('svname')])).map((row) => [row[column('svname')], row[column('status')]]));
}

const waitForStatus = (server: string, status: string) =>
  waitUntil(async () => (await backendStatus())[server] === status, { timeout: 30_000, interval: 50, what: `HAProxy to see ${server} ${status}` });

let ipCounter = 0;
/** A client address of its own (the balancer appends its peer's after it): the per-IP limit stays out of the way. */
const freshIp = () => `10.${(++ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;

async function call(method: string, pathname: string, { body, ip = freshIp(), token }: { body?: unknown; ip?: string; token?: string } = {}) {
  const headers: Record<string, string> = { 'x-forwarded-for': ip };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(`${balancer}${pathname}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, servedBy: response.headers.get('x-served-by'), json, text };
}

async function activate(licenseKey: string, deviceId: string, nonce?: string) {
  nonce ??= (await call('GET', '/api/v1/nonce')).json.nonce;
  return call('POST', '/api/v1/activate', { body: { licenseKey, deviceId, nonce } });
}

async function seedLicense(maxActivations: number) {
  const product = await t.seedProduct(admin.tenantId, `Product ${Math.random()}`);
  const { key, license } = await t.seedLicense(admin.tenantId, product.id, { maxActivations });
  return { key, licenseId: license.id };
}

/** Steady load through the balancer until `stop()`: `loops` clients each validating one request after another. */
function steadyLoad(licenseKey: string, loops = 4) {
  let running = true;
  const outcomes: { status: number; text: string; startedAfterMark: boolean }[] = [];
  let mark = false;
  const done = Promise.all(
    Array.from({ length: loops }, async () => {
      while (running) {
        const startedAfterMark = mark;
        const response = await call('POST', '/api/v1/validate', { body: { licenseKey } }).catch((error: Error) => ({ status: 0, text: String(error.cause ?? error) }));
        outcomes.push({ status: response.status, text: response.text, startedAfterMark });
      }
    }),
  );
  return {
    outcomes,
    /** From now on, requests are counted as started after the mark. */
    mark: () => (mark = true),
    stop: async () => {
      running = false;
      await done;
      return outcomes;
    },
  };
}

beforeAll(async () => {
  if (need.missing) return;
  bouncer = await startPgBouncer(adminUrl(), { poolSize: 10 });
  t = await startTestApp({ clock: new TestClock(Date.now()) }); // tokens it issues must be current for the real servers
  const setup = await t.setupAdmin();
  admin = { token: setup.token, tenantId: setup.user.tenantId };
  for (let i = 0; i < SERVERS; i++) ports.push(await freePort());
  const frontendPort = await freePort();
  balancer = `http://127.0.0.1:${frontendPort}`;
  serverEnv = {
    DATABASE_URL: bouncer.urlFor(t.databaseUrl),
    DATABASE_POOL_MODE: 'transaction',
    DATABASE_POOL_SIZE: '5',
    SERVER_SECRET: t.config.serverSecret!,
    DATA_DIR: t.config.dataDir,
    JOBS_WORKER: 'false',
    REDIS_URL: redisNeed.url,
    REDIS_KEY_PREFIX: `kf-deploy-${process.pid}-${Date.now()}:`,
    TRUST_PROXY: '127.0.0.1',
    RATE_LIMIT_PUBLIC_PER_MINUTE: String(RATE_LIMIT),
    RATE_LIMIT_TENANT_PER_MINUTE: '1000000',
    RATE_LIMIT_LICENSE_PER_MINUTE: '1000000',
    SHUTDOWN_DRAIN_SECONDS: '3',
    LOG_LEVEL: 'info',
  };
  servers.push(...(await Promise.all(ports.map((port) => startServerProcess({ ...serverEnv, PORT: String(port) })))));
  await startWorkerProcess(serverEnv);

  haproxyDir = mkdtempSync(path.join(tmpdir(), 'keyforge-haproxy-'));
  const configFile = path.join(haproxyDir, 'haproxy.cfg');
  writeFileSync(configFile, haproxyConfig(frontendPort, path.join(haproxyDir, 'admin.sock')));
  haproxy = spawn(HAPROXY, ['-db', '-f', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  haproxy.stdout!.on('data', (chunk) => (haproxyOutput += chunk));
  haproxy.stderr!.on('data', (chunk) => (haproxyOutput += chunk));
  await waitUntil(
    async () => {
      if (haproxy.exitCode !== null) throw new Error(`haproxy exited with ${haproxy.exitCode}:\n${haproxyOutput}`);
      return (await answers('127.0.0.1', frontendPort, 500)) && existsSync(path.join(haproxyDir, 'admin.sock'));
    },
    { timeout: 20_000, what: 'HAProxy to listen' },
  );
  await waitUntil(async () => Object.values(await backendStatus()).filter((status) => status === 'UP').length === SERVERS, { timeout: 30_000, what: 'every server UP in HAProxy' });
}, 180_000);

afterAll(async () => {
  if (haproxy && haproxy.exitCode === null) {
    const exited = new Promise((resolve) => haproxy.once('exit', resolve));
    haproxy.kill('SIGKILL');
    await exited;
  }
  if (haproxyDir) rmSync(haproxyDir, { recursive: true, force: true });
  await stopAllProcesses();
  await t?.close();
  await bouncer?.stop();
});

describeWith(need)('the load-balanced deployment: HAProxy → three servers and a worker → PgBouncer → PostgreSQL', () => {
  it('round robin over every server; the seat race takes exactly the seats', async () => {
    const { key, licenseId } = await seedLicense(5);
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => activate(key, `device-${i}`)));
    expect(results.filter((r) => r.status >= 500), JSON.stringify(results.filter((r) => r.status >= 500))).toEqual([]);
    expect(results.filter((r) => r.status === 200 && r.json?.isValid === true)).toHaveLength(5);
    expect(new Set(results.map((r) => r.servedBy))).toEqual(new Set(['app1', 'app2', 'app3']));
    expect(await t.prisma.activation.count({ where: { licenseId } })).toBe(5);
    expect((await t.prisma.license.findUniqueOrThrow({ where: { id: licenseId } })).currentActivations).toBe(5);
  }, 60_000);

  it('one nonce raced at the three servers has exactly one winner, round after round', async () => {
    const { key } = await seedLicense(100);
    const racers = new Set<string | null>();
    for (let round = 0; round < 6; round++) {
      const nonce = (await call('GET', '/api/v1/nonce')).json.nonce;
      const results = await Promise.all([0, 1, 2].map((i) => activate(key, `nonce-${round}-${i}`, nonce)));
      expect(results.filter((r) => r.status >= 500), `round ${round}`).toEqual([]);
      expect(results.filter((r) => r.status === 200 && r.json?.isValid === true), `round ${round}`).toHaveLength(1);
      // Round robin under concurrency (HAProxy runs a thread per core) spreads the three over at least two servers.
      expect(new Set(results.map((r) => r.servedBy)).size, `round ${round}: raced across servers`).toBeGreaterThanOrEqual(2);
      for (const r of results) racers.add(r.servedBy);
    }
    expect(racers.size).toBe(SERVERS);
  }, 60_000);

  it('the per-IP limit is counted once across the servers (the address comes from the balancer’s X-Forwarded-For)', async () => {
    const ip = '203.0.113.77';
    const statuses: number[] = [];
    const servedBy = new Set<string | null>();
    for (let i = 0; i < RATE_LIMIT + 3; i++) {
      const response = await call('GET', '/api/v1/nonce', { ip });
      statuses.push(response.status);
      servedBy.add(response.servedBy);
    }
    expect(statuses.indexOf(429)).toBe(RATE_LIMIT);
    expect(statuses.slice(RATE_LIMIT).every((status) => status === 429)).toBe(true);
    expect(servedBy.size).toBe(SERVERS);
    // Another address has its own budget.
    expect((await call('GET', '/api/v1/nonce', { ip: '203.0.113.78' })).status).toBe(200);
  }, 60_000);

  it('the activity chain is valid after concurrent admin writes through different servers', async () => {
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        call('POST', '/api/graphql', { token: admin.token, body: { query: 'mutation($name: String!) { createProduct(input: { name: $name }) { product { id } } }', variables: { name: `Chain ${i}` } } }),
      ),
    );
    expect(results.filter((r) => r.status !== 200 || r.json?.errors), JSON.stringify(results.find((r) => r.status !== 200 || r.json?.errors))).toEqual([]);
    expect(new Set(results.map((r) => r.servedBy)).size).toBe(SERVERS);
    expect(await verifyAuditChain(t.prisma, admin.tenantId, t.deps.secrets.auditChainKey)).toMatchObject({ valid: true, brokenAtSeq: null });
  }, 60_000);

  it('a signing-key rotation reaches every server: each signs with the new key soon after', async () => {
    const { key } = await seedLicense(5);
    const { kid } = await rotateSigningKey({ db: t.deps.db, secrets: t.deps.secrets, now: new Date() }, { immediately: true });
    for (const server of servers) {
      await waitUntil(
        async () => {
          const response = await fetch(`${server.url}/api/v1/validate`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': freshIp() }, body: JSON.stringify({ licenseKey: key }) });
          const token = ((await response.json()) as { offlineCacheToken?: string }).offlineCacheToken;
          return token && decodeProtectedHeader(token).kid === kid;
        },
        { timeout: 30_000, interval: 200, what: `${server.url} to sign with ${kid}` },
      );
    }
  }, 60_000);

  it('a rolling SIGTERM restart of every server under steady load fails no request', async () => {
    const { key } = await seedLicense(5);
    const load = steadyLoad(key);
    for (let i = 0; i < SERVERS; i++) {
      const name = `app${i + 1}`;
      expect(await servers[i].stop('SIGTERM')).toBe(0);
      servers[i] = await startServerProcess({ ...serverEnv, PORT: String(ports[i]) });
      await waitForStatus(name, 'UP');
    }
    const outcomes = await load.stop();
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(30);
  }, 120_000);

  it('a SIGKILLed server costs errors only until HAProxy marks it down; then every request succeeds', async () => {
    const { key } = await seedLicense(5);
    const load = steadyLoad(key);
    await waitUntil(() => load.outcomes.length >= 10, { timeout: 30_000, what: 'load to run' });
    await servers[1].stop('SIGKILL');
    await waitForStatus('app2', 'DOWN');
    load.mark();
    const countAfter = () => load.outcomes.filter((o) => o.startedAfterMark).length;
    await waitUntil(() => countAfter() >= 40, { timeout: 30_000, what: '40 requests after app2 went down' });
    const outcomes = await load.stop();
    const after = outcomes.filter((o) => o.startedAfterMark);
    expect(after.filter((o) => o.status !== 200)).toEqual([]);
    // Whatever failed, failed inside the health-check window (and HAProxy's retries usually hide even those).
    expect(outcomes.filter((o) => !o.startedAfterMark && o.status !== 200 && o.status !== 502 && o.status !== 503 && o.status !== 0)).toEqual([]);
    servers[1] = await startServerProcess({ ...serverEnv, PORT: String(ports[1]) });
    await waitForStatus('app2', 'UP');
    expect((await call('POST', '/api/v1/validate', { body: { licenseKey: key } })).status).toBe(200);
  }, 120_000);
});
