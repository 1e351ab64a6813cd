import { ApiError, NetworkError, VerificationError, isTransient } from './errors.js';
import { anySignal, sleep } from './util.js';

/** How calls are retried on 429, 502, 503, 504 and network failures (never on a definite answer). */
export interface RetryOptions {
  /** Attempts in all, the first included (default 4; 1 turns retries off). */
  attempts?: number;
  /** Backoff base: the n-th retry waits between ½ and 1 × `baseDelayMs · 2ⁿ⁻¹`, capped by `maxDelayMs` (default 500). */
  baseDelayMs?: number;
  /** Upper bound of one backoff wait without `Retry-After` (default 8000). */
  maxDelayMs?: number;
  /**
   * The longest `Retry-After` (seconds) the SDK waits for (default 30). A longer one is not waited for: the
   * {@link ApiError} is thrown at once, carrying `retryAfterSeconds`.
   */
  maxRetryAfterSeconds?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = { attempts: 4, baseDelayMs: 500, maxDelayMs: 8000, maxRetryAfterSeconds: 30 };

export interface Answer {
  status: number;
  headers: Headers;
  json: Record<string, unknown>;
}

export interface RequestInitLite {
  body?: unknown;
  bearer?: string;
  /** A license key sent as `Authorization: License <key>` (the release routes: keys never go in URLs). */
  license?: string;
  signal?: AbortSignal;
}

/** Seconds from a `Retry-After` header: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - nowMs) / 1000));
}

/** One HTTP round trip at a time (`once`), and the retry loop around a unit of work (`retrying`). */
export class Transport {
  constructor(
    private readonly baseUrl: string,
    private readonly fetchImpl: typeof fetch,
    private readonly timeoutMs: number,
    private readonly retry: Required<RetryOptions>,
    private readonly clock: () => number,
  ) {}

