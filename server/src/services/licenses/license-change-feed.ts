import { performance } from 'node:perf_hooks';
import type { PGlite } from '@electric-sql/pglite';
import { OutageAwareClient } from '../../db/pg-client.js';
import type { Logger } from '../../logger.js';
import type { Database } from '../../db/database.js';

/** What a change feed tells the license cache. */
export interface ChangeFeedHandler {
  /** A change: `l<license id>`, `t<tenant id>` or `*`, comma-separated (migration license_cache_change_log). */
  notify(payload: string): void;
  /** The feed (re)started from a fresh position: every change committed after it will arrive. Nothing held before is trusted. */
  listening(): void;
  /** The feed failed: changes may have been missed from some point on. */
  lost(): void;
  /**
   * A poll (or round trip) sent at `sentAt` (performance.now()) came back and its changes went through `notify`:
   * every change committed before `sentAt` has been delivered.
   */
  confirmed(sentAt: number): void;
}

export interface ChangeFeed {
  /** Resolves once the first poll was attempted (whether or not it succeeded: it retries on its own). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface ChangeFeedTiming {
  /** Time between the start of one poll and the next. */
  pollMs: number;
  /** A poll unanswered this long ends the connection (a peer gone without a FIN, a stalled server). */
  deadMs: number;
  /** How old (ms) a poll's snapshot must be before its xmin may become the log's pruning horizon. */
  retentionMs: number;
  /** How often this reader prunes the log. */
  pruneEveryMs: number;
}

export const DEFAULT_FEED_TIMING = { retentionMs: 30_000, pruneEveryMs: 10_000 };

/** The application_name of the feed's connection (an operator, and a test, find it in pg_stat_activity). */
export const CHANGE_FEED_APPLICATION_NAME = 'keyforge-license-changes';

/**
 * More rows than this in one poll: forget everything rather than each (a bulk change logs a row per license). The
 * rows are read in no particular order: each only says what to forget.
 */
const MAX_ROWS = 1000;

/**
 * One statement, so that it runs whole on one server connection even through a transaction-mode pooler, with one
 * snapshot: the snapshot itself, the rows its transactions committed since the previous poll's snapshot ($2: that
 * snapshot's xmax, $3: the transactions it saw in progress; $1 false on the first poll), the pruning horizon, the
 * log's epoch (unlogged like the log: none, or another, once a crash or a promotion emptied the log), and what
 * identifies the server (a different one, or the same one restarted, holds other transactions).
 */
const POLL = `
SELECT pg_current_snapshot()::text AS snapshot,
       (SELECT coalesce(max(below), 0)::text FROM license_cache_changes_horizon) AS below,
       (SELECT epoch::text FROM license_cache_changes_epoch LIMIT 1) AS epoch,
       (SELECT system_identifier::text FROM pg_control_system()) || '/' || (SELECT timeline_id::text FROM pg_control_checkpoint())
         || '/' || pg_postmaster_start_time()::text || '/' || coalesce(host(inet_server_addr()), 'local') || ':' || coalesce(inet_server_port()::text, '') AS server,
       ARRAY(SELECT payload FROM license_cache_changes WHERE $1::boolean AND (xid >= $2::bigint OR xid = ANY($3::bigint[])) LIMIT ${MAX_ROWS + 1}) AS payloads`;

/** A new epoch for a log that has none (emptied by a crash, or on a promoted standby); readers that race agree on one. */
const NEW_EPOCH = `INSERT INTO license_cache_changes_epoch (id) VALUES (true) ON CONFLICT (id) DO NOTHING`;

/** Moves the horizon up (never down) and deletes what is below it, in one statement. */
const PRUNE = `
WITH horizon AS (UPDATE license_cache_changes_horizon SET below = greatest(below, $1::bigint) RETURNING below)
DELETE FROM license_cache_changes WHERE xid < (SELECT max(below) FROM horizon)`;

/**
 * The housekeeping job's share of pruning (every 10 minutes), so that the log stays bounded when no server reads it
 * (LICENSE_CACHE=off everywhere, or every server stopped): the horizon moves up to the xmin this job recorded at its
 * previous run — every reader alive has polled since — and the current xmin is recorded for the next run. Returns
 * the rows deleted.
 */
