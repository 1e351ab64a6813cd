import { PostgresNotificationChannel } from '@agendajs/postgres-backend';
import pg from 'pg';
import { OutageAwareClient } from '../db/pg-client.js';
import type { Logger } from '../logger.js';

/**
 * LISTEN needs a session of its own: the direct URL when given, else DATABASE_URL unless that is a transaction-mode
 * pooler (which would hand the LISTEN to whichever client comes next); without one, the job store polls.
 */
export function listenUrl(config: { databaseUrl?: string; databaseDirectUrl?: string; databasePoolMode: 'session' | 'transaction' }): string | undefined {
  return config.databaseDirectUrl ?? (config.databasePoolMode === 'transaction' ? undefined : config.databaseUrl);
}

const INITIAL_DELAY_MS = 500;
const MAX_DELAY_MS = 15_000;

/**
 * Agenda's LISTEN/NOTIFY channel on a connection of its own, made safe against database loss.
 * Agenda's channel emits 'error' with no listener (an uncaught 'error' event kills the process), resets
 * its back-off counter on every attempt (a retry every 100 ms) and gives up after 10 attempts. This one
 * logs, retries with jittered exponential back-off (0.5 s → 15 s) for as long as it takes, and resets
 * the back-off only once LISTEN succeeded again. Jobs still run while it is down: Agenda polls.
 */
export class ResilientListenChannel extends PostgresNotificationChannel {
  private failures = 0;
  private retryTimer?: NodeJS.Timeout;
  private closing = false;
  private readonly listenPool: pg.Pool;

  constructor(databaseUrl: string, private readonly logger: Logger) {
    // Default channel name, as PostgresBackend's own channel; our back-off replaces Agenda's.
    super({ reconnect: { enabled: false } });
    this.listenPool = new pg.Pool({ connectionString: databaseUrl, max: 2, Client: OutageAwareClient });
    this.listenPool.on('error', (error) => logger.warn({ err: error.message }, 'job store LISTEN pool error'));
    this.setPool(this.listenPool);
    this.on('error', (error: Error) => {
      if (this.closing) return;
      this.logger.warn({ err: error.message }, 'job store LISTEN connection lost; reconnecting');
      this.retryLater();
    });
  }

  override async connect(): Promise<void> {
    this.closing = false;
    try {
      await super.connect();
      if (this.failures > 0) this.logger.info('job store LISTEN connection restored');
      this.failures = 0;
    } catch (error) {
      // Agenda.start() awaits this: a database that is away at start must not stop the worker; retry later.
      this.logger.warn({ err: (error as Error).message }, 'job store LISTEN connect failed; retrying');
      this.retryLater();
    }
  }

  override async disconnect(): Promise<void> {
    this.closing = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    await super.disconnect().catch(() => undefined);
    await this.listenPool.end().catch(() => undefined);
  }

  private retryLater() {
    if (this.closing || this.retryTimer) return;
    const base = Math.min(INITIAL_DELAY_MS * 2 ** this.failures, MAX_DELAY_MS);
    const delay = base / 2 + Math.random() * (base / 2);
    this.failures++;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }
}
