import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { ServerSecrets } from './crypto/secrets.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics/index.js';
import type { MailTransport } from './services/notifications/delivery.js';
import type { JobScheduleSource } from './services/notifications/schedules.js';
import type { TokenSigner } from './services/context.js';
import type { RateLimits } from './ratelimit/index.js';

/** Long-lived dependencies of the HTTP app, built once at boot (or by the test harness). */
export interface AppDeps {
  config: Config;
  db: Database;
  secrets: ServerSecrets;
  signer: TokenSigner;
  logger: Logger;
  rateLimits: RateLimits;
  /** The time source; tests inject a controllable clock. */
  clock: () => Date;
  /** Set on SIGTERM: /readyz answers 503 so balancers stop sending here while requests are still served. */
  lifecycle?: { draining: boolean };
  /** The job store (schedules, "Run now") and the mail transport; set by the server once jobs have started. */
  jobs?: JobScheduleSource & { transport: MailTransport };
  /** Prometheus metrics, when METRICS_TOKEN or METRICS_PORT is set (README "Observability"); absent, nothing is counted. */
  metrics?: Metrics;
}
