import type { Config } from './config.js';
import { dataDirWarning, prepareDataDir } from './data-dir.js';
import { ServerSecrets, loadServerSecret } from './crypto/secrets.js';
import { openDatabase, type Database } from './db/database.js';
import { canRewriteAuditLog } from './db/roles.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics/index.js';
import { createRateLimits, type RateLimits } from './ratelimit/index.js';
import { setPasswordHashConcurrency } from './services/auth/passwords.js';
import type { MailTransport } from './services/notifications/delivery.js';
import type { JobScheduleSource } from './services/notifications/schedules.js';
import type { TokenSigner } from './services/context.js';
import { openLicenseCache, type LicenseCache } from './services/licenses/license-cache.js';
import { refreshingTokenSigner } from './services/signing/signing-keys.js';

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
  /** What validate reads, kept in memory (LICENSE_CACHE); absent: off, every validate reads the database. */
  licenseCache?: LicenseCache;
  /** Prometheus metrics, when METRICS_TOKEN or METRICS_PORT is set (docs/operate/observability.md); absent, nothing is counted. */
  metrics?: Metrics;
}

/** The dependencies opened by openDeps, and how to close them again. */
export interface OpenDeps {
  deps: AppDeps;
  close(): Promise<void>;
}

/** Opens what the server, the worker and the CLI need, in order: secret → database → signing key → limits. */
export async function openDeps(config: Config, logger: Logger, clock: () => Date = () => new Date()): Promise<OpenDeps> {
  prepareDataDir(config, (tightened) => logger.warn({ dataDir: config.dataDir, paths: tightened }, dataDirWarning(config.dataDir, tightened)));
  const { secret, source } = loadServerSecret(config.serverSecret, config.dataDir);
  if (source === 'generated') logger.info({ dataDir: config.dataDir }, 'generated a new server secret in DATA_DIR (set SERVER_SECRET to share one across hosts)');
  const secrets = new ServerSecrets(secret).useForProcess();
  setPasswordHashConcurrency(config.passwordHashConcurrency);
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.databasePoolSize, poolMode: config.databasePoolMode, logger });
  try {
    if (db.kind === 'postgres' && (await canRewriteAuditLog((sql) => db.sql.query(sql, [])))) {
      logger.warn('DATABASE_URL connects as a role that owns or may rewrite the activity log: run the server as a separate app role (MIGRATION_DATABASE_URL for migrations, see docs/security.md); until then only the signed checkpoints detect tampering');
    }
    const signer = await refreshingTokenSigner({ db, secrets }, clock, config.publicUrl, config.signingKeyRefreshSeconds * 1000, (error) =>
      logger.warn({ err: error.message }, 'signing key refresh failed; keeping the current key'),
    );
    const rateLimits = await createRateLimits(
      {
        publicPerMinute: config.rateLimitPublicPerMinute,
        tenantPerMinute: config.rateLimitTenantPerMinute,
        signInPerIpPerMinute: config.rateLimitSignInPerIpPerMinute,
        signInPerAccountPerMinute: config.rateLimitSignInPerAccountPerMinute,
        licensePerMinute: config.rateLimitLicensePerMinute,
        redisUrl: config.redisUrl,
        redisKeyPrefix: config.redisKeyPrefix,
      },
      logger,
    );
    const licenseCache = await openLicenseCache(config, db, logger);
    return {
      deps: { config, db, secrets, signer, logger, rateLimits, clock, licenseCache: licenseCache?.cache },
      async close() {
        signer.stop();
        await licenseCache?.stop();
        await rateLimits.close();
        await db.close();
      },
    };
  } catch (error) {
    await db.close();
    throw error;
  }
}
