import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Need } from './optional.js';
import { answers } from './optional.js';
import { clusterUser } from './pg-cluster.js';
import { APP_ROLE } from './pg.js';
import { freePort } from './processes.js';
import { waitUntil } from './wait.js';

// Settings of the shipped file that say where things are (addresses, authentication, file paths): a test's own.
const LOCAL_SETTINGS = new Set(['listen_addr', 'listen_port', 'auth_type', 'auth_file', 'unix_socket_dir', 'logfile', 'pidfile']);

/** The `[pgbouncer]` settings of the shipped server/deploy/pgbouncer.ini, without those that say where things are. */
export function shippedPgBouncerSettings(): Record<string, string> {
  const ini = readFileSync(new URL('../../server/deploy/pgbouncer.ini', import.meta.url), 'utf8');
  const section = ini.slice(ini.indexOf('[pgbouncer]'));
  const settings: Record<string, string> = {};
  for (const line of section.split('\n')) {
    const match = /^([a-z_]+)\s*=\s*(.*)$/.exec(line.trim());
    if (match && !LOCAL_SETTINGS.has(match[1])) settings[match[1]] = match[2];
  }
  return settings;
}

/** Debian's PgBouncer (`apt-get install pgbouncer`) at PGBOUNCER_PATH, default /usr/sbin/pgbouncer. */
export function needPgBouncer(): Need & { path: string } {
  const binary = process.env.PGBOUNCER_PATH || '/usr/sbin/pgbouncer';
  return { what: 'PgBouncer', path: binary, missing: existsSync(binary) ? undefined : `no PgBouncer at ${binary} (install Debian's pgbouncer, or set PGBOUNCER_PATH)` };
}

export interface PgBouncer {
  port: number;
  /** The same URL (user, password, database) through the pooler. */
  urlFor(directUrl: string): string;
  /** Its log so far (connections refused, server errors). */
  log(): string;
  stop(): Promise<void>;
}

/**
 * PgBouncer in transaction mode (what managed PostgreSQL services put in front) before the server of `postgresUrl`,
 * on 127.0.0.1 and a free port: every database of that server, trust authentication for `users` (the URL's user and
 * the tests' app role always; the URL's password, if any, is what PgBouncer logs in to the server with). As root it runs as the clusters' user (it refuses to run as root).
 */
export async function startPgBouncer(postgresUrl: string, options: { users?: string[]; poolSize?: number; settings?: Record<string, string | number>; port?: number } = {}): Promise<PgBouncer> {
  const need = needPgBouncer();
  if (need.missing) throw new Error(need.missing);
  const server = new URL(postgresUrl);
  const users = new Set([decodeURIComponent(server.username || 'postgres'), APP_ROLE, ...(options.users ?? [])]);
  const dir = mkdtempSync(path.join(tmpdir(), 'keyforge-pgbouncer-'));
  const port = options.port ?? (await freePort()); // a given port: a restart in place
  const logFile = path.join(dir, 'pgbouncer.log');
  // The URL's password, when it has one, is the one PgBouncer logs in to the server with (a server that asks for it).
  const password = (user: string) => (user === decodeURIComponent(server.username || 'postgres') ? decodeURIComponent(server.password) : '');
  writeFileSync(path.join(dir, 'users.txt'), [...users].map((user) => `"${user}" "${password(user)}"`).join('\n') + '\n');
  writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 1000',
      `default_pool_size = ${options.poolSize ?? 20}`,
      `logfile = ${logFile}`,
      `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
      ...Object.entries(options.settings ?? {}).map(([name, value]) => `${name} = ${value}`),
      '',
    ].join('\n'),
  );
  const user = clusterUser();
  if (user) chownSync(dir, user.uid, user.gid);
  const child: ChildProcess = spawn(need.path, [path.join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'], ...(user ? { uid: user.uid, gid: user.gid } : {}) });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const log = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '') + stderr;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT'); // PgBouncer's immediate shutdown
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}:\n${log()}`);
        return answers('127.0.0.1', port, 500);
      },
      { timeout: 20_000, interval: 50, what: 'PgBouncer to listen' },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    port,
    urlFor(directUrl) {
      const url = new URL(directUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    log,
    stop,
  };
}
