// `pnpm bench`: the production server (server/dist/main.js) against a bare "floor" (bench/floor.ts) doing the
// same essential work, on a fresh PostgreSQL database, driven by autocannon over loopback.
// Env: BENCH_DURATION (s, default 10), BENCH_WARMUP (s, 2), BENCH_CONNECTIONS (16), BENCH_SCENARIOS (validate,device,activate,hotkey,revoke; revoke: bench/revoke.ts,
//      BENCH_REVOKE_SECONDS (20); `writes`, only when named: bench/writes.ts, BENCH_WRITES_CONDITIONS (quiet,loaded,sync),
//      BENCH_WRITES_ROUNDS (7), BENCH_WRITES_SPLIT (triggers or cache: one half of the machinery); `upload`, only when named: bench/upload.ts, BENCH_UPLOAD_MB (512, up to 2048),
//      BENCH_DOWNLOADS (50)),
//      BENCH_ROUNDS (1; e.g. 3: each scenario runs that many times on both servers, the order alternating per round, and
//      the ratio reported is the median of the rounds' ratios),
//      BENCH_CPU_PROF=1 (profile both servers into bench/results/profiles/), BENCH_SERVER_ENTRY (default
//      server/dist/main.js, e.g. a patched copy for a what-if), BENCH_DATABASE_URL or TEST_DATABASE_URL (admin URL),
//      BENCH_METRICS=1 (the real server with its Prometheus metrics on: METRICS_TOKEN set; docs/operate/observability.md),
//      BENCH_METRICS=compare (validate on two real servers, metrics off and on, in BENCH_COMPARE_ROUNDS (5) alternating
//      rounds; the median on/off ratio),
//      BENCH_POOLER=pgbouncer (both servers reach PostgreSQL through Debian's PgBouncer in transaction mode, the floor
//      with unnamed statements like the real server: docs/operate/deployment.md "What makes transaction pooling work"),
//      BENCH_EXISTING_DB=<name> (run against that database, e.g. the 1M-license one of `pnpm bench:scale`, instead of a
//      fresh one: it is migrated, gets its own bench tenant and is kept afterwards).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon, { type Request, type Result } from 'autocannon';
import pg from 'pg';
import { startPgBouncer } from '../test/support/pgbouncer.js';
import { runRevokeScenario, type RevokeResult } from './revoke.js';
import { runUploadScenario } from './upload.js';
import { runWritesScenario, writesReport, type WritesCondition, type WritesResult } from './writes.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const RESULTS = path.join(ROOT, 'bench', 'results');
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`BENCH_ROUNDS: a whole number of at least 1, not '${process.env.BENCH_ROUNDS}'`);
const SCENARIOS = (process.env.BENCH_SCENARIOS ?? 'validate,device,activate,hotkey,revoke').split(',').map((s) => s.trim());
const WRITES_CONDITIONS = (process.env.BENCH_WRITES_CONDITIONS ?? 'quiet,loaded,sync').split(',').map((s) => s.trim()) as WritesCondition[];
const WRITES_ROUNDS = Number(process.env.BENCH_WRITES_ROUNDS ?? 7);
const UPLOAD_MB = Number(process.env.BENCH_UPLOAD_MB ?? 512);
if (!Number.isInteger(UPLOAD_MB) || UPLOAD_MB < 1 || UPLOAD_MB > 2048) throw new Error(`BENCH_UPLOAD_MB: a whole number of MiB from 1 to 2048, not '${process.env.BENCH_UPLOAD_MB}'`);
const DOWNLOADS = Number(process.env.BENCH_DOWNLOADS ?? 50);
const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
const METRICS = process.env.BENCH_METRICS === '1';
const COMPARE_METRICS = process.env.BENCH_METRICS === 'compare';
const COMPARE_ROUNDS = Number(process.env.BENCH_COMPARE_ROUNDS ?? 5);
const POOLER = process.env.BENCH_POOLER === 'pgbouncer';
if (process.env.BENCH_POOLER && !POOLER) throw new Error(`BENCH_POOLER: only 'pgbouncer' is known, not '${process.env.BENCH_POOLER}'`);
const DEFAULT_ENTRY = 'server/dist/main.js';
const SERVER_ENTRY = process.env.BENCH_SERVER_ENTRY ?? DEFAULT_ENTRY;
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const GOAL = 1.3; // validate ≥ 1.3× floor, p99 ≤ 1.0× (the license cache); activate ≥ 0.7×
const P99_GOAL = 1.0;
const RETRY_WAIT_MS = 60_000; // a colleague may be mid-edit: wait a minute, then retry
// Watchdog, generous enough for the retries (the writes scenario: up to 2 min per run, on a busy machine).
const HARD_LIMIT_MS = (6 + 5 * (ROUNDS - 1)) * 60_000 + (SCENARIOS.includes('writes') ? (WRITES_CONDITIONS.length * WRITES_ROUNDS * 2 + 2) * 120_000 : 0);
const CLK_TCK = 100; // /proc/<pid>/stat CPU times are in ticks of 1/100 s on Linux

