import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { parse, stringify } from 'yaml';
import type { Need } from './optional.js';
import { answers } from './optional.js';
import { clusterUser, pgBinaries } from './pg-cluster.js';
import { needPgBouncer } from './pgbouncer.js';
import { freePort } from './processes.js';
import { waitUntil } from './wait.js';

/**
 * A Patroni cluster on loopback ports, from the shipped files of server/deploy/patroni/ (docs/operate/high-availability.md):
 * one etcd member (etcd.env), three PostgreSQL nodes each run by its own Patroni (patroni.yml: only the name, addresses,
 * directories and passwords substituted), and HAProxy (haproxy.cfg) whose port leads to whichever node holds the
 * leader lock. Debian's packages: patroni, etcd-server, haproxy, PostgreSQL's server binaries.
 */
const PATRONI = process.env.PATRONI_PATH || '/usr/bin/patroni';
const ETCD = process.env.ETCD_PATH || '/usr/bin/etcd';
const HAPROXY = process.env.HAPROXY_PATH || '/usr/sbin/haproxy';
const DEPLOY = new URL('../../server/deploy/patroni/', import.meta.url);
export const shipped = (name: string) => readFileSync(new URL(name, DEPLOY), 'utf8');

/** Patroni, etcd, HAProxy and PgBouncer (Debian's), and PostgreSQL binaries with pg_rewind. */
export function needPatroni(): Need {
  const missing: string[] = [];
  if (!existsSync(PATRONI)) missing.push(`no Patroni at ${PATRONI} (install Debian's patroni, or set PATRONI_PATH)`);
  if (!existsSync(ETCD)) missing.push(`no etcd at ${ETCD} (install Debian's etcd-server, or set ETCD_PATH)`);
  if (!existsSync(HAPROXY)) missing.push(`no HAProxy at ${HAPROXY} (install Debian's haproxy, or set HAPROXY_PATH)`);
  const pgbouncer = needPgBouncer().missing;
  if (pgbouncer) missing.push(pgbouncer);
  try {
    if (!existsSync(path.join(pgBinaries().bin, 'pg_rewind'))) missing.push(`no pg_rewind in ${pgBinaries().bin}`);
  } catch (error) {
    missing.push((error as Error).message);
  }
  return { what: 'Patroni, etcd, HAProxy and PgBouncer', missing: missing.length ? missing.join('; ') : undefined };
}

export const SUPERUSER_PASSWORD = 'patroni-test-superuser';

interface Proc {
  child: ChildProcess;
  output: () => string;
}

const PREFIX = 'keyforge-patroni-';

function launch(root: string, command: string, args: string[], options: { env?: NodeJS.ProcessEnv; asClusterUser?: boolean } = {}): Proc {
  const user = options.asClusterUser ? clusterUser() : undefined;
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env, ...(user ? { uid: user.uid, gid: user.gid } : {}) });
  // Recorded, so that a later run can end what a killed run left behind (sweepAbandonedPatroniClusters).
  if (child.pid) appendFileSync(path.join(root, 'pids'), `${child.pid}\n`);
  let output = '';
  const keep = (chunk: Buffer) => {
    output += chunk;
    if (output.length > 2_000_000) output = output.slice(-1_000_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, output: () => output };
}

async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export interface PatroniNode {
  name: string;
  pgPort: number;
  apiPort: number;
  dataDir: string;
  /** The node's PostgreSQL superuser URL (direct, not through HAProxy). */
  url: string;
  /** Its Patroni's log so far. */
  output(): string;
  /** The postmaster's pid, when it runs. */
  postmaster(): number | undefined;
  /** GET on its REST API: the status code (0 when it does not answer). */
  check(endpoint: '/primary' | '/replica' | '/health'): Promise<number>;
  /** Starts its Patroni (again): an old primary rejoins as a standby, rewound by pg_rewind when needed. */
  start(): void;
  /** The node dies: SIGKILL to its postmaster and to its Patroni at once (a machine lost, no clean-up). */
  killNode(): Promise<void>;
}

