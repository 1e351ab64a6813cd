import { performance } from 'node:perf_hooks';
import type { PGlite } from '@electric-sql/pglite';
import { OutageAwareClient } from './pg-client.js';
import type { Logger } from '../logger.js';

/** What a listener tells its owner, in the order the database sent it. */
export interface NotificationHandler {
  /** A notification on the channel. */
  notify(payload: string): void;
  /** LISTEN is in place on a new session: notifications from now on arrive. Nothing sent before it will. */
  listening(): void;
  /** The session is gone: notifications may have been missed from some point on. */
  lost(): void;
  /**
   * A round trip sent at `sentAt` (performance.now()) came back on the listening session: every notification
   * committed before `sentAt` has been delivered through `notify` already.
   */
  confirmed(sentAt: number): void;
}

export interface NotificationListener {
  /** Resolves once the first LISTEN was attempted (whether or not it succeeded: it retries on its own). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * LISTEN needs a session of its own: the direct URL when given, else DATABASE_URL unless that is a
 * transaction-mode pooler (which would hand the LISTEN to whichever client comes next); then workers poll and the license cache stays off.
 */
export function listenUrl(config: { databaseUrl?: string; databaseDirectUrl?: string; databasePoolMode: 'session' | 'transaction' }): string | undefined {
  return config.databaseDirectUrl ?? (config.databasePoolMode === 'transaction' ? undefined : config.databaseUrl);
}

const INITIAL_DELAY_MS = 250;
const MAX_DELAY_MS = 5_000;

/**
 * LISTEN on a PostgreSQL session of its own, with a round trip every `heartbeatMs` on that same session. PostgreSQL
 * sends a session the notifications committed before a query ahead of that query's answer (they are signalled at the
 * notifier's commit, before its client hears of it, and the listening backend sends pending ones before
 * ReadyForQuery), and the client reads its socket in order: an answer to a round trip sent at `sentAt` proves every
 * notification committed before `sentAt` was handled. A round trip unanswered for `deadMs` ends the session (a peer
 * gone without a FIN); any loss reconnects with jittered back-off for as long as it takes.
 */
export function pgNotificationListener(url: string, channel: string, handler: NotificationHandler, logger: Logger, timing: { heartbeatMs: number; deadMs: number }): NotificationListener {
  let client: OutageAwareClient | undefined;
  let stopped = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let inFlightSince: number | undefined;

  const drop = (client_: OutageAwareClient, reason: string) => {
    if (client !== client_) return;
    client = undefined;
    inFlightSince = undefined;
    if (heartbeat) clearInterval(heartbeat);
    heartbeat = undefined;
    handler.lost();
    client_.removeAllListeners('notification');
    client_.end().catch(() => undefined);
    if (stopped) return;
    logger.warn({ err: reason, channel }, 'LISTEN connection lost; the license cache is bypassed until it is back');
    retryLater();
  };

  const beat = (current: OutageAwareClient) => {
    if (client !== current) return;
    const now = performance.now();
    if (inFlightSince !== undefined) {
      if (now - inFlightSince > timing.deadMs) drop(current, `no answer on the LISTEN connection for ${Math.round(now - inFlightSince)} ms`);
      return;
    }
    inFlightSince = now;
    current.query('SELECT 1').then(
      () => {
        if (client !== current) return;
        inFlightSince = undefined;
        handler.confirmed(now);
      },
      (error: Error) => drop(current, error.message),
    );
  };

  const connect = async () => {
    if (stopped) return;
    // Named, so an operator (and a test) can find the session in pg_stat_activity.
    const next = new OutageAwareClient({ connectionString: url, connectionTimeoutMillis: 5_000, keepAlive: true, application_name: `keyforge-listen-${channel}` });
    next.on('error', (error) => drop(next, error.message));
    next.on('end', () => drop(next, 'connection ended'));
    next.on('notification', (message) => {
      if (client === next && message.channel === channel) handler.notify(message.payload ?? '');
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${channel}`);
    } catch (error) {
      next.removeAllListeners('notification');
      await next.end().catch(() => undefined);
      if (failures === 0) logger.warn({ err: (error as Error).message, channel }, 'LISTEN connect failed; the license cache is bypassed until it succeeds');
      retryLater();
      return;
    }
    if (stopped) {
      await next.end().catch(() => undefined);
      return;
    }
    if (failures > 0) logger.info({ channel }, 'LISTEN connection restored');
    failures = 0;
    client = next;
    handler.listening();
    beat(next);
    heartbeat = setInterval(() => beat(next), timing.heartbeatMs);
    heartbeat.unref();
  };

  const retryLater = () => {
    if (stopped || retryTimer) return;
    const base = Math.min(INITIAL_DELAY_MS * 2 ** failures, MAX_DELAY_MS);
    failures++;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, base / 2 + Math.random() * (base / 2));
    retryTimer.unref();
  };

  return {
    start: connect,
    async stop() {
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer);
      if (heartbeat) clearInterval(heartbeat);
      const current = client;
      client = undefined;
      // Nothing is heard from here on: the cache must not answer from memory (as the embedded listener's stop does).
      handler.lost();
      if (current) {
        current.removeAllListeners('notification');
        await current.end().catch(() => undefined);
      }
    },
  };
}

/**
 * LISTEN on the embedded database. It has one session, shared by every statement of the process, and PGlite hands a
 * statement's notifications to the listeners before that statement's promise settles: a change is known here before
 * its writer hears it committed. Nothing can be missed, so it confirms once, for good.
 */
export function pgliteNotificationListener(pglite: PGlite, channel: string, handler: NotificationHandler): NotificationListener {
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
