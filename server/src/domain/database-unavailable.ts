// "The database is unreachable or too slow right now, a retry may succeed" — decided by what the error is (its
// SQLSTATE, Node's socket error code, Prisma's error code and the driver adapter's error kind), never by its words.

/** SQLSTATEs of an outage: class 08 (connection exception) is matched by prefix. */
const OUTAGE_SQLSTATES = new Set([
  '57P01', // admin_shutdown: the server is stopping, or the backend was terminated
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up, shutting down, in recovery
  '53300', // too_many_connections (the server's or the role's limit)
  // read_only_sql_transaction: the server reached is a standby, or a primary being demoted during a failover (Keyforge
  // never opens a read-only transaction itself); the pooler's next connection reaches the new primary.
  '25006',
]);
/** Node's socket errors: connecting failed or the connection broke. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/**
 * Prisma's codes that always mean the database could not be reached or answered in time: P1001 cannot reach, P1002
 * timed out, P1008 operation timed out, P1017 server closed the connection, P2024 no pooled connection in time,
 * P2028 the interactive transaction could not start or ran out of time. P2010 ("raw query failed") and the others
 * carry the driver's error: they count only when that is an outage.
 */
const OUTAGE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028']);
/** The Prisma driver adapter's error kinds for a lost or refused connection (@prisma/driver-adapter-utils). */
const OUTAGE_ADAPTER_KINDS = new Set(['ConnectionClosed', 'DatabaseNotReachable', 'SocketTimeout', 'TooManyConnections']);

/**
 * pg reports a connection that ended or broke under a query with a plain Error without a code ("Connection
 * terminated unexpectedly", "… not queryable"). The client that saw its connection go marks those errors here
 * (db/pg-client.ts), so they are recognised by what happened to the connection.
 */
const connectionLosses = new WeakSet<object>();

export function markConnectionLost(error: unknown): void {
  if (error && typeof error === 'object') connectionLosses.add(error);
}

function isOutageCode(code: string): boolean {
  return code.startsWith('08') || OUTAGE_SQLSTATES.has(code) || SOCKET_CODES.has(code) || OUTAGE_PRISMA_CODES.has(code);
}

/**
 * A connection-level failure (database stopped, restarting, failing over, network cut, out of connections), as
 * opposed to a query error (a bug or bad data: a 500). The Prisma driver adapter wraps pg errors (`meta.
 * driverAdapterError.cause` holds the kind and the original SQLSTATE), so the chain of causes is walked.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 5) return false;
  if (connectionLosses.has(error)) return true;
  const e = error as { code?: unknown; originalCode?: unknown; kind?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown }; errors?: unknown };
  for (const code of [e.code, e.originalCode]) if (typeof code === 'string' && isOutageCode(code)) return true;
  if (typeof e.kind === 'string' && OUTAGE_ADAPTER_KINDS.has(e.kind)) return true;
  const inner = [e.meta?.driverAdapterError, e.cause, ...(Array.isArray(e.errors) ? e.errors : [])];
  return inner.some((next) => isDatabaseUnavailable(next, depth + 1));
}