export async function purgeLicenseCacheChanges({ db }: { db: Database }): Promise<number> {
  const [row] = await db.sql.query<{ deleted: number }>(
    `WITH horizon AS (
       UPDATE license_cache_changes_horizon
          SET below = greatest(below, candidate), candidate = (pg_snapshot_xmin(pg_current_snapshot())::text)::bigint
        RETURNING below),
     deleted AS (DELETE FROM license_cache_changes WHERE xid < (SELECT max(below) FROM horizon) RETURNING 1)
     SELECT count(*)::int AS deleted FROM deleted`,
    [],
  );
  return row?.deleted ?? 0;
}

interface Snapshot {
  xmin: bigint;
  xmax: bigint;
  xip: string[];
}

function parseSnapshot(text: string): Snapshot {
  const [xmin, xmax, xip] = text.split(':');
  return { xmin: BigInt(xmin), xmax: BigInt(xmax), xip: xip ? xip.split(',') : [] };
}

const INITIAL_DELAY_MS = 250;
const MAX_DELAY_MS = 5_000;

/**
 * The license caches' change feed on PostgreSQL: polls the change log every `pollMs` on a connection of its own
 * (straight to PostgreSQL or through any pooler: one statement, no session state), reading the rows committed
 * between its previous snapshot and the current one (migration license_cache_change_log says why none is missed).
 * Any failure — an error, a poll unanswered for `deadMs`, the connection lost, the server changed (another system,
 * timeline, start or address: a failover, a restart), the log emptied (its epoch gone or changed: a crash, a
 * promotion), transaction ids going backwards, or the log pruned past the previous snapshot — empties the cache
 * (`lost`) and starts over from a fresh snapshot (`listening`).
 */