export interface PatroniCluster {
  nodes: PatroniNode[];
  /** HAProxy's port: the current primary. */
  primaryPort: number;
  /** The superuser URL through HAProxy, database `database`. */
  primaryUrl(database?: string): string;
  /** The node holding the leader lock now (its REST API's GET /primary answers 200). */
  leader(): Promise<PatroniNode | undefined>;
  /** Patroni's view: GET /cluster of any live node. */
  members(): Promise<{ name: string; role: string; state: string; timeline?: number; lag?: number | string }[]>;
  /**
   * A planned switchover (`patronictl switchover`, through the leader's REST API): the leader hands the lock to
   * `candidate` (in synchronous mode, the synchronous standby) and follows it. Resolves once Patroni says it is done.
   */
  switchover(leader: PatroniNode, candidate: string): Promise<void>;
  haproxyOutput(): string;
  destroy(): Promise<void>;
}

/** The shipped patroni.yml for node `index` on this machine. */
function nodeConfig(index: number, ports: { pg: number; api: number }, etcdPort: number, dir: string, bin: string): string {
  const config = parse(shipped('patroni.yml'));
  config.name = `pg${index + 1}`;
  config.restapi.listen = config.restapi.connect_address = `127.0.0.1:${ports.api}`;
  config.etcd3.hosts = `127.0.0.1:${etcdPort}`;
  config.postgresql.listen = config.postgresql.connect_address = `127.0.0.1:${ports.pg}`;
  config.postgresql.data_dir = path.join(dir, 'data');
  config.postgresql.bin_dir = bin;
  config.postgresql.pgpass = path.join(dir, 'pgpass');
  config.postgresql.authentication.superuser.password = SUPERUSER_PASSWORD;
  config.postgresql.authentication.replication.password = 'patroni-test-replicator';
  config.postgresql.authentication.rewind.password = 'patroni-test-rewinder';
  // Loopback instead of the 10.0.0.0/24 network; the sockets in the node's folder.
  config.postgresql.pg_hba = config.postgresql.pg_hba.map((line: string) => line.replace('10.0.0.0/24', '127.0.0.1/32'));
  config.postgresql.parameters = { ...config.postgresql.parameters, unix_socket_directories: dir };
  // Test data only: no fsync (as every cluster the tests start), and no 1 GB of kept WAL.
  config.bootstrap.dcs.postgresql.parameters = { ...config.bootstrap.dcs.postgresql.parameters, fsync: 'off', wal_keep_size: '128MB' };
  config.log = { level: 'INFO' };
  return stringify(config);
}

/**
 * etcd (one member), three Patroni nodes (the first to take the initialize key creates the cluster, the others clone it
 * with pg_basebackup) and HAProxy; resolves once there is a leader, both standbys stream, one of them synchronously,
 * and HAProxy leads to the leader.
 */