// ---------------------------------------------------------------- cleanup, whatever happens

const cleanups: (() => Promise<unknown> | void)[] = [];
async function cleanup() {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch((e) => console.error('cleanup:', (e as Error).message));
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanup().finally(() => process.exit(130)));
}
setTimeout(() => {
  console.error(`bench: over ${HARD_LIMIT_MS / 1000} s, aborting`);
  void cleanup().finally(() => process.exit(1));
}, HARD_LIMIT_MS).unref();

// ---------------------------------------------------------------- helpers

async function admin(sql: string) {
  return sqlOn(ADMIN_URL, sql);
}

async function sqlOn(connectionString: string, sql: string) {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function dbUrl(name: string) {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function retrying<T>(what: string, attempts: number, run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= attempts) throw error;
      console.warn(`${what} failed (${(error as Error).message.split('\n')[0]}); retrying in ${RETRY_WAIT_MS / 1000} s`);
      await sleep(RETRY_WAIT_MS);
    }
  }
}

/** Runs a command to completion; rejects with its output on a non-zero exit. */
async function exec(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const child = spawn(cmd, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  cleanups.push(() => void child.kill('SIGKILL'));
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${code}:\n${output.slice(-2000)}`);
  return output;
}

function newestMtime(dir: string): number {
  return Math.max(0, ...readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => statSync(path.join(e.parentPath, e.name)).mtimeMs));
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

/** CPU seconds (user + system, all threads) a process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime
}

/** Share of the machine's CPU busy over one second: anything else running adds noise to the figures. */
async function machineBusy(): Promise<number> {
  const sample = () => readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1).map(Number);
  const a = sample();
  await sleep(1000);
  const d = sample().map((v, i) => v - a[i]);
  const total = d.reduce((x, y) => x + y, 0);
  return total ? 1 - (d[3] + d[4]) / total : 0; // idle + iowait
}

interface Target {
  /** The scenario `writes` (bench/writes.ts) names its own servers. */
  name: 'keyforge' | 'floor' | 'keyforge+metrics' | `${string}cache-${'on' | 'off'}`;
  base: string;
  pid: number;
}

// PostgreSQL CPU per request: the CPU time of the database's server processes (backends) serving one target,
// found by the application_name each target's connections carry (PGAPPNAME; the license cache's LISTEN session
// names itself), read from /proc (PostgreSQL runs on this machine).
let benchDatabase = '';
const appNames = (target: Target) => (target.name === 'floor' ? ['bench-floor'] : [`bench-${target.name}`, 'keyforge-listen-license_cache']);
async function backendCpu(target: Target): Promise<Map<number, number>> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = ANY($2)', [benchDatabase, appNames(target)]);
    const cpu = new Map<number, number>();
    for (const { pid } of rows) {
      try {
        cpu.set(pid, cpuSeconds(pid));
      } catch {
        // exited meanwhile
      }
    }
    return cpu;
  } finally {
    await client.end();
  }
}
const cpuBetween = (before: Map<number, number>, after: Map<number, number>) => [...after].reduce((sum, [pid, cpu]) => sum + cpu - (before.get(pid) ?? 0), 0);

/** Starts a node child process serving HTTP and waits for its /readyz; stops it (SIGTERM, then SIGKILL) on cleanup. */
async function startServer(name: Target['name'], args: string[], env: NodeJS.ProcessEnv): Promise<Target> {
  const child: ChildProcess = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (d) => process.stderr.write(`[${name}] ${d}`));
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM'); // graceful: lets --cpu-prof write its profile
    if (!(await Promise.race([once(child, 'exit').then(() => true), sleep(12_000).then(() => false)]))) child.kill('SIGKILL');
  });
  const base = `http://127.0.0.1:${env.PORT}`;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} during startup`);
    if (await fetch(`${base}/readyz`).then((r) => r.ok, () => false)) return { name, base, pid: child.pid! };
  }
  throw new Error(`${name} not ready after 30 s`);
}

// ---------------------------------------------------------------- load