export function pgLicenseChangeFeed(url: string, handler: ChangeFeedHandler, logger: Logger, timing: ChangeFeedTiming): ChangeFeed {
  let client: OutageAwareClient | undefined;
  let stopped = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let previous: Snapshot | undefined;
  let server: string | undefined;
  let epoch: string | undefined;
  /** Each successful poll's time and xmin, oldest first: the pruning horizon is one at least retentionMs old. */
  let samples: { at: number; xmin: bigint }[] = [];
  let lastPruneAt = performance.now();
  /** Why the feed is down (logged once when it restarts). */
  let downSince: string | undefined;

  const restart = (reason: string) => {
    previous = undefined;
    server = undefined;
    epoch = undefined;
    samples = [];
    if (downSince === undefined) {
      downSince = reason;
      logger.warn({ reason }, 'license cache feed lost: cache emptied, bypassed until it resynchronises');
    }
    handler.lost();
  };

  const drop = (current: OutageAwareClient, reason: string) => {
    if (client !== current) return;
    client = undefined;
    restart(reason);
    current.end().catch(() => undefined);
  };

  const connect = async (): Promise<OutageAwareClient | undefined> => {
    const next = new OutageAwareClient({ connectionString: url, connectionTimeoutMillis: 5_000, keepAlive: true, application_name: CHANGE_FEED_APPLICATION_NAME });
    next.on('error', (error) => drop(next, error.message));
    next.on('end', () => drop(next, 'connection ended'));
    try {
      await next.connect();
    } catch (error) {
      await next.end().catch(() => undefined);
      restart(`connect failed: ${(error as Error).message}`);
      return undefined;
    }
    if (stopped) {
      await next.end().catch(() => undefined);
      return undefined;
    }
    client = next;
    return next;
  };

  const poll = async (): Promise<boolean> => {
    const current = client ?? (await connect());
    if (!current || stopped) return false;
    const sentAt = performance.now();
    const watchdog = setTimeout(() => drop(current, `no answer to a poll for ${timing.deadMs} ms`), timing.deadMs);
    watchdog.unref();
    let row: { snapshot: string; below: string; epoch: string | null; server: string; payloads: string[] };
    try {
      const base = previous;
      ({ rows: [row] } = await current.query(POLL, [base !== undefined, String(base?.xmax ?? 0n), base?.xip ?? []]));
    } catch (error) {
      drop(current, (error as Error).message);
      return false;
    } finally {
      clearTimeout(watchdog);
    }
    if (client !== current || stopped) return false;
    if (row.epoch === null) {
      // The log was emptied (a crash, a promotion): whatever it held before is gone. Nothing read so far can be
      // trusted; the next poll that finds an epoch starts over.
      restart('the change log has no epoch (emptied by a crash or a promotion)');
      try {
        await current.query(NEW_EPOCH);
      } catch (error) {
        drop(current, (error as Error).message);
        return false;
      }
      return true;
    }
    const snapshot = parseSnapshot(row.snapshot);
    const base = previous;
    let problem: string | undefined;
    if (base && server !== row.server) problem = `the database server changed (${server} → ${row.server})`;
    else if (base && epoch !== row.epoch) problem = 'the change log was emptied (its epoch changed: a crash or a promotion)';
    else if (base && snapshot.xmax < base.xmin) problem = 'transaction ids went backwards';
    else if (base && BigInt(row.below) > base.xmin) problem = 'the change log was pruned past this reader (it paused too long)';
    if (problem) restart(problem);
    if (!base || problem) {
      // A fresh start: the cache is empty and only reads that begin from now on fill it; every change not visible
      // in this snapshot comes with a later poll.
      handler.listening();
      if (downSince !== undefined) logger.info({ server: row.server, after: downSince }, 'license cache feed resynchronised');
      downSince = undefined;
    } else {
      if (row.payloads.length > MAX_ROWS) handler.notify('*');
      else for (const payload of row.payloads) handler.notify(payload);
    }
    previous = snapshot;
    server = row.server;
    epoch = row.epoch;
    handler.confirmed(sentAt);
    failures = 0;
    const now = performance.now();
    samples.push({ at: now, xmin: snapshot.xmin });
    if (now - lastPruneAt >= timing.pruneEveryMs) {
      lastPruneAt = now;
      let horizon: bigint | undefined;
      while (samples.length > 1 && now - samples[0].at >= timing.retentionMs) horizon = samples.shift()!.xmin;
      if (horizon !== undefined) {
        try {
          await current.query(PRUNE, [String(horizon)]);
        } catch (error) {
          logger.warn({ err: (error as Error).message }, 'license cache change log: pruning failed (retried later)');
        }
      }
    }
    return true;
  };

  const loop = async () => {
    timer = undefined;
    if (stopped) return;
    const started = performance.now();
    const ok = await poll();
    if (stopped) return;
    let delay: number;
    if (ok) delay = Math.max(0, timing.pollMs - (performance.now() - started));
    else {
      const base = Math.min(INITIAL_DELAY_MS * 2 ** failures, MAX_DELAY_MS);
      failures++;
      delay = base / 2 + Math.random() * (base / 2);
    }
    timer = setTimeout(() => void loop(), delay);
    timer.unref();
  };

  return {
    async start() {
      await loop();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      const current = client;
      client = undefined;
      // Nothing is heard from here on: the cache must not answer from memory.
      handler.lost();
      await current?.end().catch(() => undefined);
    },
  };
}

/**
 * The embedded database's feed. It has one session, shared by every statement of the process, which sets
 * keyforge.license_cache_notify (db/database.ts) so the triggers NOTIFY in process instead of logging; PGlite hands a
 * statement's notifications to the listeners before that statement's promise settles: a change is known here before
 * its writer hears it committed. Nothing can be missed, so it confirms once, for good.
 */
export function pgliteLicenseChangeFeed(pglite: PGlite, channel: string, handler: ChangeFeedHandler): ChangeFeed {
  let unlisten: (() => Promise<void>) | undefined;
  return {
    async start() {
      unlisten = await pglite.listen(channel, (payload) => handler.notify(payload));
      handler.listening();
      handler.confirmed(Number.POSITIVE_INFINITY);
    },
    async stop() {
      await unlisten?.().catch(() => undefined);
      unlisten = undefined;
      handler.lost();
    },
  };
}
