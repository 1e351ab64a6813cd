// The `writes` scenario of `pnpm bench` (bench/run.ts): what the license cache's machinery costs license writes.
// Activations (a fresh nonce and a new device per request, over 200 licenses, BENCH_CONNECTIONS clients) against two
// real servers on one database: one with the cache on and the cache's triggers enabled, one with the cache off and
// those triggers disabled (`ALTER TABLE … DISABLE TRIGGER license_cache_…`), in alternating rounds, reported as the
// on/off ratio of activations a second. Under three conditions: the machine as it is (`quiet`), with a CPU-burning
// sibling process (`loaded`), and on a private primary with a synchronous streaming standby (`sync`:
// synchronous_commit on, synchronous_standby_names '*', so every commit also waits for the standby).
// BENCH_WRITES_SPLIT tells the two halves of the cost apart: `triggers` runs both sides on the cache-off server and
// toggles only the triggers; `cache` keeps the triggers on and toggles only the server.
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { clusterUser, pgBinaries, startCluster } from '../test/support/pg-cluster.js';

export type WritesCondition = 'quiet' | 'loaded' | 'sync';
const SPLIT = process.env.BENCH_WRITES_SPLIT as 'triggers' | 'cache' | undefined;

export interface WritesTarget {
  name: string;
  base: string;
  pid: number;
}

export interface WritesRound {
  on: number;
  off: number;
  ratio: number;
  errors: number;
}

export interface WritesResult {
  conditions: { condition: WritesCondition; rounds: WritesRound[]; medianRatio: number; medianOn: number; medianOff: number }[];
}

export interface WritesContext {
  /** The shared bench database and its seed (quiet, loaded). */
  url: string;
  /** Starts a real server on a database (its URL), with extra environment; returns it once ready. */
  startServer: (name: string, databaseUrl: string, extra: NodeJS.ProcessEnv) => Promise<WritesTarget>;
  /** Migrates and seeds a database (bench/seed.ts); returns the seed. */
  seed: (databaseUrl: string) => Promise<unknown>;
  /** One timed activate run on a target (the bench's `activate` scenario); returns requests/s and errors. */
  activate: (target: WritesTarget, databaseUrl: string, seed: unknown, round: number) => Promise<{ rps: number; errors: number }>;
  cleanups: (() => Promise<unknown> | void)[];
  rounds: number;
  conditions: WritesCondition[];
  mainSeed: unknown;
}

/** The cache's triggers (every migration names them license_cache_…), enabled or disabled. */
async function machinery(url: string, on: boolean) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ rel: string; name: string }>(
      `SELECT tgrelid::regclass::text AS rel, tgname AS name FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE 'license\\_cache\\_%'`,
    );
    if (!rows.length) throw new Error('no license_cache_ triggers found');
    for (const { rel, name } of rows) await client.query(`ALTER TABLE ${rel} ${on ? 'ENABLE' : 'DISABLE'} TRIGGER ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
}

/**
 * Each run starts from the same state: the tables the activations grow vacuumed (so autovacuum is unlikely to fall
 * into one side's run) and a checkpoint taken (so each side pays the full-page images of its first writes alike).
 */
async function settle(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('VACUUM (ANALYZE) licenses, activations, nonces, license_cache_changes');
    await client.query('CHECKPOINT').catch(() => undefined); // needs superuser or pg_checkpoint; not essential
  } finally {
    await client.end();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** A private primary with a synchronous standby streaming from it (test/support/pg-cluster.ts's clusters). */
async function startSyncPair(ctx: WritesContext): Promise<{ url: string }> {
  const primary = await startCluster();
  ctx.cleanups.push(() => primary.destroy());
  const user = clusterUser();
  const { bin } = pgBinaries();
  const standbyData = path.join(primary.dir, 'standby');
  mkdirSync(standbyData, { mode: 0o700 });
  if (user) chownSync(standbyData, user.uid, user.gid);
  const as = user ? { uid: user.uid, gid: user.gid } : {};
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', HOME: primary.dir };
  const run = (program: string, args: string[]) => {
    const result = spawnSync(path.join(bin, program), args, { cwd: primary.dir, env, encoding: 'utf8', timeout: 120_000, ...as });
    if (result.status !== 0) throw new Error(`${program} ${args.join(' ')}: ${result.stdout}${result.stderr}`);
  };
  run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', standbyData, '-R', '-X', 'stream', '--no-sync']);
  const { port: standbyPort } = await (async () => {
    const server = (await import('node:net')).createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const address = server.address() as { port: number };
    server.close();
    return address;
  })();
  run('pg_ctl', ['-D', standbyData, '-l', path.join(primary.dir, 'standby.log'), '-w', '-t', '60', '-o', `-p ${standbyPort} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${primary.dir} -c fsync=off`, 'start']);
  ctx.cleanups.push(() => void spawnSync(path.join(bin, 'pg_ctl'), ['-D', standbyData, '-m', 'immediate', '-w', 'stop'], { cwd: primary.dir, env, ...as }));
  const client = new pg.Client({ connectionString: primary.url });
  await client.connect();
  try {
    for (let i = 0; ; i++) {
      const { rows } = await client.query(`SELECT 1 FROM pg_stat_replication WHERE state = 'streaming'`);
      if (rows.length) break;
      if (i > 300) throw new Error('the standby is not streaming after 30 s');
      await sleep(100);
    }
    await client.query(`ALTER SYSTEM SET synchronous_standby_names = '*'`);
    await client.query(`ALTER SYSTEM SET synchronous_commit = 'on'`);
    await client.query('SELECT pg_reload_conf()');
    for (let i = 0; ; i++) {
      const { rows } = await client.query(`SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync'`);
      if (rows.length) break;
      if (i > 300) throw new Error('the standby is not synchronous after 30 s');
      await sleep(100);
    }
    await client.query('CREATE DATABASE kf_bench_sync');
  } finally {
    await client.end();
  }
  const url = new URL(primary.url);
  url.pathname = '/kf_bench_sync';
  return { url: url.toString() };
}

