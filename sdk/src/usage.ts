import { KeyforgeError } from './errors.js';
import type { TokenStore } from './stores.js';
import type { MeterResult } from './types.js';

/** A usage record waiting in the store to be sent (never with the license key: the store's name is a digest of it). */
export interface QueuedUsage {
  event: string;
  quantity: number;
  /** When the usage happened (ISO 8601, the server's clock as the client estimates it): what the server records. */
  timestamp: string;
  /** Sent with every attempt: the server counts the record once however often it arrives. */
  idempotencyKey: string;
}

/** What sending the queue of a license did (`flushUsage`, and after each online check of a watcher). */
export interface UsageFlush {
  /** Answers for the records sent, in queue order (`replayed: true` when the server already had one). */
  sent: MeterResult[];
  /**
   * Records the server refused for good (a rejection such as `QuotaExceeded` or `LicenseRevoked`, or an
   * `InvalidRequest` such as a timestamp older than the server accepts): removed from the queue, with why.
   */
  dropped: { record: QueuedUsage; error: KeyforgeError }[];
  /** Records still queued (the server could not be reached for the next one). */
  remaining: number;
  /** Why the flush stopped before the end of the queue (no answer, a server error); null when it got through. */
  stoppedBy: unknown;
}

/** The most records a license's queue holds: a meter call beyond it is refused (`UsageQueueFull`). */
export const MAX_QUEUED_USAGE = 1000;

interface QueueRecord {
  v: 1;
  records: QueuedUsage[];
}

const isQueued = (value: unknown): value is QueuedUsage => {
  const record = value as Partial<QueuedUsage> | null;
  return (
    typeof record === 'object' &&
    record !== null &&
    typeof record.event === 'string' &&
    typeof record.quantity === 'number' &&
    typeof record.timestamp === 'string' &&
    typeof record.idempotencyKey === 'string'
  );
};

/**
 * The per-license queues of usage recorded while the server could not be reached, kept in the client's store
 * (`usage:<digest>`). Changes of one queue are serialized within the process; as with the tokens, one process
 * uses a store at a time.
 */
export class UsageQueue {
  readonly #store: TokenStore;
  readonly #locks = new Map<string, Promise<unknown>>();

  constructor(store: TokenStore) {
    this.#store = store;
  }

  async list(name: string): Promise<QueuedUsage[]> {
    await this.#locks.get(name)?.catch(() => undefined);
    return this.#read(name);
  }

  /** Appends a record (in order); refuses beyond {@link MAX_QUEUED_USAGE}. An idempotency key already queued is not added twice. */
  append(name: string, record: QueuedUsage): Promise<void> {
    return this.#update(name, (records) => {
      if (records.some((queued) => queued.idempotencyKey === record.idempotencyKey)) return records;
      if (records.length >= MAX_QUEUED_USAGE) {
        throw new KeyforgeError('UsageQueueFull', `${MAX_QUEUED_USAGE} usage records are already waiting for this license: send them (flushUsage) before recording more offline.`);
      }
      return [...records, record];
    });
  }

  /** Removes the record with this idempotency key (after a definite answer). */
  remove(name: string, idempotencyKey: string): Promise<void> {
    return this.#update(name, (records) => records.filter((record) => record.idempotencyKey !== idempotencyKey));
  }

  /** Runs `work` alone on this queue (a flush: one sender at a time, so records go in order and once). */
  exclusive<T>(name: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#locks.get(`send:${name}`) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(work);
    this.#locks.set(`send:${name}`, run);
    void run.catch(() => undefined).finally(() => {
      if (this.#locks.get(`send:${name}`) === run) this.#locks.delete(`send:${name}`);
    });
    return run;
  }

  async #read(name: string): Promise<QueuedUsage[]> {
    const raw = await this.#store.get(name);
    if (!raw) return [];
    try {
      const parsed = JSON.parse(raw) as Partial<QueueRecord>;
      return Array.isArray(parsed?.records) ? parsed.records.filter(isQueued) : [];
    } catch {
      return []; // not JSON (edited or corrupted): nothing usable is queued
    }
  }

  #update(name: string, change: (records: QueuedUsage[]) => QueuedUsage[]): Promise<void> {
    const previous = this.#locks.get(name) ?? Promise.resolve();
    const run = previous
      .catch(() => undefined)
      .then(async () => {
        const records = await this.#read(name);
        const next = change(records);
        if (next === records) return;
        if (next.length) await this.#store.set(name, JSON.stringify({ v: 1, records: next } satisfies QueueRecord));
        else await this.#store.delete(name);
      });
    this.#locks.set(name, run);
    void run.catch(() => undefined).finally(() => {
      if (this.#locks.get(name) === run) this.#locks.delete(name);
    });
    return run;
  }
}
