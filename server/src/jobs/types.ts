import type { Logger } from '../logger.js';
import type { SystemContext } from '../services/context.js';
import type { MailTransport } from '../services/notifications/delivery.js';

/** What a job run gets: the database, the time it runs at (the scheduler's clock, or --now), and its dependencies. */
export interface JobContext extends SystemContext {
  publicUrl: string;
  transport: MailTransport;
  logger: Logger;
  /** WEBHOOK_ALLOW_PRIVATE (the SSRF guard of webhook deliveries). */
  webhookAllowPrivate: boolean;
}

export interface JobDefinition {
  name: string;
  description: string;
  /** Cron expression, UTC. */
  schedule: string;
  /** Runs every few minutes: its completions are logged at debug level only. */
  frequent?: boolean;
  /**
   * How long Agenda's lock on a run lasts without a heartbeat. A live run renews it (touch) every third
   * of this, so it only bounds how soon another worker takes over the run of a process that died.
   */
  lockLifetimeMs: number;
  run(ctx: JobContext): Promise<Record<string, unknown>>;
}