export async function runWritesScenario(ctx: WritesContext): Promise<WritesResult> {
  const result: WritesResult = { conditions: [] };
  let shared: { on: WritesTarget; off: WritesTarget } | undefined;
  for (const condition of ctx.conditions) {
    let url = ctx.url;
    let seed = ctx.mainSeed;
    let servers: { on: WritesTarget; off: WritesTarget };
    if (condition === 'sync') {
      ({ url } = await startSyncPair(ctx));
      seed = await ctx.seed(url);
      servers = {
        on: await ctx.startServer('sync-cache-on', url, { LICENSE_CACHE: 'on' }),
        off: await ctx.startServer('sync-cache-off', url, { LICENSE_CACHE: 'off' }),
      };
      console.log('writes: a private primary with a synchronous standby (pg_stat_replication sync_state = sync)');
    } else {
      shared ??= {
        on: await ctx.startServer('cache-on', url, { LICENSE_CACHE: 'on' }),
        off: await ctx.startServer('cache-off', url, { LICENSE_CACHE: 'off' }),
      };
      servers = shared;
    }
    // The loaded machine: a sibling process burning one core for the whole condition.
    const burner = condition === 'loaded' ? spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }) : undefined;
    if (burner) ctx.cleanups.push(() => void burner.kill('SIGKILL'));
    const rounds: WritesRound[] = [];
    try {
      for (let round = 0; round < ctx.rounds; round++) {
        const order: ('on' | 'off')[] = round % 2 ? ['off', 'on'] : ['on', 'off'];
        const rps: Record<'on' | 'off', number> = { on: 0, off: 0 };
        let errors = 0;
        for (const side of order) {
          await machinery(url, SPLIT === 'cache' ? true : side === 'on');
          await settle(url);
          const row = await ctx.activate(SPLIT === 'triggers' ? servers.off : servers[side], url, seed, round);
          rps[side] = row.rps;
          errors += row.errors;
          console.log(`  writes ${condition} round ${round + 1} cache ${side.padEnd(3)} ${String(row.rps).padStart(6)} activations/s  errors ${row.errors}`);
        }
        rounds.push({ on: rps.on, off: rps.off, ratio: Math.round((rps.on / Math.max(1, rps.off)) * 100) / 100, errors });
      }
    } finally {
      burner?.kill('SIGKILL');
      await machinery(url, true);
    }
    result.conditions.push({ condition, rounds, medianRatio: median(rounds.map((r) => r.ratio)), medianOn: median(rounds.map((r) => r.on)), medianOff: median(rounds.map((r) => r.off)) });
  }
  return result;
}

export function writesReport(writes: WritesResult): string {
  return (
    `\nLicense writes with the cache's machinery on (cache on, its triggers enabled) and off (cache off, triggers disabled): activations a second, ` +
    `alternating rounds, on/off ratio (goal ≥ 0.95×)${SPLIT ? `; BENCH_WRITES_SPLIT=${SPLIT}: only the ${SPLIT === 'triggers' ? 'triggers toggled, both sides on the cache-off server' : 'server toggled, the triggers on for both'}` : ''}:\n\n| condition | rounds (on / off = ratio) | median on | median off | median ratio |\n|---|---|---:|---:|---:|\n` +
    writes.conditions
      .map((c) => `| ${c.condition} | ${c.rounds.map((r) => `${r.on} / ${r.off} = ${r.ratio}×${r.errors ? ` (${r.errors} errors)` : ''}`).join('; ')} | ${c.medianOn} | ${c.medianOff} | **${c.medianRatio}×** |`)
      .join('\n')
  );
}
