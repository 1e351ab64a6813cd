import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppError } from '../domain/errors.js';
import type { Logger } from '../logger.js';

export interface RateLimits {
  /** Per client IP on the public API. */
  perIp(ip: string): Promise<RateLimitState>;
  /** Refuses (RateLimited) when the IP has spent its public budget, without spending any of it. */
  ipHasBudget(ip: string): Promise<void>;
  /** Per tenant, once a request is known to belong to one. */
  perTenant(tenantId: string): Promise<RateLimitState>;
  /**
   * One sign-in step (password, refresh, second factor): counted per client IP and, when known, per account
   * (an email, a user id or a token digest). Throws RateLimited (429 + Retry-After) past either budget.
   */
  signIn(ip: string, account: string | null): Promise<void>;
  /** Per license, below the tenant limit, so one customer's key cannot exhaust its vendor's budget. */
  perLicense(licenseId: string): Promise<RateLimitState>;
  /** Where the counters live now: shared in Redis, or this process's own (no REDIS_URL, or Redis unreachable). */
  counters(): 'redis' | 'redis-unreachable' | 'process';
  /** Redis answers (true) or not (false: counters fall back to this process); null without REDIS_URL. */
  redisReachable(): boolean | null;
  close(): Promise<void>;
}

/** signin_concurrent: more checks of one account's password under way at once than its lockout allows (auth/lockout.ts). */
export type RateLimitName = 'ip' | 'tenant' | 'license' | 'signin_ip' | 'signin_account' | 'signin_concurrent';

export interface RateLimitState {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

export interface RateLimitOptions {
  publicPerMinute: number;
  tenantPerMinute: number;
  /** Sign-in steps per minute per client IP and per account. */
  signInPerIpPerMinute?: number;
  signInPerAccountPerMinute?: number;
  licensePerMinute: number;
  /** Counters in Redis hold across replicas; without it they live in this process. */
  redisUrl?: string;
  /** Prepended to every Redis key, so deployments sharing one Redis keep their counters apart (default `kf:`). */
  redisKeyPrefix?: string;
}

/**
 * Fixed one-minute windows. With Redis, an unreachable Redis falls back to in-memory counters
 * (insuranceLimiter) rather than refusing or waving through all traffic.
 */
export async function createRateLimits(options: RateLimitOptions, logger?: Logger): Promise<RateLimits> {
  const redis = options.redisUrl ? new Redis(options.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true }) : undefined;
  // Logged once per transition: while Redis is away each process counts alone (the limit becomes N × the setting).
  let reachable = true;
  const lost = (reason: string) => {
    if (reachable) logger?.warn({ err: reason }, 'redis unreachable: rate limits are counted per process until it is back');
    reachable = false;
  };
  redis?.on('error', (error: Error) => lost(error.message));
  redis?.on('close', () => lost('connection closed'));
  redis?.on('ready', () => {
    if (!reachable) logger?.info('redis reachable again: rate limits are shared again');
    reachable = true;
  });
  // Commands are not queued while offline, so connect before serving to share counters from the first request.
  await redis?.connect().catch(() => undefined);
  const redisKeyPrefix = options.redisKeyPrefix ?? 'kf:';
  const make = (keyPrefix: string, points: number): RateLimiterAbstract => {
    const memory = new RateLimiterMemory({ keyPrefix, points, duration: 60 });
    return redis ? new RateLimiterRedis({ storeClient: redis, keyPrefix: `${redisKeyPrefix}${keyPrefix}`, points, duration: 60, insuranceLimiter: memory }) : memory;
  };
  const ip = make('ip', options.publicPerMinute);
  const tenant = make('tenant', options.tenantPerMinute);
  const signInIpLimit = options.signInPerIpPerMinute ?? 30;
  const signInAccountLimit = options.signInPerAccountPerMinute ?? 10;
  const signInIp = make('signin-ip', signInIpLimit);
  const signInAccount = make('signin-account', signInAccountLimit);
  const license = make('license', options.licensePerMinute);
  return {
    perIp: (key) => consume(ip, options.publicPerMinute, key, 'ip'),
    async ipHasBudget(key) {
      // Unknown (Redis away, nothing counted yet): the budget is there; the next consume decides.
      const spent = await ip.get(key).catch(() => null);
      if (spent && spent.consumedPoints >= options.publicPerMinute) throw rateLimited(spent, options.publicPerMinute, 'ip');
    },
    perTenant: (key) => consume(tenant, options.tenantPerMinute, key, 'tenant'),
    perLicense: (key) => consume(license, options.licensePerMinute, key, 'license'),
    async signIn(clientIp, account) {
      await consume(signInIp, signInIpLimit, clientIp, 'signin_ip');
      // Accounts are keyed by a digest: no email addresses in Redis.
      if (account) await consume(signInAccount, signInAccountLimit, createHash('sha256').update(account.trim().toLowerCase()).digest('base64url'), 'signin_account');
    },
    counters: () => (!redis ? 'process' : reachable && redis.status === 'ready' ? 'redis' : 'redis-unreachable'),
    redisReachable: () => (redis ? redis.status === 'ready' && reachable : null),
    async close() {
      reachable = false; // a close of our own is no outage to log
      redis?.disconnect();
    },
  };
}

/** `name` says which limit refused (a bounded metric label: docs/operate/observability.md). */
async function consume(limiter: RateLimiterAbstract, limit: number, key: string, name: RateLimitName): Promise<RateLimitState> {
  try {
    const res = await limiter.consume(key);
    return { limit, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) throw rateLimited(rejection, limit, name);
    throw rejection;
  }
}

function rateLimited(res: RateLimiterRes, limit: number, name: RateLimitName): AppError {
  const retryAfterSeconds = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  return new AppError('RateLimited', `Too many requests: retry after ${retryAfterSeconds} seconds.`, { retryAfterSeconds, rateLimit: limit, rateLimitName: name });
}
