// Prisma codes and driver codes meaning "the database is unreachable or too slow right now": a retry may succeed.
const UNAVAILABLE_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03']);
const UNAVAILABLE_MESSAGE = /Connection terminated|connection (is )?(closed|ended)|Client has encountered a connection error|terminating connection|ECONNREFUSED|ECONNRESET|the database system is (starting up|shutting down|in recovery)|Can't reach database server|Timed out fetching a new connection/i;

/**
 * A connection-level failure (database stopped, restarting, network cut), as opposed to a query error.
 * pg's "Connection terminated unexpectedly" carries no SQLSTATE; the Prisma driver adapter wraps pg errors
 * (their code or `cause` holds the original), so the chain of causes is walked.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth++) {
    const e = current as { code?: unknown; message?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown }; errors?: unknown[] };
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (code && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
    if (typeof e.message === 'string' && UNAVAILABLE_MESSAGE.test(e.message)) return true;
    if (Array.isArray(e.errors) && e.errors.some((inner) => isDatabaseUnavailable(inner))) return true;
    current = e.cause ?? e.meta?.driverAdapterError;
  }
  return false;
}
