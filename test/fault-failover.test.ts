import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { ServerSecrets } from '../server/src/crypto/secrets.js';
import { openDatabase } from '../server/src/db/database.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { verifyAuditChain } from '../server/src/services/audit/audit-log.js';
import { enqueueEmails } from '../server/src/services/notifications/outbox.js';
import { itWith } from './support/optional.js';
import { needPatroni, startPatroniCluster, type PatroniCluster, type PatroniNode } from './support/patroni.js';
import { shippedPgBouncerSettings, startPgBouncer, type PgBouncer } from './support/pgbouncer.js';
import { startPostmarkPeer, type PostmarkPeer } from './support/postmark-peer.js';
import { startServerProcess, startWorkerProcess, stopAllProcesses, type ServerProcess, type WorkerProcess } from './support/processes.js';
import { SEED_PASSWORD, seedDatabase } from './support/seed.js';
import { waitUntil } from './support/wait.js';

/**
 * The primary lost (docs/operate/high-availability.md): three PostgreSQL nodes under Patroni with etcd (the shipped
 * server/deploy/patroni/ files), HAProxy leading to the node holding the leader lock, PgBouncer (the shipped settings)
 * before HAProxy, two `pnpm start` servers with the license cache on and a `pnpm worker`. Under activations,
 * validations, revocations and email delivery, the primary's node dies (SIGKILL to its postmaster and its Patroni:
 * the machine is gone). Patroni promotes the synchronous standby; nothing is restarted on Keyforge's side. Then the
 * old primary's Patroni is started again and the node rejoins as a standby (pg_rewind). Then, under the same load, a
 * planned switchover (`patronictl switchover`'s REST call) hands the primary to the synchronous standby.
 *
 * Bounds: every activation answered 200 is on the new primary (0 lost), no device holds two seats and the seat
 * counters equal the rows, no 500 (only 503 with Retry-After while there is no primary), writes accepted again within
 * 30 s of the kill and of the switchover, no valid answer to a revoked key more than 1 s after its revocation was acknowledged, every email
 * delivered exactly once, the activity log's chain whole. The figures are printed and recorded in
 * docs/operate/high-availability.md.
 */
