// The `revoke` scenario of `pnpm bench` (bench/run.ts): three real servers with the license cache on, behind the
// shipped HAProxy config, validate at full rate over 10,000 keys while licenses are revoked, suspended and reissued
// at 50 per second. For every change, a prober asks each server directly, from the change's commit on, until it
// refuses the key: the time from the commit (the UPDATE's answer) to that first refusal, per server, is what is
// reported (an upper bound: it includes one request's round trip). Every answer "valid" for a changed key to a request
// sent more than 1 s after the commit, from the load or the probers, is counted.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { generateLicenseKey, normalizeLicenseKey } from '../server/src/crypto/license-key.js';
import { ServerSecrets } from '../server/src/crypto/secrets.js';

const KEYS = 10_000;
const CHANGES_PER_SECOND = 50;
const BOUND_MS = 1000;
const REPLICAS = 3;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const SECONDS = Number(process.env.BENCH_REVOKE_SECONDS ?? 20);
const HAPROXY = process.env.HAPROXY_PATH || '/usr/sbin/haproxy';

export interface RevokeContext {
  root: string;
  url: string;
  secret: string;
  /** The bench's environment for a real server on `port`. */
  env: (port: number) => NodeJS.ProcessEnv;
  entry: string;
  freePort: () => Promise<number>;
  cleanups: (() => Promise<unknown> | void)[];
  /** The validate key's license: the 10,000 are copies of it. */
  licenseId: string;
}

export interface RevokeResult {
  replicas: { name: string; changes: number; p50: number; p99: number; max: number; unrefused: number; sentP50: number; sentP99: number; sentMax: number }[];
  validAfterBound: number;
  changes: number;
  validatesPerSecond: number;
  loadErrors: number;
}

async function startReplica(ctx: RevokeContext, name: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [ctx.entry], { cwd: ctx.root, env: ctx.env(port), stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (d) => process.stderr.write(`[${name}] ${d}`));
  ctx.cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    if (!(await Promise.race([once(child, 'exit').then(() => true), sleep(12_000).then(() => false)]))) child.kill('SIGKILL');
  });
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(100)) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} during startup`);
    if (await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false)) return child;
  }
  throw new Error(`${name} not ready after 60 s`);
}

/** The shipped server/deploy/haproxy.cfg with this machine's loopback ports and the answering server's name in a header. */
async function startHaproxy(ctx: RevokeContext, ports: number[]): Promise<number> {
  const port = await ctx.freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kf-bench-haproxy-'));
  const config = readFileSync(path.join(ctx.root, 'server/deploy/haproxy.cfg'), 'utf8')
    .replace(/stats socket \/run\/haproxy\/admin\.sock /, `stats socket ${path.join(dir, 'admin.sock')} `)
    .replace(/bind :8080/, `bind 127.0.0.1:${port}`)
    .replace(/(    server app1 .*\n)(?:    server app\d .*\n?)*/, ports.map((p, i) => `    server app${i + 1} 127.0.0.1:${p} check\n`).join('') + '    http-response set-header x-served-by %s\n');
  if (!config.includes(`bind 127.0.0.1:${port}`) || !config.includes(`app${REPLICAS} 127.0.0.1`)) throw new Error('the shipped haproxy.cfg no longer has the expected shape');
  writeFileSync(path.join(dir, 'haproxy.cfg'), config);
  const child = spawn(HAPROXY, ['-db', '-f', path.join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'ignore', 'pipe'] });
  ctx.cleanups.push(() => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  // Every replica UP: requests answered by each of them through the frontend.
  const seen = new Set<string>();
  for (const deadline = Date.now() + 30_000; seen.size < REPLICAS && Date.now() < deadline; await sleep(100)) {
    if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode}`);
    const response = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
    const by = response?.headers.get('x-served-by');
    if (response?.ok && by) seen.add(by);
  }
  if (seen.size < REPLICAS) throw new Error(`HAProxy reached ${seen.size} of ${REPLICAS} servers`);
  return port;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS * 2 });

