import pg from 'pg';
import { markConnectionLost } from '../domain/database-unavailable.js';

// Loose on purpose: pg's typings overload these callbacks; the wrappers only pass them through.
type Callback = (error: any, ...rest: any[]) => void;

/**
 * pg's client, marking the errors of a connection that ended or broke (domain/database-unavailable.ts): pg reports
 * them as plain Errors without a code when the socket closes under a query, or when a query is sent on a client
 * whose connection already broke. An error with a SQLSTATE keeps being classified by it. Used by every pool and
 * client of the server (`new pg.Pool({ Client: OutageAwareClient })`).
 */
export class OutageAwareClient extends pg.Client {
  private connectionGone = false;

  constructor(config?: string | pg.ClientConfig) {
    super(config);
    // pg emits 'error' (the socket broke, or the server closed it) before it fails the pending queries (next tick).
    this.on('error', () => {
      this.connectionGone = true;
    });
    this.on('end', () => {
      this.connectionGone = true;
    });
  }

  private mark = <E>(error: E): E => {
    const codeless = typeof (error as { code?: unknown } | null)?.code !== 'string';
    if (codeless && this.connectionGone) markConnectionLost(error);
    return error;
  };

  // A failed connection attempt without a SQLSTATE (closed during the handshake, a timeout) is a lost connection too.
  override connect(callback?: any): any {
    const markAll = <E>(error: E): E => {
      this.connectionGone = true;
      return this.mark(error);
    };
    if (callback) return super.connect(((error: Error, ...rest: unknown[]) => (callback as Callback)(error ? markAll(error) : error, ...rest)) as Callback);
    return super.connect().catch((error: unknown) => {
      throw markAll(error);
    });
  }

  // Both forms pg offers: a callback (what pg-pool's pool.query passes) or a promise (what Prisma's adapter awaits).
  override query(...args: any[]): any {
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      const callback = args[last] as Callback;
      args[last] = (error: Error | null, ...rest: unknown[]) => callback(error ? this.mark(error) : error, ...rest);
      return (super.query as (...a: unknown[]) => unknown)(...args);
    }
    const result = (super.query as (...a: unknown[]) => unknown)(...args);
    if (result instanceof Promise)
      return result.catch((error: unknown) => {
        throw this.mark(error);
      });
    return result;
  }
}
