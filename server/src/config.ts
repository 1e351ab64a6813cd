import { availableParallelism } from 'node:os';
import { z } from 'zod';
import proxyaddr from 'proxy-addr';

/** Which peers may set X-Forwarded-For: nobody, the first n hops, or a set of addresses/CIDR ranges. */
export type TrustProxy = false | { hops: number } | { addresses: string[] };

/** `true` means a proxy on this host or a private network (loopback, link-local and private ranges). */
export const TRUSTED_WHEN_TRUE = ['loopback', 'linklocal', 'uniquelocal'];

/** Parses TRUST_PROXY: false | true | a hop count | a comma-separated list of addresses and CIDR ranges. */
export function parseTrustProxy(value: string | undefined): TrustProxy {
  const text = (value ?? '').trim().toLowerCase();
  if (text === '' || text === 'false' || text === 'no' || text === '0') return false;
  if (text === 'true' || text === 'yes') return { addresses: TRUSTED_WHEN_TRUE };
  if (/^\d+$/.test(text)) return { hops: Number(text) };
  const addresses = text.split(',').map((part) => part.trim()).filter(Boolean);
  proxyaddr.compile(addresses); // throws on anything that is not an address, a CIDR range or a known name
  return { addresses };
}

const boolean = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === '' ? undefined : value));

/**
 * The environment the server, the worker and the CLI read. Each variable's `description` (and, where the default is
 * computed rather than a literal, `shownDefault`) is the documentation: docs/scripts/config-reference.ts writes the
 * configuration reference (docs/operate/configuration.md) from this schema, and test/docs-config.test.ts fails when a
 * variable has no description or the page is stale.
 */
