import { execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../server/src/config.js';
import { answers, itWith, needCommands } from './support/optional.js';
import { clusterUser } from './support/pg-cluster.js';
import { adminUrl, uniqueName, withAdmin } from './support/pg.js';
import { needPgBouncer } from './support/pgbouncer.js';
import { freePort } from './support/processes.js';
import { waitUntil } from './support/wait.js';

/**
 * The host-preparation files of server/deploy/ say what the systemd units and PgBouncer need, truthfully: the paths
 * the units assume are the ones install.sh creates, env.example is a configuration the server accepts, and the
 * userlist.txt command makes a file the shipped pgbouncer.ini authenticates against with scram-sha-256.
 */
const deploy = (name: string) => readFileSync(path.join('server/deploy', name), 'utf8');
const pgbouncer = needPgBouncer();

describe('server/deploy', () => {
  it('install.sh creates the user, directories and environment file the systemd units assume', () => {
    const install = deploy('install.sh');
    execFileSync('sh', ['-n', 'server/deploy/install.sh']);
    for (const unit of ['keyforge-server@.service', 'keyforge-worker.service']) {
      const text = deploy(unit);
      expect(text).toMatch(/^User=keyforge$/m);
      expect(install).toContain('useradd --system --user-group');
      expect(install).toMatch(/ keyforge$/m);
      const workingDirectory = /^WorkingDirectory=(.+)$/m.exec(text)![1];
      expect(install).toContain(`install -d -o root -g root -m 0755 ${workingDirectory}`);
      const environmentFile = /^EnvironmentFile=(.+)$/m.exec(text)![1];
      expect(install).toContain(`mv ${environmentFile}.new ${environmentFile}`);
      expect(install).toContain(`install -m 0644 "$SOURCE/server/deploy/keyforge-server@.service" "$SOURCE/server/deploy/keyforge-worker.service" /etc/systemd/system/`);
      // What the unit runs is what install.sh requires to be built.
      expect(install).toContain(`$SOURCE/${/^ExecStart=\S+ \S+ (server\/dist\/\S+)$/m.exec(text)![1]}`);
    }
  });

  it('env.example is a configuration the server accepts, for PgBouncer in transaction mode with a direct URL for LISTEN', () => {
    const env = Object.fromEntries(
      deploy('env.example')
        .split('\n')
        .filter((line) => line && !line.startsWith('#'))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    // install.sh puts a generated secret in place of the placeholder.
    expect(deploy('install.sh')).toContain('sed "s|^SERVER_SECRET=.*|SERVER_SECRET=$secret|" "$SOURCE/server/deploy/env.example"');
    const config = loadConfig({ ...env, SERVER_SECRET: 'x'.repeat(64) });
    expect(config).toMatchObject({ databasePoolMode: 'transaction', dataDir: '/var/lib/keyforge' });
    expect(config.databaseDirectUrl).toMatch(/:5432\//);
    expect(env.DATABASE_URL).toMatch(/:6432\//);
    expect(env).not.toHaveProperty('PORT'); // the unit's Environment=PORT=%i; the file would override it
  });

  it('pgbouncer.ini fails a waiting query within seconds, not after the 120 s default, and retries a failed login after 1 s', () => {
    const ini = deploy('pgbouncer.ini');
    const setting = (name: string) => Number(new RegExp(`^${name} = (\\d+)$`, 'm').exec(ini)?.[1]);
    expect(setting('query_wait_timeout')).toBeGreaterThan(0);
    expect(setting('query_wait_timeout')).toBeLessThanOrEqual(10);
    expect(setting('server_connect_timeout')).toBeLessThan(setting('query_wait_timeout'));
    // After a failed login PgBouncer refuses every client this long (default 15 s): PostgreSQL back, 503s meanwhile.
    expect(setting('server_login_retry')).toBeLessThanOrEqual(1);
  });

  itWith({ ...needCommands('psql'), ...(pgbouncer.missing ? { missing: pgbouncer.missing } : {}), what: 'psql, PgBouncer' })(
    "userlist.txt.example's command writes the SCRAM secret the shipped pgbouncer.ini (scram-sha-256) checks passwords against",
    async () => {
      const role = uniqueName('kf_scram');
      const password = 'a long pass phrase for the app role';
      await withAdmin((client) => client.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`));
      const dir = mkdtempSync(path.join(tmpdir(), 'kf-pgbouncer-scram-'));
      let child: ReturnType<typeof spawn> | undefined;
      try {
        // The command of userlist.txt.example, for this role, as a superuser.
        const command = /^;\s+psql -Atc "(.+)" > \/etc\/pgbouncer\/userlist\.txt$/m.exec(deploy('userlist.txt.example'))![1].replace(/\\"/g, '"').replace("'keyforge_app'", `'${role}'`);
        const userlist = execFileSync('psql', [adminUrl(), '-Atc', command], { encoding: 'utf8' });
        expect(userlist).toMatch(new RegExp(`^"${role}" "SCRAM-SHA-256\\$4096:[^"]+"\\n$`));
        writeFileSync(path.join(dir, 'userlist.txt'), userlist);
        // The shipped file, with only the addresses, the database and the file paths of this machine.
        const port = await freePort();
        const postgres = new URL(adminUrl());
        const ini = deploy('pgbouncer.ini')
          .replace(/^keyforge = .*$/m, `keyforge = host=${postgres.hostname} port=${postgres.port || 5432} dbname=postgres`)
          .replace(/^listen_addr = .*$/m, 'listen_addr = 127.0.0.1')
          .replace(/^listen_port = .*$/m, `listen_port = ${port}\nunix_socket_dir =\nlogfile = ${dir}/pgbouncer.log\npidfile = ${dir}/pgbouncer.pid`)
          .replace(/^auth_file = .*$/m, `auth_file = ${dir}/userlist.txt`);
        expect(ini).toMatch(/^auth_type = scram-sha-256$/m);
        writeFileSync(path.join(dir, 'pgbouncer.ini'), ini);
        const user = clusterUser();
        if (user) chownSync(dir, user.uid, user.gid);
        child = spawn(pgbouncer.path, [path.join(dir, 'pgbouncer.ini')], { stdio: 'ignore', ...(user ? { uid: user.uid, gid: user.gid } : {}) });
        await waitUntil(() => answers('127.0.0.1', port, 500), { timeout: 20_000, interval: 50, what: 'PgBouncer to listen' });
        const connect = async (secret: string) => {
          const client = new pg.Client({ host: '127.0.0.1', port, user: role, password: secret, database: 'keyforge' });
          try {
            await client.connect();
            return (await client.query('SELECT current_user')).rows[0].current_user as string;
          } finally {
            await client.end().catch(() => undefined);
          }
        };
        expect(await connect(password)).toBe(role);
        await expect(connect('not the password')).rejects.toThrow(/SASL authentication failed|password authentication failed/);
      } finally {
        child?.kill('SIGINT');
        await withAdmin((client) => client.query(`DROP ROLE IF EXISTS ${role}`));
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  // The high-availability recipe (docs/operate/high-availability.md; test/fault-failover.test.ts runs it).
  describe('patroni/: Patroni, etcd and HAProxy for automatic failover', () => {
    const patroni = parse(deploy('patroni/patroni.yml'));
    const haproxy = deploy('patroni/haproxy.cfg');
    const etcd = Object.fromEntries(deploy('patroni/etcd.env').split('\n').filter((line) => /^ETCD_/.test(line)).map((line) => line.split(/=(.*)/s).slice(0, 2)));

    it('patroni.yml replicates synchronously, never promotes a standby that may lack a commit, and rewinds an old primary', () => {
      const dcs = patroni.bootstrap.dcs;
      expect(dcs).toMatchObject({ synchronous_mode: true, synchronous_node_count: 1 });
      expect(dcs.postgresql.parameters.synchronous_commit).toBe('on');
      expect(dcs.postgresql).toMatchObject({ use_pg_rewind: true });
      expect(dcs.postgresql.parameters.wal_log_hints).toBe('on'); // pg_rewind needs it (or data checksums)
      // Patroni's rule: the loop and two retries fit in the leader lock's life.
      expect(dcs.loop_wait + 2 * dcs.retry_timeout).toBeLessThanOrEqual(dcs.ttl);
      // A failover within 30 s of the primary's loss: the lock expires (ttl), a loop later a standby takes it.
      expect(dcs.ttl + dcs.loop_wait).toBeLessThan(30);
      expect(patroni.postgresql.pg_hba.some((line: string) => /^host replication replicator /.test(line))).toBe(true);
      expect(patroni.postgresql.authentication.replication.username).toBe('replicator');
    });

    it('HAProxy checks each node’s Patroni at GET /primary, on its REST port, and cuts sessions to a node marked down', () => {
      expect(haproxy).toMatch(/^\s+mode tcp$/m);
      expect(haproxy).toMatch(/^\s+option httpchk GET \/primary$/m);
      expect(haproxy).toMatch(/^\s+http-check expect status 200$/m);
      expect(haproxy).toMatch(/^\s+default-server .*on-marked-down shutdown-sessions/m);
      const servers = [...haproxy.matchAll(/^\s+server (\S+) (\S+) .*check port (\d+)$/gm)].map(([, name, address, port]) => ({ name, address, port }));
      expect(servers.map((server) => server.name)).toEqual(['pg1', 'pg2', 'pg3']);
      // pg1's line is the node of patroni.yml: its PostgreSQL address, its REST API's port.
      expect(servers[0].address).toBe(patroni.postgresql.connect_address);
      expect(servers[0].port).toBe(patroni.restapi.connect_address.split(':')[1]);
      expect(new Set(servers.map((server) => server.port)).size).toBe(1);
    });

    it('docs/operate/high-availability.md shows these files and their values', () => {
      const doc = readFileSync('docs/operate/high-availability.md', 'utf8');
      for (const file of doc.matchAll(/server\/deploy\/patroni\/([\w.]+)/g)) expect(() => deploy(`patroni/${file[1]}`), file[0]).not.toThrow();
      const dcs = patroni.bootstrap.dcs;
      expect(doc).toContain(`| \`ttl\`, \`loop_wait\`, \`retry_timeout\` | ${dcs.ttl}, ${dcs.loop_wait}, ${dcs.retry_timeout} |`);
      expect(doc).toContain(`| \`synchronous_mode\` | \`${dcs.synchronous_mode}\` |`);
      expect(doc).toContain(`| \`synchronous_mode_strict\` | \`${dcs.synchronous_mode_strict}\` |`);
      expect(doc).toContain(`| \`synchronous_commit\` | \`${dcs.postgresql.parameters.synchronous_commit}\` |`);
      // PgBouncer and the direct URL lead to HAProxy's port, never to a node.
      const port = /^\s+bind :(\d+)$/m.exec(haproxy)![1];
      expect(doc).toContain(`keyforge = host=127.0.0.1 port=${port} dbname=keyforge`);
      expect(doc).toMatch(new RegExp(`^DATABASE_DIRECT_URL=postgres://\\S+@127\\.0\\.0\\.1:${port}/keyforge$`, 'm'));
      expect(doc).toContain(`check port ${patroni.restapi.connect_address.split(':')[1]}`);
    });

    itWith(needCommands('haproxy'))('haproxy.cfg is a valid HAProxy configuration', () => {
      execFileSync('haproxy', ['-c', '-q', '-f', 'server/deploy/patroni/haproxy.cfg']);
    });

    it('Patroni reaches the etcd members etcd.env sets up, and the members form one cluster', () => {
      const members = etcd.ETCD_INITIAL_CLUSTER.split(',').map((member: string) => member.split('=')[1].replace(':2380', ':2379').replace('http://', ''));
      expect(patroni.etcd3.hosts.split(',')).toEqual(members);
      expect(members).toHaveLength(3); // a majority survives one member's loss
      expect(etcd.ETCD_ADVERTISE_CLIENT_URLS).toBe(`http://${members[0]}`);
      expect(etcd.ETCD_INITIAL_CLUSTER).toContain(`${etcd.ETCD_NAME}=${etcd.ETCD_INITIAL_ADVERTISE_PEER_URLS}`);
    });
  });
});
