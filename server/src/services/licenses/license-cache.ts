import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';
import type { Database } from '../../db/database.js';
import { listenUrl, pgNotificationListener, pgliteNotificationListener, type NotificationHandler, type NotificationListener } from '../../db/notification-listener.js';
import type { Logger } from '../../logger.js';
import type { LicenseLookupCache, LicenseRecord } from './license-record.js';

/** The channel the database announces changes on (migration license_cache_notify). */
export const LICENSE_CACHE_CHANNEL = 'license_cache';

export interface LicenseCacheOptions {
  /** The staleness bound: entries are served only within this long of the last proof that nothing was missed. */
  stalenessMs: number;
  /**
   * The most an entry is served after the read that filled it began (on the requests' clock): the bound for a change
   * no notification announces (a write with triggers disabled: `session_replication_role = replica`, as
   * `pg_restore --disable-triggers` and logical replication apply rows).
   */
  maxAgeMs: number;
  maxEntries: number;
  maxBytes: number;
}

/** Counters for the metrics (read at scrape time). */
export interface LicenseCacheStats {
  hits: number;
  misses: number;
  /** Entries forgotten because the database announced a change (one per entry; a flush counts what it held). */
  invalidations: number;
  /** Entries read again because they reached LICENSE_CACHE_MAX_AGE_MS (counted among the misses too). */
  expirations: number;
  /** Lookups that went to the database because the cache could not prove itself current. */
  bypassed: number;
  /** Seconds spent unable to serve from the cache since the process started (connection lost, proof too old). */
  bypassSeconds: number;
  entries: number;
  bytes: number;
}

// Estimated bytes of one entry besides its strings: the object, its slots, the LRU's bookkeeping and the key.
const ENTRY_OVERHEAD_BYTES = 640;

/** A cached license and when (ms, the requests' clock) the read that filled it began. */
interface Entry {
  record: LicenseRecord;
  filledAt: number;
}

function estimateBytes(digest: string, record: LicenseRecord): number {
  let bytes = ENTRY_OVERHEAD_BYTES + digest.length * 2;
  for (const value of Object.values(record)) {
    if (typeof value === 'string') bytes += value.length * 2;
    else if (Array.isArray(value)) for (const item of value) bytes += 40 + String(item).length * 2;
    else if (value && typeof value === 'object' && !(value instanceof Date)) bytes += JSON.stringify(value).length * 2 + 100;
  }
  return bytes;
}

function freeze(record: LicenseRecord): LicenseRecord {
  Object.freeze(record.features);
  if (record.bundleProducts) Object.freeze(record.bundleProducts);
  if (record.customFields) Object.freeze(record.customFields);
  return Object.freeze(record);
}

/**
 * What validate reads about a license, by key digest, kept in memory and kept coherent with the database.
 *
 * - Every change to a row validate reads is announced by the database from the changing transaction
 *   (`NOTIFY license_cache`, triggers of migration license_cache_notify): `notify` forgets what it names.
 * - An entry is served only while `validUntil` is ahead: the last round trip on the listening session that came back
 *   was sent less than `stalenessMs` ago, so every change committed more than `stalenessMs` ago has been forgotten.
 *   Otherwise (session lost, process paused, event loop stalled) lookups read the database.
 * - The session lost: everything is forgotten (a notification may have been missed) and nothing is served until a
 *   new session LISTENs and a round trip on it came back (`confirmed`).
 * - A read that fills the cache may race a change: the change commits after the read's snapshot, its notification
 *   arrives before the read's answer, and finds nothing to forget. Each fill therefore takes `generation` before its
 *   read and stores the answer only if nothing that names its license (the license, its company, everything) was
 *   announced meanwhile, and the session did not change: `forgottenAt` keeps, per license and per company, the
 *   generation of the last announcement while reads are out. A change that committed after the snapshot but is
 *   announced after the fill forgets the entry when it arrives.
 * - Every entry is served for at most `maxAgeMs` after the read that filled it began, whatever was announced: a change
 *   that no trigger announced (triggers disabled, `session_replication_role = replica`) is honoured within that bound.
 *   The age is read on the clock of the request (its `now`), so the check costs no statement and no clock read.
 */