export const EnvSchema = z.object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development').meta({ description: '`development`, `production` or `test`. Read by libraries; the server\'s own behaviour does not depend on it.' }),
    PORT: z.coerce.number().int().min(0).max(65535).default(4000).meta({ description: 'HTTP port. Every process on one host needs its own (the systemd unit `keyforge-server@<port>` sets it from the instance name).' }),
    HOST: z.string().min(1).default('0.0.0.0').meta({ description: 'Interface to listen on.' }),
    DATABASE_URL: optionalString.pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
        .optional(),
    ).meta({ description: '`postgres://…` to use PostgreSQL. Unset: the embedded PGlite database in `DATA_DIR/pglite`. The server\'s **app role**: with `MIGRATION_DATABASE_URL` set, `pnpm db:migrate` creates this role and grants it read/write on the tables but only SELECT/INSERT on the activity log (see the [Security model](/security)).' }),
    DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10).meta({ description: 'PostgreSQL connections per process for requests (the job store opens a few more: see [the connection budget](/operate/deployment#connection-poolers-and-the-connection-budget)).' }),
    DATABASE_POOL_MODE: z.enum(['session', 'transaction']).default('session').meta({ description: '`transaction` when `DATABASE_URL` points at a transaction-mode pooler (PgBouncer `pool_mode = transaction`): the hot-path statements are then sent unnamed, and the job store LISTENs only on `DATABASE_DIRECT_URL`, or polls without it. `session`: PostgreSQL itself or a session-mode pooler; the hot-path statements are named prepared statements, parsed and planned once per connection (left at `session` in front of a transaction-mode pooler, the first statement that meets another connection turns naming off for the process, with one warning in the log).' }),
    DATABASE_DIRECT_URL: optionalString.pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
        .optional(),
    ).meta({ description: '`postgres://…` straight to PostgreSQL (bypassing the pooler), used for the job store\'s LISTEN connection, so a job queued by "Run now" starts at once instead of at the next poll (≤ 5 s), and for the license cache\'s change feed (`LICENSE_CACHE`; without it the feed polls through `DATABASE_URL`, a transaction-mode pooler included).' }),
    LICENSE_CACHE: z.enum(['on', 'off']).default('on').meta({ description: '`on`: each process keeps what validate reads about a license (the license, its product, the vendor\'s subscription end) in memory, so a repeated validate of a key costs the database nothing; every change to those rows is recorded by the database itself (triggers write the change log `license_cache_changes`), read by every process\'s change feed (one indexed query every quarter of `LICENSE_CACHE_STALENESS_MS`, at most every 250 ms, on `DATABASE_DIRECT_URL` when set, else on `DATABASE_URL`, a transaction-mode pooler included) and forgotten within `LICENSE_CACHE_STALENESS_MS`; a change written with the triggers disabled, within `LICENSE_CACHE_MAX_AGE_MS` (see [the license cache](/architecture#license-cache)). `off`: every validate reads the database.' }),
    LICENSE_CACHE_STALENESS_MS: z.coerce.number().int().min(100).max(60_000).default(1000).meta({ description: 'The staleness bound of the license cache: a process answers from its cache only while it has proof (a poll of its change feed sent less than this long ago and answered) that it has received every change committed before; otherwise it reads the database. A change to a license is honoured by every process within this time (one written with the triggers disabled: within `LICENSE_CACHE_MAX_AGE_MS`).' }),
    LICENSE_CACHE_MAX_AGE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(60_000).meta({ description: 'The most a license cache entry is served after it was read from the database, whatever was announced: a change no trigger announces (a write with triggers disabled, e.g. `SET session_replication_role = replica` as `pg_restore --disable-triggers` and logical replication apply rows) is honoured by every process within this time. Every other change is honoured within `LICENSE_CACHE_STALENESS_MS`. A key validated again after this time is read from the database once more.' }),
    LICENSE_CACHE_MAX_ENTRIES: z.coerce.number().int().min(1).max(10_000_000).default(1_000_000).meta({ description: 'The most licenses the license cache of one process holds (`LICENSE_CACHE_MAX_MB` usually binds first); the least recently validated go first.' }),
    LICENSE_CACHE_MAX_MB: z.coerce.number().int().min(1).max(65_536).default(128).meta({ description: 'The most memory (estimated, in MiB) the license cache of one process holds; the least recently validated go first. A typical license is estimated at about 1.25 KiB (about 1.1 KiB measured): the default holds about 100,000 licenses within the 384 MiB heap `pnpm start` gives Node. To keep 1,000,000 licenses per process, set 1250 and raise the heap cap (`node --max-old-space-size=1700`).' }),
    DATA_DIR: z.string().min(1).default('./data').meta({ description: 'Embedded database files, the generated server secret and the CLI\'s socket `cli.sock`.' }),
    PUBLIC_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()).meta({ description: 'The service\'s public origin (`{base_url}`); also the `iss` of offline tokens.', shownDefault: '`http://localhost:PORT`' }),
    REDIS_URL: optionalString.pipe(
      z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').optional(),
    ).meta({ description: '`redis://…` (or `rediss://`): rate-limit counters shared by all processes. Unset: counters in memory per process. While Redis is unreachable each process counts alone (see [Redis](/operate/deployment#redis-shared-rate-limits)).' }),
    REDIS_KEY_PREFIX: z.string().max(64).default('kf:').meta({ description: 'Prepended to every Redis key: deployments sharing one Redis (staging and production) need different prefixes, or they share counters.' }),
    RATE_LIMIT_PUBLIC_PER_MINUTE: z.coerce.number().int().min(1).default(600).meta({ description: 'Requests per minute per client IP on `/api/v1/*`.' }),
    RATE_LIMIT_TENANT_PER_MINUTE: z.coerce.number().int().min(1).default(6000).meta({ description: 'Requests per minute per tenant on the licensing endpoints (all its customers together).' }),
    RATE_LIMIT_SIGNIN_PER_IP_PER_MINUTE: z.coerce.number().int().min(1).default(30).meta({ description: 'Sign-in steps (login, refresh, MFA and backup codes) per minute per client IP; 429 + `Retry-After` beyond.' }),
    RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: z.coerce.number().int().min(1).default(10).meta({ description: 'The same steps per minute per account (email, user or refresh token), whatever the IP. A browser that signed in to the account before (the device cookie, see the [Security model](/security)) has this budget of its own instead of the account\'s and its address\'s.' }),
    PASSWORD_HASH_CONCURRENCY: z.coerce.number().int().min(1).max(64).optional().meta({ description: 'argon2 hashes computed at once; further sign-ins wait, so they cannot starve the licensing API.', shownDefault: 'half the cores (≥ 1)' }),
    RATE_LIMIT_LICENSE_PER_MINUTE: z.coerce.number().int().min(1).default(1200).meta({ description: 'Requests per minute per license on the licensing endpoints; keep it below the tenant limit so one customer\'s key cannot exhaust its vendor\'s budget. Checked before the tenant limit (a refused call does not count against the tenant); 429 with `Retry-After`.' }),
    SERVER_SECRET: optionalString.pipe(
      z.string().min(32, 'must be at least 32 characters of high-entropy text').optional(),
    ).meta({ description: '≥ 32 characters. Derives the key-digest pepper, the activity log\'s chain key and the key that encrypts signing keys at rest. Unset: generated once into `DATA_DIR/server-secret` (mode 0600). **Every process sharing a database must use the same secret**: set it explicitly when running several hosts, and back it up — without it no stored key can be matched ([Backup and restore](/operate/backup)).', shownDefault: 'generated' }),
    TRUST_PROXY: z
      .string()
      .optional()
      .transform((value, ctx) => {
        try {
          return parseTrustProxy(value);
        } catch {
          ctx.addIssue({ code: 'custom', message: 'must be false, true, a hop count, or a comma-separated list of addresses/CIDR ranges' });
          return z.NEVER;
        }
      }).meta({ description: 'Whose `X-Forwarded-For` to believe. `false`: the socket peer is the client. `true`: proxies on loopback or private networks (10/8, 172.16/12, 192.168/16, fc00::/7, link-local). A number *n*: the peer plus *n*−1 further hops. Or a comma-separated list of addresses/CIDR ranges (`10.0.0.0/8, 203.0.113.7`). The header is read from the right and only hops appended by trusted proxies are skipped (see the [Security model](/security)).', shownDefault: '`false`' }),
    CONSOLE_ORIGIN: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()).meta({ description: 'The browser origin allowed to call the management API with credentials (CORS).', shownDefault: 'origin of `PUBLIC_URL`' }),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').meta({ description: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`. Logs are JSON lines (pino); on a terminal the server first prints a startup banner. At `info` a request is logged only when it fails or is slow; `debug` logs every request (see [Observability](/operate/observability)).' }),
    MONGODB_URL: optionalString.pipe(z.string().regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// or mongodb+srv:// URL').optional()).meta({ description: '`mongodb://…/db`: the job scheduler\'s store. Unset: the app\'s PostgreSQL (schema `agenda`), or the embedded database.' }),
    JOBS_WORKER: boolean.default(true).meta({ description: '`false`: this server does not process scheduled jobs (run `pnpm worker` processes instead).' }),
    WEBHOOK_ALLOW_PRIVATE: boolean.default(false).meta({ description: '`true`: webhook endpoints may resolve to loopback, private, link-local or unique-local addresses. Off, such deliveries are refused (the SSRF guard, see [Webhooks](/integrate/webhooks)). Turn it on only when receivers on your internal network are intended (a warning is logged at start while it is on).' }),
    SHUTDOWN_DRAIN_SECONDS: z.coerce.number().min(0).max(300).default(5).meta({ description: 'After `SIGTERM`: `/readyz` answers 503 at once while the listener stays open this long, serving in-flight and new requests, so the load balancer\'s health checks take the process out first. Set it above the balancer\'s time to mark a server down (interval × failures). `SIGINT` (Ctrl-C) skips it.' }),
    SHUTDOWN_TIMEOUT_SECONDS: z.coerce.number().min(1).max(600).default(10).meta({ description: 'After the drain, in-flight requests and running jobs get this long before the process exits anyway (a worker\'s unfinished runs are retried by another once their lock expires).' }),
    SIGNING_KEY_REFRESH_SECONDS: z.coerce.number().int().min(1).max(3600).default(30).meta({ description: 'How often a running process re-reads the active signing key, so `signing-key:rotate` takes effect everywhere without a restart.' }),
    POSTMARK_SERVER_TOKEN: optionalString.meta({ description: 'Postmark server token: emails are sent through Postmark. Unset: the development outbox (emails are stored and listable — console *Emails* page, `pnpm cli outbox:list --body` — and nothing is sent).' }),
    POSTMARK_API_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).default('https://api.postmarkapp.com')).meta({ description: 'Postmark\'s API origin (tests point it at a local peer).' }),
    METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters (a random secret)').optional()).meta({ description: '≥ 16 characters. Turns the Prometheus metrics on and serves them at `GET /metrics` on the server\'s own port, to `Authorization: Bearer <METRICS_TOKEN>` only (401 otherwise). See [Observability](/operate/observability).' }),
    METRICS_PORT: z.preprocess((value) => (value === '' ? undefined : value), z.coerce.number<unknown>().int().min(0).max(65535).optional()).meta({ description: 'Turns the metrics on and serves `GET /metrics` on a listener of its own at `METRICS_HOST:METRICS_PORT` (also asking for the bearer token when `METRICS_TOKEN` is set). The way to scrape `pnpm worker`, which serves no other HTTP.' }),
    METRICS_HOST: z.string().min(1).default('127.0.0.1').meta({ description: 'Interface of the `METRICS_PORT` listener (`0.0.0.0` to let a Prometheus on another host scrape it: firewall it, or set `METRICS_TOKEN`).' }),
    OPERATOR_EMAILS: z
      .string()
      .default('')
      .transform((value) => value.split(',').map((email) => email.trim().toLowerCase()).filter(Boolean))
      .pipe(z.array(z.email('must be a comma-separated list of email addresses'))).meta({ description: 'Comma-separated emails of the accounts that operate the installation as a whole: a signed-in CompanyAdmin listed here (any case; an API key never) also gets the System page\'s **Installation** tab, every company together (see [Observability](/operate/observability)). Empty: nobody in the console; the CLI and `/metrics` still see the installation. List accounts that exist: whoever later gets an account under a listed address (an invitation from any company) becomes an operator, so the server warns at start about listed addresses without an account.', shownDefault: '*(empty)*' }),
    RELEASES_STORE: z.enum(['file', 's3']).default('file').meta({ description: 'Where release artifacts are stored ([Release distribution](/integrate/releases)). `file`: under `DATA_DIR/releases` (one server, or a shared file system), downloads streamed by the server through a signed, expiring link. `s3`: an S3-compatible object store (`RELEASES_S3_*`), downloads as short-lived presigned links to the store.' }),
    RELEASES_MAX_UPLOAD_MB: z.coerce.number().int().min(1).max(1_048_576).default(8192).meta({ description: 'The largest artifact an upload may stream, in MiB (larger uploads are refused with 413 and leave nothing behind).' }),
    RELEASES_DOWNLOAD_LINK_SECONDS: z.coerce.number().int().min(10).max(86_400).default(300).meta({ description: 'How long a download link (`GET /api/v1/artifacts/{id}/download`) stays valid, in seconds. A download that started keeps going past it.' }),
    RELEASES_S3_BUCKET: optionalString.meta({ description: 'With `RELEASES_STORE=s3`: the bucket holding artifacts.' }),
    RELEASES_S3_ENDPOINT: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()).meta({ description: 'With `RELEASES_STORE=s3`: the store\'s endpoint for S3-compatible servers (MinIO, R2); unset: AWS S3. Credentials come from the AWS SDK\'s usual environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, profiles, instance roles).' }),
    RELEASES_S3_REGION: optionalString.meta({ description: 'With `RELEASES_STORE=s3`: the bucket\'s region (`auto` for R2).', shownDefault: '`us-east-1`' }),
    RELEASES_S3_FORCE_PATH_STYLE: boolean.default(false).meta({ description: 'With `RELEASES_STORE=s3`: `true` addresses the bucket in the path (`endpoint/bucket/key`), as MinIO usually needs.' }),
    MAIL_FROM: optionalString.pipe(z.string().regex(/^([^<>]*<)?[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+>?$/, 'must be an email address, optionally as "Name <address>"').optional()).meta({ description: 'Sender, `address` or `Name <address>`; required with `POSTMARK_SERVER_TOKEN` (a sender signature confirmed in Postmark).', shownDefault: '`Keyforge <no-reply@localhost>`' }),
});

