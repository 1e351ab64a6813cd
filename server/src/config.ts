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

const ConfigSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    PORT: z.coerce.number().int().min(0).max(65535).default(4000),
    HOST: z.string().min(1).default('0.0.0.0'),
    DATABASE_URL: optionalString.pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
        .optional(),
    ),
    DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
    DATABASE_POOL_MODE: z.enum(['session', 'transaction']).default('session'),
    DATABASE_DIRECT_URL: optionalString.pipe(
      z
        .string()
        .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
        .optional(),
    ),
    DATA_DIR: z.string().min(1).default('./data'),
    PUBLIC_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
    REDIS_URL: optionalString.pipe(
      z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').optional(),
    ),
    REDIS_KEY_PREFIX: z.string().max(64).default('kf:'),
    RATE_LIMIT_PUBLIC_PER_MINUTE: z.coerce.number().int().min(1).default(600),
    RATE_LIMIT_TENANT_PER_MINUTE: z.coerce.number().int().min(1).default(6000),
    RATE_LIMIT_SIGNIN_PER_IP_PER_MINUTE: z.coerce.number().int().min(1).default(30),
    RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: z.coerce.number().int().min(1).default(10),
    PASSWORD_HASH_CONCURRENCY: z.coerce.number().int().min(1).max(64).optional(),
    RATE_LIMIT_LICENSE_PER_MINUTE: z.coerce.number().int().min(1).default(1200),
    SERVER_SECRET: optionalString.pipe(
      z.string().min(32, 'must be at least 32 characters of high-entropy text').optional(),
    ),
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
      }),
    CONSOLE_ORIGIN: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    MONGODB_URL: optionalString.pipe(z.string().regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// or mongodb+srv:// URL').optional()),
    JOBS_WORKER: boolean.default(true),
    WEBHOOK_ALLOW_PRIVATE: boolean.default(false),
    SHUTDOWN_DRAIN_SECONDS: z.coerce.number().min(0).max(300).default(5),
    SHUTDOWN_TIMEOUT_SECONDS: z.coerce.number().min(1).max(600).default(10),
    SIGNING_KEY_REFRESH_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
    POSTMARK_SERVER_TOKEN: optionalString,
    POSTMARK_API_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).default('https://api.postmarkapp.com')),
    METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters (a random secret)').optional()),
    METRICS_PORT: z.preprocess((value) => (value === '' ? undefined : value), z.coerce.number<unknown>().int().min(0).max(65535).optional()),
    METRICS_HOST: z.string().min(1).default('127.0.0.1'),
    OPERATOR_EMAILS: z
      .string()
      .default('')
      .transform((value) => value.split(',').map((email) => email.trim().toLowerCase()).filter(Boolean))
      .pipe(z.array(z.email('must be a comma-separated list of email addresses'))),
    MAIL_FROM: optionalString.pipe(z.string().regex(/^([^<>]*<)?[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+>?$/, 'must be an email address, optionally as "Name <address>"').optional()),
  })
  .refine((env) => !env.POSTMARK_SERVER_TOKEN || env.MAIL_FROM, { message: 'is required when POSTMARK_SERVER_TOKEN is set (a sender confirmed in Postmark)', path: ['MAIL_FROM'] })
  .transform((env) => ({
    nodeEnv: env.NODE_ENV,
    port: env.PORT,
    host: env.HOST,
    databaseUrl: env.DATABASE_URL,
    databasePoolSize: env.DATABASE_POOL_SIZE,
    /** `transaction`: DATABASE_URL is a transaction-mode pooler (PgBouncer), where a session cannot LISTEN. */
    databasePoolMode: env.DATABASE_POOL_MODE,
    /** A connection straight to PostgreSQL for the job store's LISTEN (README "Connection poolers and the connection budget"). */
    databaseDirectUrl: env.DATABASE_DIRECT_URL,
    dataDir: env.DATA_DIR,
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
    /** Accounts (signed-in CompanyAdmins) that see the installation as a whole on the System page (README "Observability"). */
    operatorEmails: env.OPERATOR_EMAILS,
    /** Metrics are collected and served only when one of these is set (README "Observability"). */
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