export async function startPatroniCluster(): Promise<PatroniCluster> {
  sweepAbandonedPatroniClusters();
  const user = clusterUser();
  const bin = pgBinaries().bin;
  const root = mkdtempSync(path.join(tmpdir(), PREFIX));
  writeFileSync(path.join(root, 'owner.pid'), String(process.pid));
  if (user) chownSync(root, user.uid, user.gid);
  const procs: Proc[] = [];
  const patronis: (Proc | undefined)[] = [];

  // etcd: the shipped environment file, as one member on loopback.
  const etcdPort = await freePort();
  const peerPort = await freePort();
  const etcdEnv: Record<string, string> = {};
  for (const line of shipped('etcd.env').split('\n')) {
    const match = /^(ETCD_\w+)=(.*)$/.exec(line);
    if (match) etcdEnv[match[1]] = match[2];
  }
  Object.assign(etcdEnv, {
    ETCD_DATA_DIR: path.join(root, 'etcd'),
    ETCD_LISTEN_CLIENT_URLS: `http://127.0.0.1:${etcdPort}`,
    ETCD_ADVERTISE_CLIENT_URLS: `http://127.0.0.1:${etcdPort}`,
    ETCD_LISTEN_PEER_URLS: `http://127.0.0.1:${peerPort}`,
    ETCD_INITIAL_ADVERTISE_PEER_URLS: `http://127.0.0.1:${peerPort}`,
    ETCD_INITIAL_CLUSTER: `${etcdEnv.ETCD_NAME}=http://127.0.0.1:${peerPort}`,
  });
  const etcd = launch(root, ETCD, [], { env: { PATH: process.env.PATH, ...etcdEnv } });
  procs.push(etcd);

  const nodes: PatroniNode[] = [];
  const haproxyDir = path.join(root, 'haproxy');
  let haproxy: Proc | undefined;
  const destroy = async () => {
    // Patroni first (SIGTERM: it stops its PostgreSQL), then whatever postmaster is left, then the rest.
    await Promise.all(patronis.map((proc) => proc && kill(proc.child, 'SIGTERM')));
    for (const node of nodes) {
      const pid = node.postmaster();
      if (pid) process.kill(pid, 'SIGKILL');
    }
    await Promise.all(procs.map((proc) => kill(proc.child, 'SIGKILL')));
    rmSync(root, { recursive: true, force: true });
  };

  try {
    await waitUntil(
      async () => {
        if (etcd.child.exitCode !== null) throw new Error(`etcd exited with ${etcd.child.exitCode}:\n${etcd.output()}`);
        return (await fetch(`http://127.0.0.1:${etcdPort}/health`).catch(() => undefined))?.ok;
      },
      { timeout: 30_000, interval: 100, what: 'etcd to answer' },
    );

    for (let i = 0; i < 3; i++) {
      const dir = path.join(root, `pg${i + 1}`);
      mkdirSync(dir, { mode: 0o700 });
      if (user) chownSync(dir, user.uid, user.gid);
      const ports = { pg: await freePort(), api: await freePort() };
      const configFile = path.join(dir, 'patroni.yml');
      writeFileSync(configFile, nodeConfig(i, ports, etcdPort, dir, bin));
      if (user) chownSync(configFile, user.uid, user.gid);
      const dataDir = path.join(dir, 'data');
      const env = { PATH: process.env.PATH, LC_ALL: 'C.UTF-8', HOME: dir };
      const node: PatroniNode = {
        name: `pg${i + 1}`,
        pgPort: ports.pg,
        apiPort: ports.api,
        dataDir,
        url: `postgres://postgres:${SUPERUSER_PASSWORD}@127.0.0.1:${ports.pg}/postgres`,
        output: () => patronis[i]?.output() ?? '',
        postmaster() {
          const pidFile = path.join(dataDir, 'postmaster.pid');
          if (!existsSync(pidFile)) return undefined;
          const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
          return pid && alive(pid) ? pid : undefined;
        },
        async check(endpoint) {
          const response = await fetch(`http://127.0.0.1:${ports.api}${endpoint}`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
          await response?.arrayBuffer();
          return response?.status ?? 0;
        },
        start() {
          const previous = patronis[i]?.output() ?? '';
          const proc = launch(root, PATRONI, [configFile], { env, asClusterUser: true });
          const output = proc.output;
          patronis[i] = { child: proc.child, output: () => previous + output() };
        },
        async killNode() {
          const pid = node.postmaster();
          const patroni = patronis[i];
          if (pid) process.kill(pid, 'SIGKILL');
          if (patroni) await kill(patroni.child, 'SIGKILL');
          // Its backends notice the postmaster's death and exit; the replication connections with them.
          if (pid) await waitUntil(() => !alive(pid), { timeout: 10_000, interval: 20, what: `${node.name}'s postmaster to die` });
        },
      };
      nodes.push(node);
    }
    for (const node of nodes) node.start();

    const leader = async () => {
      for (const node of nodes) if ((await node.check('/primary')) === 200) return node;
      return undefined;
    };
    const members = async () => {
      for (const node of nodes) {
        const response = await fetch(`http://127.0.0.1:${node.apiPort}/cluster`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
        if (response?.ok) return ((await response.json()) as { members: { name: string; role: string; state: string; timeline?: number; lag?: number }[] }).members;
      }
      return [];
    };
    await waitUntil(
      async () => {
        for (const [i, proc] of patronis.entries()) if (proc && proc.child.exitCode !== null) throw new Error(`patroni pg${i + 1} exited with ${proc.child.exitCode}:\n${proc.output()}`);
        const list = await members();
        return list.length === 3 && list.every((member) => ['running', 'streaming'].includes(member.state)) && list.some((member) => member.role === 'sync_standby');
      },
      { timeout: 150_000, interval: 250, what: 'a leader, two streaming standbys, one of them synchronous' },
    );

    // HAProxy: the shipped file, with loopback ports.
    mkdirSync(haproxyDir);
    const primaryPort = await freePort();
    let config = shipped('haproxy.cfg').replace(/bind :5000/, `bind 127.0.0.1:${primaryPort}`);
    config = config.replace(/(    server pg1 .*\n)(?:    server pg\d .*\n?)*/, nodes.map((node) => `    server ${node.name} 127.0.0.1:${node.pgPort} maxconn 300 check port ${node.apiPort}\n`).join(''));
    for (const expected of [`bind 127.0.0.1:${primaryPort}`, 'option httpchk GET /primary', 'on-marked-down shutdown-sessions', `check port ${nodes[2].apiPort}`]) {
      if (!config.includes(expected)) throw new Error(`the shipped haproxy.cfg changed: ${expected} not substituted`);
    }
    writeFileSync(path.join(haproxyDir, 'haproxy.cfg'), config);
    haproxy = launch(root, HAPROXY, ['-db', '-f', path.join(haproxyDir, 'haproxy.cfg')]);
    procs.push(haproxy);
    await waitUntil(
      async () => {
        if (haproxy!.child.exitCode !== null) throw new Error(`haproxy exited with ${haproxy!.child.exitCode}:\n${haproxy!.output()}`);
        return answers('127.0.0.1', primaryPort, 500);
      },
      { timeout: 20_000, what: 'HAProxy to listen' },
    );
    // HAProxy starts with every server up until its checks say otherwise (`fall 2`, a second apart): until then a
    // connection may reach a standby. Ready once a run of connections all reach the primary.
    const url = `postgres://postgres:${SUPERUSER_PASSWORD}@127.0.0.1:${primaryPort}/postgres`;
    let run = 0;
    await waitUntil(
      async () => {
        const client = new pg.Client({ connectionString: url });
        client.on('error', () => undefined); // a connection cut while HAProxy settles: the query fails, and is retried
        try {
          await client.connect();
          const { rows } = await client.query<{ recovery: boolean }>('SELECT pg_is_in_recovery() AS recovery');
          run = rows[0].recovery ? 0 : run + 1;
        } catch {
          run = 0;
        } finally {
          await client.end().catch(() => undefined);
        }
        return run >= 10;
      },
      { timeout: 30_000, interval: 100, what: 'HAProxy to lead only to the primary' },
    );

    return {
      nodes,
      primaryPort,
      primaryUrl: (database = 'postgres') => `postgres://postgres:${SUPERUSER_PASSWORD}@127.0.0.1:${primaryPort}/${database}`,
      leader,
      members,
      async switchover(from, candidate) {
        const response = await fetch(`http://127.0.0.1:${from.apiPort}/switchover`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ leader: from.name, candidate }),
          signal: AbortSignal.timeout(60_000),
        });
        if (!response.ok) throw new Error(`switchover ${from.name} → ${candidate}: ${response.status} ${await response.text()}`);
      },
      haproxyOutput: () => haproxy!.output(),
      destroy,
    };
  } catch (error) {
    const logs = nodes.map((node) => `--- ${node.name}\n${node.output().slice(-4000)}`).join('\n');
    await destroy();
    throw new Error(`${(error as Error).message}\n${logs}\n--- etcd\n${etcd.output().slice(-2000)}`);
  }
}

/** Ends the processes (etcd, Patroni, HAProxy, PostgreSQL) of runs that died without destroying their cluster, and removes their files. */
export function sweepAbandonedPatroniClusters(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(PREFIX)) continue;
    const root = path.join(tmpdir(), name);
    try {
      const owner = Number(readFileSync(path.join(root, 'owner.pid'), 'utf8'));
      if (!owner || alive(owner)) continue;
      const pids = existsSync(path.join(root, 'pids')) ? readFileSync(path.join(root, 'pids'), 'utf8').split('\n').map(Number) : [];
      for (const node of ['pg1', 'pg2', 'pg3']) {
        const pidFile = path.join(root, node, 'data', 'postmaster.pid');
        if (existsSync(pidFile)) pids.push(Number(readFileSync(pidFile, 'utf8').split('\n')[0]));
      }
      for (const pid of pids) {
        // Only what is still one of ours (a pid may have been reused).
        if (pid && alive(pid) && /patroni|etcd|haproxy|postgres/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))) process.kill(pid, 'SIGKILL');
      }
      rmSync(root, { recursive: true, force: true });
    } catch {
      // another user's, or being made right now: leave it
    }
  }
}