function validate(port: number, licenseKey: string): Promise<{ valid: boolean; by: string; status: number }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ licenseKey });
    const req = http.request({ host: '127.0.0.1', port, path: '/api/v1/validate', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ valid: text.includes('"isValid":true'), by: String(res.headers['x-served-by'] ?? ''), status: res.statusCode ?? 0 }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** 10,000 licenses like the validate key's (same product, tenant and values), with keys the bench knows. */
async function seedKeys(ctx: RevokeContext, db: pg.Pool): Promise<string[]> {
  const secrets = new ServerSecrets(ctx.secret);
  const keys = Array.from({ length: KEYS }, () => generateLicenseKey('BENCH'));
  const digests = keys.map((key) => secrets.digest(normalizeLicenseKey(key)!));
  await db.query(
    `INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, offline_grace_days, features, custom_fields, updated_at)
     SELECT gen_random_uuid(), l.tenant_id, l.product_id, d, 'BENCH-…-REVK', 5, l.offline_grace_days, l.features, l.custom_fields, now()
       FROM licenses l, unnest($1::text[]) AS d WHERE l.id = $2`,
    [digests, ctx.licenseId],
  );
  return keys;
}

const CHANGE_SQL = {
  revoke: `UPDATE licenses SET status = 'revoked', revoked_at = now(), updated_at = now() WHERE key_digest = $1`,
  suspend: `UPDATE licenses SET status = 'suspended', suspended_at = now(), updated_at = now() WHERE key_digest = $1`,
  reissue: `UPDATE licenses SET key_digest = $2, updated_at = now() WHERE key_digest = $1`,
} as const;

export async function runRevokeScenario(ctx: RevokeContext): Promise<RevokeResult> {
  const db = new pg.Pool({ connectionString: ctx.url, max: 8 });
  ctx.cleanups.push(() => db.end());
  const keys = await seedKeys(ctx, db);
  const secrets = new ServerSecrets(ctx.secret);
  const ports = await Promise.all(Array.from({ length: REPLICAS }, () => ctx.freePort()));
  await Promise.all(ports.map((port, i) => startReplica(ctx, `replica${i + 1}`, port)));
  const frontend = await startHaproxy(ctx, ports);
  console.log(`  revoke: ${REPLICAS} servers behind HAProxy (shipped config) on :${frontend}, ${KEYS} keys, ${CHANGES_PER_SECOND} changes/s for ${SECONDS} s`);

  /** When each changed key's change committed (performance.now()). */
  const changedAt = new Map<string, number>();
  let validAfterBound = 0;
  let loadRequests = 0;
  let loadErrors = 0;
  let running = true;

  // The load: CONNECTIONS clients through HAProxy, each validating keys in turn as fast as answers come.
  const loadStarted = performance.now();
  const clients = Array.from({ length: CONNECTIONS }, async (_, client) => {
    for (let i = client; running; i += CONNECTIONS) {
      const key = keys[(i * 7919) % KEYS];
      const sent = performance.now();
      try {
        const answer = await validate(frontend, key);
        loadRequests++;
        if (answer.status !== 200) loadErrors++;
        const at = changedAt.get(key);
        if (answer.valid && at !== undefined && sent - at > BOUND_MS) validAfterBound++;
      } catch {
        loadErrors++;
      }
    }
  });
  await sleep(3_000); // every key validated a few times: each server's cache holds most of them

  // The changes: 50 per second, each on a key no change touched before; revoke, suspend, reissue in turn.
  const delays: number[][] = ports.map(() => []);
  /** When the request that got the first refusal was sent: the refusal was decided between that and its answer. */
  const sentDelays: number[][] = ports.map(() => []);
  const unrefused = ports.map(() => 0);
  const probes: Promise<void>[] = [];
  const kinds = ['revoke', 'suspend', 'reissue'] as const;
  const total = SECONDS * CHANGES_PER_SECOND;
  const started = performance.now();
  for (let n = 0; n < total; n++) {
    const wait = started + (n * 1000) / CHANGES_PER_SECOND - performance.now();
    if (wait > 0) await sleep(wait);
    const key = keys[(n * 104729 + 13) % KEYS];
    const kind = kinds[n % kinds.length];
    const digest = secrets.digest(normalizeLicenseKey(key)!);
    probes.push(
      (async () => {
        // Cached on every server before the change (a key the load had not reached yet is read now).
        await Promise.all(ports.map((port) => validate(port, key)));
        const values = kind === 'reissue' ? [digest, secrets.digest(normalizeLicenseKey(generateLicenseKey('BENCH'))!)] : [digest];
        await db.query(CHANGE_SQL[kind], values);
        const committed = performance.now();
        changedAt.set(key, committed);
        await Promise.all(
          ports.map(async (port, replica) => {
            for (;;) {
              const sent = performance.now();
              const answer = await validate(port, key);
              if (answer.status === 200 && !answer.valid) {
                sentDelays[replica].push(sent - committed);
                return void delays[replica].push(performance.now() - committed);
              }
              if (sent - committed > BOUND_MS) validAfterBound++;
              if (sent - committed > 10_000) return void unrefused[replica]++;
              await sleep(1);
            }
          }),
        );
      })(),
    );
  }
  await Promise.all(probes);
  running = false;
  await Promise.all(clients);
  const seconds = (performance.now() - loadStarted) / 1000;
  agent.destroy();

  const pct = (values: number[], p: number) => {
    const sorted = [...values].sort((a, b) => a - b);
    return Math.round((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN) * 10) / 10;
  };
  const result: RevokeResult = {
    replicas: delays.map((values, i) => ({ name: `app${i + 1}`, changes: values.length, p50: pct(values, 0.5), p99: pct(values, 0.99), max: pct(values, 1), unrefused: unrefused[i], sentP50: pct(sentDelays[i], 0.5), sentP99: pct(sentDelays[i], 0.99), sentMax: pct(sentDelays[i], 1) })),
    validAfterBound,
    changes: total,
    validatesPerSecond: Math.round(loadRequests / seconds),
    loadErrors,
  };
  for (const r of result.replicas) console.log(`  revoke   ${r.name}: commit → first refusal answered p50 ${r.p50} ms  p99 ${r.p99} ms  max ${r.max} ms (its request sent: p50 ${r.sentP50}, p99 ${r.sentP99}, max ${r.sentMax} ms) over ${r.changes} changes${r.unrefused ? `, ${r.unrefused} never refused` : ''}`);
  console.log(`  revoke   load ${result.validatesPerSecond} validates/s through HAProxy (${loadErrors} errors); valid answers to requests sent > ${BOUND_MS} ms after the commit: ${validAfterBound}`);
  return result;
}