export class LicenseCache implements NotificationHandler, LicenseLookupCache {
  private readonly entries: LRUCache<string, Entry>;
  /** Digest of the cached entry of each license id (a license has one current digest). */
  private readonly digestOfLicense = new Map<string, string>();
  private generation = 0;
  /** The generation of the last announcement naming each license (`l…`) or company (`t…`), while reads are out. */
  private readonly forgottenAt = new Map<string, number>();
  /** The generation of the last flush or session change: no read that began before it may fill. */
  private flushedAt = 0;
  private readsOut = 0;
  private listeningNow = false;
  private validUntil = Number.NEGATIVE_INFINITY;
  private bypassStartedAt: number | undefined = performance.now();
  private bypassMs = 0;
  private readonly counts = { hits: 0, misses: 0, invalidations: 0, expirations: 0, bypassed: 0 };

  constructor(private readonly options: LicenseCacheOptions) {
    this.entries = new LRUCache<string, Entry>({
      max: options.maxEntries,
      maxSize: options.maxBytes,
      sizeCalculation: (entry, digest) => estimateBytes(digest, entry.record),
      dispose: (entry, digest) => {
        if (this.digestOfLicense.get(entry.record.id) === digest) this.digestOfLicense.delete(entry.record.id);
      },
    });
  }

  /** True while an entry may be served: listening, with a proof younger than the bound. */
  private current(): boolean {
    const now = performance.now();
    const ok = this.listeningNow && now < this.validUntil;
    if (ok && this.bypassStartedAt !== undefined) {
      this.bypassMs += now - this.bypassStartedAt;
      this.bypassStartedAt = undefined;
    } else if (!ok && this.bypassStartedAt === undefined) {
      this.bypassStartedAt = now;
    }
    return ok;
  }

  /**
   * The license of a (current) key digest: from memory when the cache is current and holds it, filled less than
   * `maxAgeMs` before `nowMs` (the request's clock), else from `load`, whose found answer is kept for the next call.
   * Only what `load` returns is cached; a null is not.
   */
  async read(digest: string, load: () => Promise<LicenseRecord | null>, nowMs: number): Promise<LicenseRecord | null> {
    if (!this.current()) {
      this.counts.bypassed++;
      return load();
    }
    const hit = this.entries.get(digest);
    if (hit) {
      const age = nowMs - hit.filledAt;
      // A negative age (the clock set back) is as unknown as an old one: read again.
      if (age >= 0 && age < this.options.maxAgeMs) {
        this.counts.hits++;
        return hit.record;
      }
      this.entries.delete(digest);
      this.counts.expirations++;
    }
    this.counts.misses++;
    const generation = this.generation;
    this.readsOut++;
    try {
      const record = await load();
      if (record && this.untouchedSince(generation, record) && this.current()) {
        const previous = this.digestOfLicense.get(record.id);
        if (previous !== undefined && previous !== digest) this.entries.delete(previous);
        this.entries.set(digest, { record: freeze(record), filledAt: nowMs });
        if (this.entries.has(digest)) this.digestOfLicense.set(record.id, digest);
      }
      return record;
    } finally {
      // Nothing reads the announcements once no read is out: forget them (bounded by the reads in flight otherwise).
      if (--this.readsOut === 0) this.forgottenAt.clear();
    }
  }

  /** True when nothing announced since `generation` names the license (a change that may postdate the read). */
  private untouchedSince(generation: number, record: LicenseRecord): boolean {
    return this.flushedAt <= generation && (this.forgottenAt.get(`l${record.id}`) ?? 0) <= generation && (this.forgottenAt.get(`t${record.tenantId}`) ?? 0) <= generation;
  }