interface Row {
  scenario: string;
  /** Which of the BENCH_ROUNDS runs (0-based): rows of one round and scenario are compared with each other. */
  round: number;
  server: Target['name'];
  rps: number;
  p50: number;
  p99: number;
  /** CPU time the server process used per request (all its threads): less sensitive to other load than req/s. */
  cpuUsPerRequest: number;
  /** CPU time PostgreSQL's backends serving this server used per request. */
  pgCpuUsPerRequest: number;
  requests: number;
  errors: number;
  detail: { non2xx: number; socketErrors: number; timeouts: number; invalidBodies: number; poolExhausted: number; bytesPerResponse: number; bodyBytes: number; sample?: string };
}

const served: Record<string, number> = { keyforge: 0, floor: 0, 'keyforge+metrics': 0 }; // every request each server handled (for µs/request from a CPU profile)

/** Fresh nonces: from GET /api/v1/nonce on the real server; inserted directly for the floor. */
async function issueNonces(target: Target, url: string, count: number): Promise<string[]> {
  if (target.name === 'floor') {
    const nonces = Array.from({ length: count }, () => randomBytes(24).toString('base64url'));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(
      `INSERT INTO nonces (digest, expires_at) SELECT d, now() + interval '5 minutes' FROM unnest($1::text[]) AS d`,
      [nonces.map((n) => createHash('sha256').update(n).digest('hex'))],
    );
    await client.end();
    return nonces;
  }
  const nonces: string[] = [];
  const result = await autocannon({
    url: target.base, connections: CONNECTIONS, amount: count,
    requests: [{ method: 'GET', path: '/api/v1/nonce', onResponse: (status, body) => void (status === 200 && nonces.push(JSON.parse(body).nonce)) }],
  });
  served[target.name] = (served[target.name] ?? 0) + result.requests.total;
  if (result.non2xx || result.errors) throw new Error(`nonce issuance: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return nonces;
}

/** One autocannon run; every 2xx body must say "isValid":true, anything else is counted as an error. */
async function load(target: Target, seconds: number, request: Request) {
  const detail: Row['detail'] = { non2xx: 0, socketErrors: 0, timeouts: 0, invalidBodies: 0, poolExhausted: 0, bytesPerResponse: 0, bodyBytes: 0 };
  const cpuBefore = cpuSeconds(target.pid);
  const pgBefore = await backendCpu(target);
  const run = autocannon({
    url: target.base, connections: CONNECTIONS, duration: seconds,
    requests: [{
      ...request,
      onResponse(status, body) {
        if (status >= 200 && status < 300 && body.includes('"isValid":true')) return void (detail.bodyBytes ||= Buffer.byteLength(body));
        if (status < 300) detail.invalidBodies++;
        detail.sample ??= `HTTP ${status} ${body.slice(0, 300)}`;
      },
    }],
  });
  // autocannon's own histogram has 1 ms resolution; keep every 2xx latency to report p50/p99 to 0.1 ms.
  const latencies: number[] = [];
  run.on('response', (_client, status, _bytes, ms) => void (status < 300 && latencies.push(ms)));
  const result: Result = await run;
  const cpuUsPerRequest = Math.round(((cpuSeconds(target.pid) - cpuBefore) * 1e6) / Math.max(1, result.requests.total));
  const pgCpuUsPerRequest = Math.round((cpuBetween(pgBefore, await backendCpu(target)) * 1e6) / Math.max(1, result.requests.total));
  served[target.name] = (served[target.name] ?? 0) + result.requests.total;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? NaN) * 10) / 10;
  const bytesPerResponse = Math.round(result.throughput.total / Math.max(1, result['2xx'])); // headers + body
  Object.assign(detail, { non2xx: result.non2xx, socketErrors: result.errors, timeouts: result.timeouts, bytesPerResponse });
  return { result, detail, p50: pct(0.5), p99: pct(0.99), cpuUsPerRequest, pgCpuUsPerRequest };
}

/** What bench/seed.ts made: the validate key, the activate keys, and the validate key's license with its installations. */
interface Seed {
  key: string;
  keys: string[];
  licenseId: string;
  devices: number;
  adminKey: string;
  productId: string;
  productName: string;
}

async function runScenario(scenario: string, target: Target, url: string, seed: Seed, round = 0): Promise<Row> {
  const { key } = seed;
  const headers = { 'content-type': 'application/json' };
  let make: () => Request;
  let pool: { nonces: string[]; next: number; exhausted: number } | undefined;
  if (scenario === 'validate') {
    make = () => ({ method: 'POST', path: '/api/v1/validate', headers, body: JSON.stringify({ licenseKey: key }) });
  } else if (scenario === 'device') {
    // Validate with the device-scoped opt-in, rotating over the 1,000 installations bench/seed.ts made (the floor
    // runs the server's own device statement too: bench/floor.ts).
    let i = 0;
    make = () => ({
      method: 'POST', path: '/api/v1/validate', headers,
      setupRequest: (req) => ({ ...req, body: JSON.stringify({ licenseKey: key, deviceId: `bench-seat-${i++ % seed.devices}`, requireActivation: true }) }),
    });
  } else if (scenario === 'activate' || scenario === 'hotkey') {
    // A fresh nonce and a new deviceId per request: every request is a new installation taking a seat. activate:
    // spread over 200 licenses (each request another license); hotkey: all on one license, queuing on its row lock.
    const p = (pool = { nonces: [] as string[], next: 0, exhausted: 0 });
    const keyOf = scenario === 'hotkey' ? () => key : (i: number) => seed.keys[i % seed.keys.length];
    make = () => ({
      method: 'POST', path: '/api/v1/activate', headers,
      setupRequest(req) {
        const i = p.next++;
        if (i >= p.nonces.length) p.exhausted++; // sent without a nonce: the 400 counts as an error
        const deviceId = createHash('sha256').update(`bench-device-${target.name}-${i}-${Math.random()}`).digest('hex');
        return { ...req, body: JSON.stringify({ licenseKey: keyOf(i), nonce: p.nonces[i], deviceId }) };
      },
    });
  } else {
    throw new Error(`unknown scenario ${scenario}`);
  }

  // Warm-up (JIT, connection pools, prepared statements): results discarded.
  if (pool) Object.assign(pool, { nonces: await issueNonces(target, url, WARMUP * 4000), next: 0 });
  const warm = await load(target, WARMUP, make());
  // The warm-up refreshed the devices' lastSeenAt: make every one stale again, so that the timed run includes the
  // one write per device per interval (1,000 writes) rather than none.
  if (scenario === 'device') await sqlOn(url, `UPDATE activations SET last_seen_at = now() - interval '1 hour' WHERE license_id = '${seed.licenseId}'`);
  if (pool) {
    // Size the timed run's pool from the warm-up rate, with a 2× margin (the warm-up is the slow part).
    const rate = warm.result['2xx'] / Math.max(warm.result.duration, 1);
    const count = Math.min(150_000, Math.ceil(rate * DURATION * 2) + 2000);
    Object.assign(pool, { nonces: await issueNonces(target, url, count), next: 0, exhausted: 0 });
  }

  const { result, detail, p50, p99, cpuUsPerRequest, pgCpuUsPerRequest } = await load(target, DURATION, make());
  detail.poolExhausted = pool?.exhausted ?? 0;
  const row: Row = {
    scenario, round, server: target.name, rps: Math.round(result.requests.average), p50, p99, cpuUsPerRequest, pgCpuUsPerRequest,
    requests: result.requests.total, errors: detail.non2xx + detail.socketErrors + detail.timeouts + detail.invalidBodies, detail,
  };
  console.log(`  ${scenario.padEnd(8)}${ROUNDS > 1 ? ` round ${round + 1}` : ''} ${target.name.padEnd(8)} ${String(row.rps).padStart(6)} req/s  p50 ${p50} ms  p99 ${p99} ms  ` +
    `server CPU ${cpuUsPerRequest} µs/req  PostgreSQL CPU ${pgCpuUsPerRequest} µs/req  errors ${row.errors}` + (detail.sample ? `  (e.g. ${detail.sample.slice(0, 160)})` : ''));
  return row;
}

// ---------------------------------------------------------------- report

function machine() {
  const cpu = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  return { cpu, cores: os.availableParallelism(), node: process.version, os: `${os.type()} ${os.release()}` };
}

function report(rows: Row[], busyBefore: number, revoke?: RevokeResult, writes?: WritesResult) {
  const m = machine();
  const round = (x: number) => Math.round(x * 100) / 100;
  const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)];
  // Per scenario: each round's keyforge/floor ratios, and their medians (one round: its own ratios).
  type Ratio = { throughput: number; cpuPerRequest: number; p99: number; pgCpuPerRequest: number };
  const ratios: Record<string, (Ratio & { rounds?: Ratio[] }) | null> = Object.fromEntries([...new Set(rows.map((r) => r.scenario))].map((s) => {
    const rounds = [...new Set(rows.filter((r) => r.scenario === s).map((r) => r.round))].flatMap((n) => {
      const [k, f] = ['keyforge', 'floor'].map((server) => rows.find((r) => r.scenario === s && r.round === n && r.server === server));
      return k && f && f.rps ? [<Ratio>{ throughput: round(k.rps / f.rps), cpuPerRequest: round(k.cpuUsPerRequest / f.cpuUsPerRequest), p99: round(k.p99 / f.p99), pgCpuPerRequest: round(k.pgCpuUsPerRequest / Math.max(1, f.pgCpuUsPerRequest)) }] : [];
    });
    if (!rounds.length) return [s, null];
    const summary = { throughput: median(rounds.map((r) => r.throughput)), cpuPerRequest: median(rounds.map((r) => r.cpuPerRequest)), p99: median(rounds.map((r) => r.p99)), pgCpuPerRequest: median(rounds.map((r) => r.pgCpuPerRequest)) };
    return [s, rounds.length > 1 ? { ...summary, rounds } : summary];
  }));
  const ratioOf = (r: Row) => (ROUNDS > 1 ? ratios[r.scenario]?.rounds?.[r.round]?.throughput : ratios[r.scenario]?.throughput);
  const clean = rows.every((r) => r.errors === 0);
  const validate = ratios.validate?.throughput;
  const met = validate != null && validate >= GOAL && ratios.validate!.p99 <= P99_GOAL && clean;
  const table = [
    `| scenario |${ROUNDS > 1 ? ' round |' : ''} server | requests/s | p50 (ms) | p99 (ms) | server CPU/request (µs) | PostgreSQL CPU/request (µs) | errors | keyforge/floor (req/s) |`,
    `|---|${ROUNDS > 1 ? '---:|' : ''}---|---:|---:|---:|---:|---:|---:|---:|`,
    ...rows.map((r) => `| ${r.scenario} |${ROUNDS > 1 ? ` ${r.round + 1} |` : ''} ${r.server} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.cpuUsPerRequest} | ${r.pgCpuUsPerRequest} | ${r.errors} | ` +
      `${r.server === 'keyforge' ? `${ratioOf(r) ?? '–'}×` : ''} |`),
  ].join('\n');
  const medians = ROUNDS > 1
    ? `\nMedians of ${ROUNDS} rounds, keyforge/floor: ${Object.entries(ratios).filter(([, v]) => v).map(([s, v]) => `${s} ${v!.throughput}× req/s, ${v!.cpuPerRequest}× CPU/request, ${v!.p99}× p99`).join('; ')}.\n`
    : '';
  const goal = validate == null
    ? `Goal: validate ≥ ${GOAL}× floor — not measured in this run.`
    : `Goal: validate ≥ ${GOAL}× floor${ROUNDS > 1 ? ` (median of ${ROUNDS} rounds)` : ''} — ${met ? 'met' : 'NOT met'} (${validate}×${clean ? '' : ', with errors'}); ` +
      `p99 ${ratios.validate!.p99}× the floor's (goal ≤ ${P99_GOAL}×); PostgreSQL CPU per validate ${ratios.validate!.pgCpuPerRequest}× the floor's (which reads the database every time; goal < 0.1×).`;
  const setup = `${m.cpu}, ${m.cores} cores, Node ${m.node}; PostgreSQL 15 and the load generator (autocannon, ${CONNECTIONS} connections, ` +
    `${DURATION} s after a ${WARMUP} s warm-up${ROUNDS > 1 ? `, ${ROUNDS} rounds in alternating order` : ''}, loopback) share the machine. Real server: \`node server/dist/main.js\`, LOG_LEVEL=warn ` +
    `(no per-request log lines), rate limits raised out of the way. Floor: bench/floor.ts (node:http + pg + jose, same SQL, same token). ` +
    `Activate: a fresh nonce and a new deviceId per request (a new seat each time), spread over 200 licenses; hotkey: the same, all on one license.` +
    (POOLER ? ' Both servers through PgBouncer 1.18 in transaction mode (unnamed statements on both).' : '');

  console.log(`\nMachine: ${m.cpu}, ${m.cores} cores, Node ${m.node}, ${m.os}; CPU ${Math.round(busyBefore * 100)}% busy before the run`);
  const revoked = revoke
    ? `\nRevoke under load (3 servers behind HAProxy, ${revoke.validatesPerSecond} validates/s over 10,000 keys, ${revoke.changes} revocations, suspensions and reissues at 50/s; ` +
      `from the commit to the first refused validate's answer, and to the sending of that request, per server):\n\n| server | answered p50 (ms) | p99 | max | request sent p50 (ms) | p99 | max | changes |\n|---|---:|---:|---:|---:|---:|---:|---:|\n` +
      revoke.replicas.map((r) => `| ${r.name} | ${r.p50} | ${r.p99} | ${r.max} | ${r.sentP50} | ${r.sentP99} | ${r.sentMax} | ${r.changes}${r.unrefused ? ` (${r.unrefused} never refused)` : ''} |`).join('\n') +
      `\n\nValid answers to requests sent more than 1 s after the change's commit: ${revoke.validAfterBound} (goal 0); load errors: ${revoke.loadErrors}.`
    : '';
  const written = writes ? writesReport(writes) : '';
  console.log(`\n${table}\n${medians}\n${goal}${revoked}${written}`);
  if (CPU_PROF) console.log('(BENCH_CPU_PROF=1: both servers ran under --cpu-prof, so their figures are lower than usual.)');
  if (METRICS) console.log('(BENCH_METRICS=1: the real server counted its Prometheus metrics.)');
  if (POOLER) console.log('(BENCH_POOLER=pgbouncer: both servers went through PgBouncer in transaction mode.)');
  if (CPU_PROF || METRICS || SERVER_ENTRY !== DEFAULT_ENTRY || process.env.BENCH_EXISTING_DB || process.env.BENCH_WRITES_SPLIT) return console.log('(Profiled, experimental or existing-database run: bench/results/latest.* left unchanged.)');
  if (writes) {
    mkdirSync(RESULTS, { recursive: true });
    const date = new Date().toISOString();
    writeFileSync(path.join(RESULTS, 'writes-latest.json'), `${JSON.stringify({ date, machine: { ...m, cpuBusyBeforeRun: round(busyBefore) }, connections: CONNECTIONS, durationSeconds: DURATION, writes }, null, 2)}\n`);
    writeFileSync(path.join(RESULTS, 'writes-latest.md'), `Measured with \`BENCH_SCENARIOS=writes pnpm bench\` on ${date.slice(0, 10)}: ${m.cpu}, ${m.cores} cores, ${CONNECTIONS} clients, ${DURATION} s per run after a ${WARMUP} s warm-up.\n${written}\n`);
    console.log('\nWrote bench/results/writes-latest.json and bench/results/writes-latest.md');
    if (!rows.length && !revoke) return;
  }

  mkdirSync(RESULTS, { recursive: true });
  const config = { pooler: POOLER ? 'pgbouncer (transaction mode)' : 'none', durationSeconds: DURATION, warmupSeconds: WARMUP, rounds: ROUNDS, connections: CONNECTIONS, logLevel: 'warn', activate: 'fresh nonce and new deviceId per request, 200 licenses', hotkey: 'the same on one license' };
  const json = { date: new Date().toISOString(), machine: { ...m, cpuBusyBeforeRun: round(busyBefore) }, config, results: rows, ratios, revoke, writes, goal: { validateAtLeast: GOAL, p99AtMost: P99_GOAL, met } };
  writeFileSync(path.join(RESULTS, 'latest.json'), `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(path.join(RESULTS, 'latest.md'), `Measured with \`pnpm bench\` on ${json.date.slice(0, 10)}: ${setup}\n\n${table}\n${medians}\n${goal}\n${revoked}\n${written}\n`);
  console.log('\nWrote bench/results/latest.json and bench/results/latest.md');
}