/** Each variable with its description and its default (what an unset variable parses to), as the reference lists them. */
export function describeEnvironment(): { name: string; default: unknown; shownDefault?: string; description?: string }[] {
  return Object.entries(EnvSchema.shape).map(([name, schema]) => {
    const meta = (z.globalRegistry.get(schema) ?? {}) as { description?: string; shownDefault?: string };
    const unset = schema.safeParse(undefined);
    return { name, default: unset.success ? unset.data : undefined, shownDefault: meta.shownDefault, description: meta.description };
  });
}

const ConfigSchema = EnvSchema
  .refine((env) => env.RELEASES_STORE !== 's3' || env.RELEASES_S3_BUCKET, { message: 'is required when RELEASES_STORE is s3', path: ['RELEASES_S3_BUCKET'] })
  .refine((env) => !env.POSTMARK_SERVER_TOKEN || env.MAIL_FROM, { message: 'is required when POSTMARK_SERVER_TOKEN is set (a sender confirmed in Postmark)', path: ['MAIL_FROM'] })
  .transform((env) => ({
    nodeEnv: env.NODE_ENV,
    port: env.PORT,
    host: env.HOST,
    databaseUrl: env.DATABASE_URL,
    databasePoolSize: env.DATABASE_POOL_SIZE,
    /** `transaction`: DATABASE_URL is a transaction-mode pooler (PgBouncer), where a session cannot LISTEN. */
    databasePoolMode: env.DATABASE_POOL_MODE,
    /** A connection straight to PostgreSQL for the job store's LISTEN (docs/operate/deployment.md "Connection poolers and the connection budget"). */
    databaseDirectUrl: env.DATABASE_DIRECT_URL,
    dataDir: env.DATA_DIR,
    /** The license cache of validate (services/licenses/license-cache.ts); null: off. */
    licenseCache: env.LICENSE_CACHE === 'on' ? { stalenessMs: env.LICENSE_CACHE_STALENESS_MS, maxAgeMs: env.LICENSE_CACHE_MAX_AGE_MS, maxEntries: env.LICENSE_CACHE_MAX_ENTRIES, maxBytes: env.LICENSE_CACHE_MAX_MB * 1024 * 1024 } : null,
    publicUrl: (env.PUBLIC_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, ''),
    redisUrl: env.REDIS_URL,
    /** Prepended to Redis keys: deployments (staging, production) sharing one Redis keep their counters apart. */
    redisKeyPrefix: env.REDIS_KEY_PREFIX,
    rateLimitPublicPerMinute: env.RATE_LIMIT_PUBLIC_PER_MINUTE,
    rateLimitTenantPerMinute: env.RATE_LIMIT_TENANT_PER_MINUTE,
    rateLimitSignInPerIpPerMinute: env.RATE_LIMIT_SIGNIN_PER_IP_PER_MINUTE,
    rateLimitSignInPerAccountPerMinute: env.RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE,
    /** Password hashes (argon2) computed at once; the rest wait, so sign-ins cannot starve the licensing API. */
    passwordHashConcurrency: env.PASSWORD_HASH_CONCURRENCY ?? Math.max(1, Math.floor(availableParallelism() / 2)),
    rateLimitLicensePerMinute: env.RATE_LIMIT_LICENSE_PER_MINUTE,
    serverSecret: env.SERVER_SECRET,
    /** Whose X-Forwarded-For is believed (see http/middleware/client-ip.ts). */
    trustProxy: env.TRUST_PROXY,
    /** Browser origin allowed to call the management API with credentials (CORS). */
    consoleOrigin: new URL(env.CONSOLE_ORIGIN ?? env.PUBLIC_URL ?? `http://localhost:${env.PORT}`).origin,
    logLevel: env.LOG_LEVEL,
    /** Job store: MongoDB when set, else the app's PostgreSQL (or the embedded database). */
    mongodbUrl: env.MONGODB_URL,
    /** Process scheduled jobs in this server (false: run `pnpm worker` processes instead). */
    jobsWorker: env.JOBS_WORKER,
    /** Let webhook endpoints resolve to loopback/private/link-local addresses (off: the SSRF guard refuses them). */
    webhookAllowPrivate: env.WEBHOOK_ALLOW_PRIVATE,
    /** After SIGTERM: /readyz answers 503 while the listener stays open this long (the balancer's health checks notice). */
    shutdownDrainSeconds: env.SHUTDOWN_DRAIN_SECONDS,
    /** After the drain: how long in-flight requests and running jobs get before the process exits anyway. */
    shutdownTimeoutSeconds: env.SHUTDOWN_TIMEOUT_SECONDS,
    /** How often a running process re-reads the active signing key (a rotation is picked up within this). */
    signingKeyRefreshSeconds: env.SIGNING_KEY_REFRESH_SECONDS,
    postmarkServerToken: env.POSTMARK_SERVER_TOKEN,
    postmarkApiUrl: env.POSTMARK_API_URL.replace(/\/+$/, ''),
    mailFrom: env.MAIL_FROM ?? 'Keyforge <no-reply@localhost>',
    /** Release distribution (services/releases): the artifact store and its limits. */
    releases: {
      store: env.RELEASES_STORE,
      maxUploadBytes: env.RELEASES_MAX_UPLOAD_MB * 1024 * 1024,
      downloadLinkSeconds: env.RELEASES_DOWNLOAD_LINK_SECONDS,
      s3: { bucket: env.RELEASES_S3_BUCKET, endpoint: env.RELEASES_S3_ENDPOINT, region: env.RELEASES_S3_REGION ?? 'us-east-1', forcePathStyle: env.RELEASES_S3_FORCE_PATH_STYLE },
    },
    /** Accounts (signed-in CompanyAdmins) that see the installation as a whole on the System page (docs/operate/observability.md). */
    operatorEmails: env.OPERATOR_EMAILS,
    /** Metrics are collected and served only when one of these is set (docs/operate/observability.md). */
    metrics: env.METRICS_TOKEN || env.METRICS_PORT !== undefined ? { token: env.METRICS_TOKEN, port: env.METRICS_PORT, host: env.METRICS_HOST } : null,
  }));

export type Config = z.output<typeof ConfigSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment once. A bad value throws a ConfigError naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = ConfigSchema.safeParse(env);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`),
    );
  }
  return result.data;
}