  /** A notification: `l<license id>`, `t<tenant id>` or `*`, comma-separated (migration license_cache_notify). */
  notify(payload: string): void {
    this.generation++;
    for (const token of payload.split(',')) {
      if (token === '*' || token === '') {
        this.flush();
        return;
      }
      const id = token.slice(1);
      if (this.readsOut > 0) {
        this.forgottenAt.set(token, this.generation);
        // Bounded: past this many announcements during reads, treat them as one flush (conservative).
        if (this.forgottenAt.size > 100_000) {
          this.flush();
          return;
        }
      }
      if (token[0] === 'l') {
        const digest = this.digestOfLicense.get(id);
        if (digest !== undefined && this.entries.delete(digest)) this.counts.invalidations++;
      } else if (token[0] === 't') {
        const digests = [...this.entries.entries()].filter(([, entry]) => entry.record.tenantId === id).map(([digest]) => digest);
        for (const digest of digests) if (this.entries.delete(digest)) this.counts.invalidations++;
      } else {
        // An unknown token (a newer migration's?) is a change we cannot place: forget everything.
        this.flush();
        return;
      }
    }
  }

  listening(): void {
    this.flush();
    this.listeningNow = true;
    this.validUntil = Number.NEGATIVE_INFINITY;
  }

  lost(): void {
    this.listeningNow = false;
    this.validUntil = Number.NEGATIVE_INFINITY;
    this.flush();
    this.current();
  }

  confirmed(sentAt: number): void {
    if (!this.listeningNow) return;
    this.validUntil = Math.max(this.validUntil, sentAt + this.options.stalenessMs);
  }

  private flush() {
    this.generation++;
    this.flushedAt = this.generation;
    this.forgottenAt.clear();
    this.counts.invalidations += this.entries.size;
    this.entries.clear();
    this.digestOfLicense.clear();
  }

  stats(): LicenseCacheStats {
    this.current();
    const bypassMs = this.bypassMs + (this.bypassStartedAt === undefined ? 0 : performance.now() - this.bypassStartedAt);
    return { ...this.counts, bypassSeconds: bypassMs / 1000, entries: this.entries.size, bytes: this.entries.calculatedSize };
  }
}

/** The cache of one process and its notification session. */
export interface OpenLicenseCache {
  cache: LicenseCache;
  stop(): Promise<void>;
}

/**
 * The license cache, on when configured and the database can notify this process: PostgreSQL through a session of
 * its own (DATABASE_DIRECT_URL, or DATABASE_URL unless it is a transaction-mode pooler), or the embedded database.
 * Null otherwise (logged once: every validate then reads the database).
 */
export async function openLicenseCache(
  config: { licenseCache: LicenseCacheOptions | null; databaseUrl?: string; databaseDirectUrl?: string; databasePoolMode: 'session' | 'transaction' },
  db: Database,
  logger: Logger,
): Promise<OpenLicenseCache | null> {
  if (!config.licenseCache) return null;
  const cache = new LicenseCache(config.licenseCache);
  let listener: NotificationListener;
  if (db.kind === 'pglite' && db.pglite) {
    listener = pgliteNotificationListener(db.pglite, LICENSE_CACHE_CHANNEL, cache);
  } else {
    const url = listenUrl(config);
    if (!url) {
      logger.warn('LICENSE_CACHE is on, but DATABASE_URL is a transaction-mode pooler and DATABASE_DIRECT_URL is unset: the license cache stays off (set DATABASE_DIRECT_URL to turn it on)');
      return null;
    }
    const stalenessMs = config.licenseCache.stalenessMs;
    listener = pgNotificationListener(url, LICENSE_CACHE_CHANNEL, cache, logger, { heartbeatMs: Math.max(25, Math.floor(stalenessMs / 4)), deadMs: stalenessMs * 2 });
  }
  await listener.start();
  return { cache, stop: () => listener.stop() };
}