const need = needPatroni();
const it = itWith(need);
const SECRET = 'fault-failover-secret-0123456789abcdef0123456789';
const UNLIMITED = { RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000', RATE_LIMIT_TENANT_PER_MINUTE: '1000000', RATE_LIMIT_LICENSE_PER_MINUTE: '1000000' };
const pace = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let cluster: PatroniCluster;
let bouncer: PgBouncer;
let peer: PostmarkPeer;
const servers: ServerProcess[] = [];
let worker: WorkerProcess;

beforeAll(async () => {
  if (need.missing) return;
  cluster = await startPatroniCluster();
  await applyMigrations({ kind: 'pg', url: cluster.primaryUrl() });
  // PgBouncer before HAProxy's primary port, with the shipped pgbouncer.ini's settings.
  bouncer = await startPgBouncer(cluster.primaryUrl(), { settings: shippedPgBouncerSettings(), poolSize: 10 });
  peer = await startPostmarkPeer();
  const env = {
    DATABASE_URL: bouncer.urlFor(cluster.primaryUrl()),
    DATABASE_POOL_MODE: 'transaction',
    DATABASE_POOL_SIZE: '8',
    // LISTEN (the job store's, the license cache's) through HAProxy: always the primary.
    DATABASE_DIRECT_URL: cluster.primaryUrl(),
    SERVER_SECRET: SECRET,
    LOG_LEVEL: 'info',
    DATA_DIR: `/tmp/kf-fault-failover-${process.pid}`,
    ...UNLIMITED,
  };
  servers.push(...(await Promise.all([0, 1].map(() => startServerProcess({ ...env, JOBS_WORKER: 'false', LICENSE_CACHE: 'on' })))));
  worker = await startWorkerProcess({ ...env, ...peer.env, PUBLIC_URL: 'http://licensing.test' });
}, 300_000);

afterAll(async () => {
  await stopAllProcesses();
  await bouncer?.stop();
  await peer?.close();
  await cluster?.destroy();
});

interface Answer {
  status: number;
  json?: any;
  retryAfter?: string | null;
  sentAt: number;
}

let turn = 0;
/** Round robin over the two servers, as a balancer would. */
async function post(pathname: string, body: unknown, headers: Record<string, string> = {}, server = servers[turn++ % servers.length]): Promise<Answer> {
  const sentAt = Date.now();
  try {
    const response = await fetch(`${server.url}${pathname}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
    const text = await response.text();
    return { status: response.status, json: text ? JSON.parse(text) : undefined, retryAfter: response.headers.get('retry-after'), sentAt };
  } catch {
    return { status: 0, sentAt };
  }
}

async function nonce(): Promise<Answer & { nonce?: string }> {
  const sentAt = Date.now();
  try {
    const response = await fetch(`${servers[turn++ % servers.length].url}/api/v1/nonce`, { signal: AbortSignal.timeout(30_000) });
    const json = (await response.json()) as { nonce?: string };
    return { status: response.status, nonce: json.nonce, retryAfter: response.headers.get('retry-after'), sentAt };
  } catch {
    return { status: 0, sentAt };
  }
}

describe('the primary PostgreSQL node lost under load (Patroni, etcd, HAProxy, PgBouncer)', () => {
  it('a standby takes over, then a planned switchover: nothing acknowledged lost, nothing doubled, no 500, writes back within 30 s, revocations honoured within 1 s', async () => {
    const secrets = new ServerSecrets(SECRET);
    const prefix = `FO${randomBytes(2).toString('hex').toUpperCase()}`;
    const email = `ops@${prefix.toLowerCase()}.test`;
    const seeded = await seedDatabase(cluster.primaryUrl(), SECRET, async (seed) => {
      const tenant = await seed.tenant({ name: 'Failover Co', keyPrefix: prefix });
      const product = await seed.product(tenant.id, 'Failover Studio');
      const seats = [];
      for (let i = 0; i < 4; i++) seats.push(await seed.license(tenant.id, product.id, { maxActivations: 10_000 }));
      const revocable = [];
      for (let i = 0; i < 40; i++) revocable.push(await seed.license(tenant.id, product.id, { maxActivations: 5 }));
      await seed.user(tenant.id, { email, role: 'CompanyAdmin' });
      return { tenantId: tenant.id, seats, revocable };
    });
    const login = await post('/api/graphql', { query: 'mutation($e: String!, $p: String!) { login(input: { email: $e, password: $p }) { __typename ... on LoginSuccess { accessToken } } }', variables: { e: email, p: SEED_PASSWORD } });
    const token: string = login.json.data.login.accessToken;

    const answers: Answer[] = [];
    const counted = <T extends Answer>(answer: T): T => (answers.push(answer), answer);
    /** device → the license key it activated, for every activation answered 200 with isValid. */
    const acknowledged = new Map<string, string>();
    const unknown = new Map<string, string>(); // device → key: asked, never answered 200 (yet)
    const revocationViolations: string[] = [];
    const revocations: { key: string; acknowledgedAt: number }[] = [];
    /** Acknowledged activations: when the request was sent, and when the answer came. */
    const writes: { sentAt: number; at: number }[] = [];
    let loading = true;

    const activate = async (device: string, key: string) => {
      const n = counted(await nonce());
      if (n.status !== 200 || !n.nonce) return false;
      const answer = counted(await post('/api/v1/activate', { licenseKey: key, deviceId: device, nonce: n.nonce }));
      if (answer.status !== 200) return false;
      expect(answer.json.isValid, JSON.stringify(answer.json)).toBe(true);
      acknowledged.set(device, key);
      unknown.delete(device);
      writes.push({ sentAt: n.sentAt, at: Date.now() });
      return true;
    };
    const activator = async (id: number) => {
      for (let n = 0; loading; n++) {
        const device = `device-${id}-${n}`;
        const key = seeded.seats[n % seeded.seats.length].key;
        unknown.set(device, key);
        if (!(await activate(device, key))) await pace(50);
      }
    };
    const validator = async () => {
      while (loading) {
        counted(await post('/api/v1/validate', { licenseKey: seeded.seats[0].key }));
        await pace(10);
      }
    };
    // Revokes one license after another; after each acknowledged revocation, both servers are asked about its key
    // for 1.5 s. A valid answer to a request sent more than 1 s after the acknowledgement breaks the bound.
    const revoker = async () => {
      for (const { key, license } of seeded.revocable) {
        if (!loading) break;
        // Validated first, so both servers hold it in their caches.
        for (const server of servers) counted(await post('/api/v1/validate', { licenseKey: key }, {}, server));
        let answer: Answer;
        do {
          answer = counted(await post('/api/graphql', { query: 'mutation($id: ID!) { revokeLicense(input: { id: $id }) { __typename } }', variables: { id: license.id } }, { authorization: `Bearer ${token}` }));
          if (answer.status !== 200 || answer.json?.errors) await pace(100);
        } while (answer.status !== 200 || answer.json?.errors);
        const acknowledgedAt = Date.now();
        revocations.push({ key, acknowledgedAt });
        while (Date.now() - acknowledgedAt < 1_500) {
          for (const server of servers) {
            const check = counted(await post('/api/v1/validate', { licenseKey: key }, {}, server));
            if (check.status === 200 && check.json.isValid && check.sentAt > acknowledgedAt + 1_000) revocationViolations.push(`${key} valid ${check.sentAt - acknowledgedAt} ms after its revocation via ${server.url}`);
          }
          await pace(50);
        }
      }
    };

    const load = Promise.all([activator(0), activator(1), activator(2), validator(), validator(), revoker()]);
    await waitUntil(() => acknowledged.size >= 20 && revocations.length >= 2, { timeout: 60_000, what: 'work acknowledged before the failover' });

    // Emails in the outbox for the worker to deliver across the failover ("Run now" of email-delivery); Postmark
    // answers slowly, and the primary dies once the first are at Postmark, unanswered.
    const domain = `failover${randomBytes(3).toString('hex')}.test`;
    const EMAILS = 150;
    peer.delayAnswers(5_000);
    const writer = await openDatabase({ databaseUrl: cluster.primaryUrl(), dataDir: mkdtempSync(path.join(tmpdir(), 'kf-failover-')), poolSize: 1 });
    await enqueueEmails(
      writer.prisma,
      Array.from({ length: EMAILS }, (_, index) => ({ tenantId: seeded.tenantId, kind: 'expiry-customer' as const, idempotencyKey: `failover:${domain}:${index}`, to: `r${index}@${domain}`, subject: `Message ${index}`, text: `${index}`, html: `<p>${index}</p>` })),
      new Date(),
    );
    await writer.sql.query(`UPDATE agenda.agenda_jobs SET next_run_at = now() WHERE name = 'email-delivery' AND type = 'single'`, []);
    await writer.close();
    const ours = () => peer.messages.filter((message) => message.To.endsWith(`@${domain}`));
    await waitUntil(() => ours().length > 0, { timeout: 60_000, interval: 20, what: 'the first emails at Postmark' });

    const old = (await cluster.leader())!;
    expect(old, 'a leader').toBeDefined();
    const standbysBefore = await cluster.members();
    const sync = standbysBefore.find((member) => member.role === 'sync_standby')!.name;
    const killedAt = Date.now();
    await old.killNode();
    // Only a write asked for once the old primary was dead can show that writes are back (one answered just after
    // the kill had committed before it).
    const deadAt = Date.now();
    const writesAfterDeath = () => writes.filter((write) => write.sentAt >= deadAt);

    // Patroni promotes the synchronous standby once the dead leader's lock expires (ttl).
    const promoted = await waitUntil(
      async () => {
        const leader = await cluster.leader();
        return leader && leader !== old && leader;
      },
      { timeout: 60_000, interval: 100, what: 'a new leader' },
    );
    const promotedAt = Date.now();
    await waitUntil(() => writesAfterDeath().length >= 5, { timeout: 60_000, interval: 50, what: 'writes accepted again' });
    const writesBackAt = Math.min(...writesAfterDeath().map((write) => write.at));
    const atFailover = acknowledged.size;
    await waitUntil(() => acknowledged.size >= atFailover + 20 && revocations.filter((r) => r.acknowledgedAt > writesBackAt).length >= 2, { timeout: 60_000, what: 'work acknowledged after the failover' });

    // The old primary's node comes back: its Patroni rewinds it (pg_rewind) and it follows the new primary.
    old.start();
    const restartedAt = Date.now();
    const rejoinedAt = await waitUntil(
      async () => {
        const member = (await cluster.members()).find((m) => m.name === old.name);
        return member && ['replica', 'sync_standby'].includes(member.role) && member.state === 'running' && (await old.check('/replica')) === 200 && Date.now();
      },
      { timeout: 90_000, interval: 250, what: `${old.name} to rejoin as a standby` },
    );

    // A planned switchover under the same load (maintenance of the primary's machine): the new primary hands over to
    // its synchronous standby and follows it. The same bounds hold, without the wait for the lock's ttl.
    const before = (await cluster.leader())!;
    const atSwitchover = acknowledged.size;
    const switchoverAt = Date.now();
    // Asked of the synchronous standby of the moment (Patroni refuses any other, and may name another after the
    // rejoin); a refused request changes nothing and is asked again, one that went through despite an error is seen.
    const candidate = await waitUntil(
      async () => {
        const leader = await cluster.leader();
        if (leader && leader !== before) return leader.name;
        const sync = (await cluster.members()).find((member) => member.role === 'sync_standby' && ['running', 'streaming'].includes(member.state))?.name;
        return sync && (await cluster.switchover(before, sync).then(() => sync, () => undefined));
      },
      { timeout: 90_000, interval: 1_000, what: 'a switchover to the synchronous standby' },
    );
    const switchedTo = await waitUntil(async () => {
      const leader = await cluster.leader();
      return leader && leader !== before && leader;
    }, { timeout: 60_000, interval: 100, what: 'the candidate to lead' });
    const switchedAt = Date.now();
    const writesAfterSwitchover = () => writes.filter((write) => write.sentAt >= switchedAt);
    await waitUntil(() => writesAfterSwitchover().length >= 5, { timeout: 60_000, interval: 50, what: 'writes accepted after the switchover' });
    const switchoverWritesBackAt = Math.min(...writesAfterSwitchover().map((write) => write.at));
    // The longest time without an acknowledged activation, from the switchover's start to the first write sent once
    // the candidate led.
    const acknowledgedTimes = [switchoverAt, ...writes.map((write) => write.at).filter((at) => at > switchoverAt && at <= switchoverWritesBackAt)].sort((a, b) => a - b);
    const switchoverPauseMs = Math.max(...acknowledgedTimes.slice(1).map((at, i) => at - acknowledgedTimes[i]));
    await waitUntil(() => acknowledged.size >= atSwitchover + 20 && revocations.filter((r) => r.acknowledgedAt > switchoverWritesBackAt).length >= 2, { timeout: 60_000, what: 'work acknowledged after the switchover' });
    await waitUntil(async () => {
      const member = (await cluster.members()).find((m) => m.name === before.name);
      return member && ['replica', 'sync_standby'].includes(member.role) && ['running', 'streaming'].includes(member.state);
    }, { timeout: 90_000, interval: 250, what: `${before.name} to follow ${candidate}` });

    loading = false;
    await load;
    // Every activation left unanswered is asked again (same device, fresh nonce: the documented retry) until it is.
    for (const [device, key] of [...unknown]) await waitUntil(() => activate(device, key), { timeout: 30_000, interval: 100, what: `an answer for ${device}` });

    // Email delivery resumes on the new primary: every message exactly once at Postmark.
    peer.delayAnswers(0);
    await waitUntil(async () => ours().length >= EMAILS && (await countSent(cluster, seeded.tenantId)) === EMAILS, {
      timeout: 180_000,
      interval: 500,
      what: 'every email sent',
    });
    const emailsDoneAt = Date.now();

    const figures = {
      promotedAfterMs: promotedAt - killedAt,
      writesBackAfterMs: writesBackAt - killedAt,
      rejoinedAfterRestartMs: rejoinedAt - restartedAt,
      switchover: `${before.name} → ${switchedTo.name}`,
      switchoverLeaderAfterMs: switchedAt - switchoverAt,
      switchoverWritesBackAfterMs: switchoverWritesBackAt - switchoverAt,
      switchoverPauseMs,
      emailsDoneAfterMs: emailsDoneAt - killedAt,
      // Whether the old primary had to be wound back (it had WAL the new primary never received: commits that were
      // never acknowledged) or could follow as it was.
      rewound: old.output().includes('running pg_rewind'),
      answers: answers.length,
      status503: answers.filter((a) => a.status === 503).length,
      status500: answers.filter((a) => a.status >= 500 && a.status !== 503).length,
      refused: answers.filter((a) => a.status === 0).length,
      activations: acknowledged.size,
      revocations: revocations.length,
    };
    console.log(`failover: ${old.name} killed, ${promoted.name} promoted (synchronous standby was ${sync}); ${JSON.stringify(figures)}`);

    expect(promoted.name, 'the synchronous standby is the one promoted').toBe(sync);
    expect(figures.writesBackAfterMs, 'writes back within 30 s').toBeLessThan(30_000);
    expect(switchedTo.name, 'the switchover went to the candidate').toBe(candidate);
    expect(figures.switchoverWritesBackAfterMs, 'writes back within 30 s of the switchover').toBeLessThan(30_000);
    expect(figures.switchoverPauseMs, 'no pause in writes of 30 s or more').toBeLessThan(30_000);
    // Never a 500; every error a 503 with Retry-After (a refused connection would be a server gone: there is none).
    expect(answers.filter((a) => a.status >= 500 && a.status !== 503).map((a) => `${a.status} ${JSON.stringify(a.json)}`)).toEqual([]);
    expect(answers.filter((a) => a.status === 0)).toEqual([]);
    expect(answers.filter((a) => a.status === 503 && !/^\d+$/.test(a.retryAfter ?? ''))).toEqual([]);
    expect(revocationViolations).toEqual([]);
    for (const server of servers) {
      expect(server.child.exitCode, server.output()).toBeNull();
      // Each server's license cache forgot everything when its change feed lost the old primary, and started over
      // from the new one (what it held may have missed changes in flight at the failover).
      const log = server.output().slice(server.output().lastIndexOf('license cache feed lost'));
      expect(log, 'the license cache emptied at the failover').toContain('license cache feed lost: cache emptied');
      expect(log, 'and resynchronised on the new primary').toContain('license cache feed resynchronised');
    }
    expect(worker.child.exitCode, worker.output()).toBeNull();

    const check = failoverClient(cluster.primaryUrl());
    await check.connect();
    try {
      // Every activation answered 200 is on the new primary: 0 lost.
      const rows = await check.query<{ device_id: string; key: string }>(
        `SELECT a.device_id, l.id AS key FROM activations a JOIN licenses l ON l.id = a.license_id WHERE a.tenant_id = $1 AND a.deactivated_at IS NULL`,
        [seeded.tenantId],
      );
      const present = new Set(rows.rows.map((row) => row.device_id));
      const lost = [...acknowledged.keys()].filter((device) => !present.has(device));
      expect(lost, 'acknowledged activations missing on the new primary').toEqual([]);
      // 0 duplicate seats: one row per device and license, and each counter equals its rows.
      const doubled = await check.query(`SELECT license_id, device_id FROM activations WHERE tenant_id = $1 AND deactivated_at IS NULL GROUP BY 1, 2 HAVING count(*) > 1`, [seeded.tenantId]);
      expect(doubled.rows).toEqual([]);
      const counters = await check.query(
        `SELECT l.id FROM licenses l LEFT JOIN activations a ON a.license_id = l.id AND a.deactivated_at IS NULL WHERE l.tenant_id = $1 GROUP BY l.id HAVING l.current_activations <> count(a.id)`,
        [seeded.tenantId],
      );
      expect(counters.rows).toEqual([]);
      // Every acknowledged revocation is there.
      const revoked = await check.query<{ n: number }>(`SELECT count(*)::int AS n FROM licenses WHERE tenant_id = $1 AND status = 'revoked'`, [seeded.tenantId]);
      expect(revoked.rows[0].n).toBeGreaterThanOrEqual(revocations.length);
      // The old primary rejoined on the new timeline and replays it.
      const timeline = await check.query<{ timeline_id: number }>('SELECT timeline_id FROM pg_control_checkpoint()');
      expect(timeline.rows[0].timeline_id).toBeGreaterThan(1);
    } finally {
      await check.end();
    }
    // Emails: each exactly once at Postmark.
    const perAddress = new Map<string, number>();
    for (const message of ours()) perAddress.set(message.To, (perAddress.get(message.To) ?? 0) + 1);
    expect(perAddress.size).toBe(EMAILS);
    expect([...perAddress].filter(([, times]) => times !== 1)).toEqual([]);
    // The activity log's chain is whole, and so are its checkpoints.
    const verifyDir = mkdtempSync(path.join(tmpdir(), 'kf-failover-verify-'));
    const verifier = await openDatabase({ databaseUrl: cluster.primaryUrl(), dataDir: verifyDir, poolSize: 1 });
    try {
      expect(await verifyAuditChain(verifier.prisma, seeded.tenantId, secrets.auditChainKey)).toMatchObject({ valid: true, brokenAtSeq: null });
    } finally {
      await verifier.close();
      rmSync(verifyDir, { recursive: true, force: true });
    }
    // The standbys — the old primary among them unless the switchover chose it — have what the primary committed
    // (they replay its timeline).
    const leaderAtEnd = await cluster.leader();
    for (const node of cluster.nodes.filter((node) => node !== leaderAtEnd)) await expectReplicated(node, seeded.tenantId, acknowledged.size);
  }, 420_000);
});

/**
 * A client of the cluster for the test's own checks. A connection the failover or the switchover cuts fails the query
 * under way (which the caller sees); the client's 'error' event must not also end the run as an uncaught exception.
 */
function failoverClient(connectionString: string): pg.Client {
  const client = new pg.Client({ connectionString });
  client.on('error', () => undefined);
  return client;
}

async function countSent(cluster: PatroniCluster, tenantId: string): Promise<number> {
  const client = failoverClient(cluster.primaryUrl());
  try {
    await client.connect();
    return (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM email_outbox WHERE tenant_id = $1 AND status = 'sent'`, [tenantId])).rows[0].n;
  } catch {
    return -1; // a connection cut while HAProxy follows the leader: asked again at the next poll
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function expectReplicated(node: PatroniNode, tenantId: string, activations: number) {
  await waitUntil(
    async () => {
      const client = failoverClient(node.url);
      await client.connect();
      try {
        const { rows } = await client.query<{ n: number; recovery: boolean }>(`SELECT count(*)::int AS n, pg_is_in_recovery() AS recovery FROM activations WHERE tenant_id = $1 AND deactivated_at IS NULL`, [tenantId]);
        return rows[0].recovery && rows[0].n >= activations;
      } finally {
        await client.end();
      }
    },
    { timeout: 30_000, interval: 250, what: `${node.name} to replay the new primary's writes` },
  );
}