  /** One request: the answer's JSON when 2xx, else an {@link ApiError}; no answer → {@link NetworkError}. */
  async once(method: 'GET' | 'POST', path: string, init: RequestInitLite = {}): Promise<Answer> {
    init.signal?.throwIfAborted();
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), this.timeoutMs);
    const signal = anySignal([init.signal, timeout.signal]);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    if (init.bearer !== undefined) headers.authorization = `Bearer ${init.bearer}`;
    if (init.license !== undefined) headers.authorization = `License ${init.license}`;
    try {
      let response: Response;
      let text: string;
      try {
        // redirect 'manual': fetch re-sends the body (the license key) on 307/308 to wherever a redirect points; a
        // redirect answers as the HTTP error it is (give baseUrl the server's final address).
        response = await this.fetchImpl(this.baseUrl + path, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body), signal, redirect: 'manual' });
        text = await response.text();
      } catch (error) {
        if (init.signal?.aborted) throw init.signal.reason;
        if (timeout.signal.aborted) throw new NetworkError('Timeout', `${method} ${path}: no answer within ${this.timeoutMs} ms.`, { cause: error });
        throw new NetworkError('NetworkError', `${method} ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      const requestId = response.headers.get('x-request-id');
      if (!response.ok) {
        const error = (json as { error?: { code?: unknown; message?: unknown; fields?: unknown } } | undefined)?.error;
        return this.fail(response, {
          code: typeof error?.code === 'string' ? error.code : statusCode(response.status),
          message: typeof error?.message === 'string' ? error.message : `${method} ${path}: HTTP ${response.status}.`,
          requestId,
          fields: error?.fields && typeof error.fields === 'object' ? (error.fields as Record<string, string>) : null,
        });
      }
      if (json === null || typeof json !== 'object' || Array.isArray(json)) {
        return this.fail(response, { code: 'InvalidResponse', message: `${method} ${path}: the answer is not the API's JSON (HTTP ${response.status}).`, requestId });
      }
      return { status: response.status, headers: response.headers, json: json as Record<string, unknown> };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Fetches the bytes at an absolute `url` (a download link the server answered): no credentials are sent (the link
   * carries its own short-lived authorisation), redirects are not followed (the link is fetched as answered; a 3xx is
   * an error), and the body is read as it streams, refused as soon as it exceeds `maxBytes`. `timeoutMs` bounds the
   * wait for each chunk (an idle timeout, so a large file on a slow line is not cut short). Errors map as for API
   * calls: no answer NetworkError/Timeout, an HTTP error its status code (429/5xx transient, so retried).
   * Each chunk is handed to `write` and the next is read only once it has settled (so a slow disk holds the reading
   * back, and nothing piles up in memory); what `write` throws ends the download as it is, not as a network failure.
   */
  async download(url: string, maxBytes: number, write: (chunk: Uint8Array) => void | Promise<void>, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const idle = new AbortController();
    let timer = setTimeout(() => idle.abort(), this.timeoutMs);
    const combined = anySignal([signal, idle.signal]);
    const what = 'GET (download link)';
    const failed = (error: unknown): never => {
      if (signal?.aborted) throw signal.reason;
      if (idle.signal.aborted) throw new NetworkError('Timeout', `${what}: no data within ${this.timeoutMs} ms.`, { cause: error });
      throw new NetworkError('NetworkError', `${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    };
    try {
      let response: Response;
      try {
        response = await this.fetchImpl(url, { method: 'GET', headers: { accept: '*/*' }, signal: combined, redirect: 'manual' });
      } catch (error) {
        return failed(error);
      }
      const requestId = response.headers.get('x-request-id');
      if (response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400)) {
        await response.body?.cancel().catch(() => undefined);
        return this.fail(response, { code: 'InvalidResponse', message: `${what}: answered a redirect (HTTP ${response.status}), which is not followed.`, requestId });
      }
      if (!response.ok) {
        let code = statusCode(response.status);
        let message = `${what}: HTTP ${response.status}.`;
        try {
          const error = (JSON.parse(await response.text()) as { error?: { code?: unknown; message?: unknown } }).error;
          if (typeof error?.code === 'string') code = error.code;
          if (typeof error?.message === 'string') message = error.message;
        } catch {
          // Not the API's JSON (an object store's XML error): the status says enough.
        }
        return this.fail(response, { code, message, requestId });
      }
      const declared = Number(response.headers.get('content-length'));
      if (Number.isFinite(declared) && declared > maxBytes) {
        await response.body?.cancel().catch(() => undefined);
        throw new VerificationError('ArtifactIntegrity', `${what}: the file is ${declared} bytes, more than the ${maxBytes} signed.`);
      }
      let length = 0;
      const reader = response.body?.getReader();
      if (reader) {
        for (;;) {
          let chunk: ReadableStreamReadResult<Uint8Array>;
          try {
            chunk = await reader.read();
          } catch (error) {
            return failed(error);
          }
          if (chunk.done) break;
          clearTimeout(timer);
          if (length + chunk.value.length > maxBytes) {
            await reader.cancel().catch(() => undefined);
            throw new VerificationError('ArtifactIntegrity', `${what}: the file is longer than the ${maxBytes} bytes signed.`);
          }
          length += chunk.value.length;
          try {
            await write(chunk.value);
          } catch (error) {
            await reader.cancel().catch(() => undefined);
            throw error;
          }
          // The idle timeout is the wait for data: time spent writing does not count.
          timer = setTimeout(() => idle.abort(), this.timeoutMs);
        }
      }
    } finally {
      clearTimeout(timer);
    }
  }

  private fail(response: Response, init: { code: string; message: string; requestId: string | null; fields?: Record<string, string> | null }): never {
    throw new ApiError({ ...init, status: response.status, retryAfterSeconds: parseRetryAfter(response.headers.get('retry-after'), this.clock()) });
  }

  /**
   * Runs `attempt` until it succeeds, a definite answer comes, the attempts are used up or `signal` aborts.
   * Transient failures wait `Retry-After` when sent (giving up at once when it is longer than allowed),
   * else an exponential backoff with jitter. `onTransient` sees each failure that will be retried.
   */
  async retrying<T>(attempt: (n: number) => Promise<T>, signal?: AbortSignal, onTransient?: (error: unknown) => void): Promise<T> {
    for (let n = 1; ; n += 1) {
      signal?.throwIfAborted();
      try {
        return await attempt(n);
      } catch (error) {
        if (signal?.aborted || !isTransient(error) || n >= this.retry.attempts) throw error;
        const delay = this.delayBefore(n, error);
        if (delay === null) throw error;
        onTransient?.(error);
        await sleep(delay, signal);
      }
    }
  }

  /** The wait before retry `n` (after `n` failed attempts), or null to give up now. */
  delayBefore(n: number, error: unknown): number | null {
    const retryAfter = error instanceof ApiError ? error.retryAfterSeconds : null;
    if (retryAfter !== null) {
      if (retryAfter > this.retry.maxRetryAfterSeconds) return null;
      // At least what the server asked for, spread a little so a crowd of clients does not return in step.
      return retryAfter * 1000 + Math.random() * Math.min(this.retry.baseDelayMs, 1000);
    }
    return backoff(n, this.retry.baseDelayMs, this.retry.maxDelayMs);
  }
}

/** "Equal jitter" exponential backoff: between half and all of `base · 2ⁿ⁻¹`, capped. */
export function backoff(n: number, baseMs: number, maxMs: number): number {
  const cap = Math.min(maxMs, baseMs * 2 ** (n - 1));
  return cap / 2 + Math.random() * (cap / 2);
}

function statusCode(status: number): string {
  if (status === 429) return 'RateLimited';
  if (status === 502 || status === 503 || status === 504) return 'ServiceUnavailable';
  if (status >= 500) return 'InternalError';
  return 'InvalidRequest';
}
