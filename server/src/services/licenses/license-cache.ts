import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';
import type { Database } from '../../db/database.js';
import type { Logger } from '../../logger.js';
import { DEFAULT_FEED_TIMING, pgLicenseChangeFeed, pgliteLicenseChangeFeed, type ChangeFeed, type ChangeFeedHandler } from './license-change-feed.js';
import type { LicenseLookupCache, LicenseRecord } from './license-record.js';

/** The channel the embedded database announces changes on (migration license_cache_change_log). */
export const LICENSE_CACHE_CHANNEL = 'license_cache';

export interface LicenseCacheOptions {
  /** The staleness bound: entries are served only within this long of the last proof that nothing was missed. */
  stalenessMs: number;
  /**
   * The most an entry is served after the read that filled it began (on the requests' clock): the bound for a change
   * no trigger records (a write with triggers disabled: `session_replication_role = replica`, as
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
  /** Entries forgotten because the database recorded a change (one per entry; a flush counts what it held). */
  invalidations: number;
  /** Times the cache emptied itself because its change feed failed or restarted (error, timeout, lost connection, another server). */
  resyncs: number;
  /** Entries read again because they reached LICENSE_CACHE_MAX_AGE_MS (counted among the misses too). */
  expirations: number;
  /** Lookups that went to the database because the cache could not prove itself current. */
  bypassed: number;
  /** Seconds spent unable to serve from the cache since the process started (feed down, proof too old). */
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
 * - Every change to a row validate reads is recorded by the database in the changing transaction (triggers of
 *   migration license_cache_change_log, a row of the change log) and delivered by the change feed
 *   (license-change-feed.ts): `notify` forgets what it names.
 * - An entry is served only while `validUntil` is ahead: the last poll of the feed that came back was sent less than
 *   `stalenessMs` ago, so every change committed more than `stalenessMs` ago has been forgotten. Otherwise (feed
 *   down, process paused, event loop stalled) lookups read the database.
 * - The feed failed or restarted: everything is forgotten (a change may have been missed) and nothing is served until
 *   the feed started again from a fresh snapshot and a poll came back (`confirmed`).
 * - A read that fills the cache may race a change: the change commits after the read's snapshot, the feed delivers
 *   it before the read's answer, and it finds nothing to forget. Each fill therefore takes `generation` before its
 *   read and stores the answer only if nothing that names its license (the license, its company, everything) was
 *   announced meanwhile, and the session did not change: `forgottenAt` keeps, per license and per company, the
 *   generation of the last announcement while reads are out. A change that committed after the snapshot but is
 *   announced after the fill forgets the entry when it arrives.
 * - Every entry is served for at most `maxAgeMs` after the read that filled it began, whatever was announced: a change
 *   that no trigger announced (triggers disabled, `session_replication_role = replica`) is honoured within that bound.
 *   The age is read on the clock of the request (its `now`), so the check costs no statement and no clock read.
 */
export class LicenseCache implements ChangeFeedHandler, LicenseLookupCache {
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
  private readonly counts = { hits: 0, misses: 0, invalidations: 0, resyncs: 0, expirations: 0, bypassed: 0 };

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

  /** A change: `l<license id>`, `t<tenant id>` or `*`, comma-separated (migration license_cache_change_log). */
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
    if (this.listeningNow) this.counts.resyncs++;
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

/** The cache of one process and its change feed. */
export interface OpenLicenseCache {
  cache: LicenseCache;
  stop(): Promise<void>;
}

/**
 * The license cache, on when configured: on PostgreSQL with a change feed polling the log every quarter of the
 * staleness bound (at most every 250 ms) on a connection of its own to DATABASE_DIRECT_URL when set, else to
 * DATABASE_URL — a transaction-mode pooler included (each poll is one statement); on the embedded database, in
 * process. Null when off.
 */
export async function openLicenseCache(
  config: { licenseCache: LicenseCacheOptions | null; databaseUrl?: string; databaseDirectUrl?: string },
  db: Database,
  logger: Logger,
): Promise<OpenLicenseCache | null> {
  if (!config.licenseCache) return null;
  const cache = new LicenseCache(config.licenseCache);
  let feed: ChangeFeed;
  if (db.kind === 'pglite' && db.pglite) {
    feed = pgliteLicenseChangeFeed(db.pglite, LICENSE_CACHE_CHANNEL, cache);
  } else {
    const url = config.databaseDirectUrl ?? config.databaseUrl;
    if (!url) return null;
    const stalenessMs = config.licenseCache.stalenessMs;
    feed = pgLicenseChangeFeed(url, cache, logger, { ...DEFAULT_FEED_TIMING, pollMs: Math.min(250, Math.max(25, Math.floor(stalenessMs / 4))), deadMs: stalenessMs * 2 });
  }
  await feed.start();
  return { cache, stop: () => feed.stop() };
}
