import type { Config } from './config.js';
import { ServerSecrets, loadServerSecret } from './crypto/secrets.js';
import { openDatabase } from './db/database.js';
import { canRewriteAuditLog } from './db/roles.js';
import type { AppDeps } from './deps.js';
import { createRateLimits } from './ratelimit/index.js';
import type { Logger } from './logger.js';
import { setPasswordHashConcurrency } from './services/auth/passwords.js';
import { refreshingTokenSigner } from './services/signing/signing-keys.js';

export interface Runtime {
  deps: AppDeps;
  close(): Promise<void>;
}

/** Opens everything the server (and the CLI) needs, in order: secret → database → signing key → limits. */
export async function createRuntime(config: Config, logger: Logger, clock: () => Date = () => new Date()): Promise<Runtime> {
  const { secret, source } = loadServerSecret(config.serverSecret, config.dataDir);
  if (source === 'generated') logger.info({ dataDir: config.dataDir }, 'generated a new server secret in DATA_DIR (set SERVER_SECRET to share one across hosts)');
  const secrets = new ServerSecrets(secret).useForProcess();
  setPasswordHashConcurrency(config.passwordHashConcurrency);
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.databasePoolSize, logger });
  try {
    if (db.kind === 'postgres' && (await canRewriteAuditLog((sql) => db.sql.query(sql, [])))) {
      logger.warn('DATABASE_URL connects as a role that owns or may rewrite the activity log: run the server as a separate app role (MIGRATION_DATABASE_URL for migrations, see README "Security"); until then only the signed checkpoints detect tampering');
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
    return {
      deps: { config, db, secrets, signer, logger, rateLimits, clock },
      async close() {
        signer.stop();
        await rateLimits.close();
        await db.close();
      },
    };
  } catch (error) {
    await db.close();
    throw error;
  }
}