// ---------------------------------------------------------------- main

async function main() {
  const m = machine();
  console.log(`keyforge bench: ${m.cpu}, ${m.cores} cores, Node ${m.node}; ${CONNECTIONS} connections, ${WARMUP} s warm-up + ${DURATION} s per run`);
  console.log('The real server runs with LOG_LEVEL=warn so per-request log lines do not dominate.');

  // 1. A fresh database, migrated and seeded (in a child process; retried after a minute if the code is mid-edit).
  const secret = randomBytes(32).toString('base64url');
  const existing = process.env.BENCH_EXISTING_DB;
  const name = existing ?? `kf_bench_${randomBytes(5).toString('hex')}`;
  const url = dbUrl(name);
  benchDatabase = name;
  const drop = () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  if (!existing) cleanups.push(drop);
  const seedOutput = await retrying('migrate/seed', 3, async () => {
    if (!existing) {
      await drop();
      await admin(`CREATE DATABASE "${name}"`);
    }
    // A fresh tenant key prefix for every run on an existing database.
    const prefix = existing ? `B${randomBytes(4).toString('hex').toUpperCase()}` : 'BENCH';
    return exec(process.execPath, ['--import', 'tsx', 'bench/seed.ts'], { ...process.env, BENCH_DB_URL: url, SERVER_SECRET: secret, BENCH_KEY_PREFIX: prefix });
  });
  const seed = JSON.parse(/BENCH_SEED (.+)/.exec(seedOutput)![1]) as Seed;
  console.log(`database ${name} migrated and seeded${existing ? ' (existing database, kept)' : ''}`);

  // 2. Build the server when its output is missing or older than the sources.
  const mainJs = path.join(ROOT, DEFAULT_ENTRY);
  const built = (() => { try { return statSync(mainJs).mtimeMs; } catch { return 0; } })();
  if (built < newestMtime(path.join(ROOT, 'server/src'))) {
    console.log('building the server (pnpm --filter ./server build)…');
    await retrying('build', 2, () => exec('pnpm', ['--filter', './server', 'build'])).catch((error: Error) => {
      if (!built) throw error;
      console.warn(`build failed; using the existing server/dist:\n${error.message.slice(0, 500)}`);
    });
  }

  // 3. The real server and the floor, each in its own process.
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kf-bench-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const high = '100000000';
  // Through the pooler both servers get its URL; the real server then also polls for jobs instead of LISTENing.
  let serverDbUrl = url;
  if (POOLER) {
    const bouncer = await startPgBouncer(url);
    cleanups.push(() => bouncer.stop());
    serverDbUrl = bouncer.urlFor(url);
    console.log(`both servers connect through PgBouncer (transaction mode) on port ${bouncer.port}`);
  }
  const env = (port: number) => ({
    ...process.env, NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: serverDbUrl, SERVER_SECRET: secret,
    // The license cache LISTENs straight to PostgreSQL, as in production behind a transaction-mode pooler.
    ...(POOLER ? { DATABASE_POOL_MODE: 'transaction', DATABASE_DIRECT_URL: url, FLOOR_UNNAMED_STATEMENTS: '1' } : {}),
    DATA_DIR: dataDir, LOG_LEVEL: 'warn', REDIS_URL: '', RATE_LIMIT_PUBLIC_PER_MINUTE: high, RATE_LIMIT_TENANT_PER_MINUTE: high, RATE_LIMIT_LICENSE_PER_MINUTE: high,
    METRICS_TOKEN: METRICS ? secret : '',
  });
  if (COMPARE_METRICS) return compareMetrics(env, url, seed, secret);
  // Profiles: one folder per server, as tsx's loader thread writes one too (the main thread's is *.0.001.cpuprofile).
  const profDir = path.join(RESULTS, 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
  const prof = (name: string) => (CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', path.join(profDir, name)] : []);
  const targets = [
    await startServer('keyforge', [...prof('keyforge'), SERVER_ENTRY], { ...env(await freePort()), PGAPPNAME: 'bench-keyforge' }),
    await startServer('floor', [...prof('floor'), '--import', 'tsx', 'bench/floor.ts'], { ...env(await freePort()), PGAPPNAME: 'bench-floor' }),
  ];

  // 4. Each scenario on both servers.
  const busyBefore = await machineBusy();
  if (busyBefore > 0.15) console.warn(`note: the CPU was ${Math.round(busyBefore * 100)}% busy before the run; other processes add noise`);
  const rows: Row[] = [];
  // With several rounds the order alternates (keyforge first, then the floor first, …): a drift in the machine's load
  // or a server's warm-up then falls on both alike.
  for (const scenario of SCENARIOS.filter((s) => s !== 'revoke' && s !== 'writes' && s !== 'upload')) {
    for (let round = 0; round < ROUNDS; round++) {
      for (const target of round % 2 ? [...targets].reverse() : targets) rows.push(await runScenario(scenario, target, url, seed, round));
    }
  }
  // Revoke under load: three more real servers behind HAProxy, once (not per round, no floor).
  let revoke: RevokeResult | undefined;
  if (SCENARIOS.includes('revoke')) {
    revoke = await runRevokeScenario({ root: ROOT, url, secret, entry: SERVER_ENTRY, freePort, cleanups, licenseId: seed.licenseId, env: (port) => ({ ...env(port), PGAPPNAME: 'bench-replica' }) });
  }
  // License writes with the cache's machinery on and off (bench/writes.ts): only when named in BENCH_SCENARIOS.
  let writes: WritesResult | undefined;
  if (SCENARIOS.includes('writes')) {
    writes = await runWritesScenario({
      url, mainSeed: seed, cleanups, rounds: WRITES_ROUNDS, conditions: WRITES_CONDITIONS,
      startServer: async (name, databaseUrl, extra) => {
        const port = await freePort();
        const base = env(port);
        const own = databaseUrl === url ? {} : { DATABASE_URL: databaseUrl, DATABASE_DIRECT_URL: undefined, DATABASE_POOL_MODE: 'session' };
        return startServer(name as Target['name'], [SERVER_ENTRY], { ...base, ...own, PGAPPNAME: `bench-${name}`, ...extra });
      },
      seed: async (databaseUrl) => {
        const output = await exec(process.execPath, ['--import', 'tsx', 'bench/seed.ts'], { ...process.env, BENCH_DB_URL: databaseUrl, SERVER_SECRET: secret, BENCH_KEY_PREFIX: 'BENCH' });
        return JSON.parse(/BENCH_SEED (.+)/.exec(output)![1]) as Seed;
      },
      activate: async (target, databaseUrl, writeSeed, round) => {
        const row = await runScenario('activate', target as Target, databaseUrl, writeSeed as Seed, round);
        return { rps: row.rps, errors: row.errors };
      },
    });
  }
  // A large upload and many downloads against validate (bench/upload.ts): only when named in BENCH_SCENARIOS.
  if (SCENARIOS.includes('upload')) {
    const keyforge = targets[0];
    const upload = await runUploadScenario({ base: keyforge.base, seed, uploadMb: UPLOAD_MB, downloadClients: DOWNLOADS, validate: () => runScenario('validate', keyforge, url, seed) });
    mkdirSync(RESULTS, { recursive: true });
    const date = new Date().toISOString();
    writeFileSync(path.join(RESULTS, 'upload-latest.json'), `${JSON.stringify({ date, machine: { ...m, cpuBusyBeforeRun: Math.round(busyBefore * 100) / 100 }, connections: CONNECTIONS, durationSeconds: DURATION, upload }, null, 2)}\n`);
    console.log('Wrote bench/results/upload-latest.json');
    if (SCENARIOS.every((s) => s === 'upload')) return;
  }
  report(rows, busyBefore, revoke, writes);
  if (CPU_PROF) {
    console.log(`CPU profiles go to ${path.relative(ROOT, profDir)}/{keyforge,floor}/ when the servers stop. Summarise with:\n` +
      targets.map((t) => `  pnpm exec tsx bench/cpuprofile.ts ${path.relative(ROOT, profDir)}/${t.name}/*.0.001.cpuprofile ${served[t.name]}`).join('\n'));
  }
}

/**
 * BENCH_METRICS=compare: two real servers on the same database, metrics off and on (METRICS_TOKEN), validate on
 * each in turn, the order alternating per round so that drift in the machine's load falls on both alike.
 */
async function compareMetrics(env: (port: number) => NodeJS.ProcessEnv, url: string, seed: Seed, secret: string) {
  const off = await startServer('keyforge', [SERVER_ENTRY], { ...env(await freePort()), METRICS_TOKEN: '' });
  const on = await startServer('keyforge+metrics', [SERVER_ENTRY], { ...env(await freePort()), METRICS_TOKEN: secret });
  const busyBefore = await machineBusy();
  const rounds: { rps: number; cpu: number }[] = [];
  for (let round = 0; round < COMPARE_ROUNDS; round++) {
    const [first, second] = round % 2 ? [on, off] : [off, on];
    const a = await runScenario('validate', first, url, seed);
    const b = await runScenario('validate', second, url, seed);
    const [rowOff, rowOn] = first === off ? [a, b] : [b, a];
    rounds.push({ rps: rowOn.rps / rowOff.rps, cpu: rowOn.cpuUsPerRequest / rowOff.cpuUsPerRequest });
  }
  // The metrics server really counted (and the other has no /metrics at all).
  const scraped = await (await fetch(`${on.base}/metrics`, { headers: { authorization: `Bearer ${secret}` } })).text();
  if (!/keyforge_http_requests_total\{route="\/api\/v1\/validate",method="POST",status_class="2xx"\} [1-9]/.test(scraped)) throw new Error('the metrics server did not count validate');
  if ((await (await fetch(`${off.base}/metrics`)).text()).includes('keyforge_http_requests_total')) throw new Error('the server without metrics serves them');
  const median = (values: number[]) => values.sort((x, y) => x - y)[Math.floor(values.length / 2)];
  const fmt = (x: number) => `${x.toFixed(2)}×`;
  console.log(`\nMachine: CPU ${Math.round(busyBefore * 100)}% busy before the run (load average ${os.loadavg().map((x) => x.toFixed(1)).join(', ')} now).`);
  console.log(`Metrics on / off, validate, median of ${COMPARE_ROUNDS} alternating rounds: throughput ${fmt(median(rounds.map((r) => r.rps)))}, ` +
    `server CPU per request ${fmt(median(rounds.map((r) => r.cpu)))} (rounds: ${rounds.map((r) => `${fmt(r.rps)} / ${fmt(r.cpu)}`).join(', ')}).`);
  console.log('(BENCH_METRICS=compare: bench/results/latest.* left unchanged.)');
}

try {
  await main();
} catch (error) {
  console.error('bench failed:', error);
  process.exitCode = 1;
} finally {
  await cleanup();
}
