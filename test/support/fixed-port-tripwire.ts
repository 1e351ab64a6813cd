import net from 'node:net';

/**
 * A listener on a well-known port (PostgreSQL's 5432) for runs whose database is elsewhere: a test that connects to
 * the fixed port instead of the run's database (test/support/pg.ts › adminUrl) reaches this, is cut off at once, and
 * the run fails at its end naming the port. Without it such a test passes on any machine that happens to run
 * PostgreSQL on the default port, and fails only on a fresh one.
 */
export interface Tripwire {
  port: number;
  /** Connections that reached the port so far. */
  hits(): number;
  close(): Promise<void>;
}

/** Listens on host:port; undefined when the port is taken (then something real answers there and nothing is proven). */
export async function armTripwire(port: number, host = '127.0.0.1'): Promise<Tripwire | undefined> {
  let hits = 0;
  const server = net.createServer((socket) => {
    hits += 1;
    socket.on('error', () => {});
    socket.destroy();
  });
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, host, () => resolve(true));
  });
  if (!listening) return undefined;
  server.unref();
  return {
    port: (server.address() as net.AddressInfo).port,
    hits: () => hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function tripwireVerdict(tripwire: Tripwire): string | undefined {
  const hits = tripwire.hits();
  if (!hits) return undefined;
  return `${hits} connection(s) reached 127.0.0.1:${tripwire.port}, which is not this run's database: a test or a process it started uses a fixed port instead of TEST_DATABASE_URL (test/support/pg.ts › adminUrl)`;
}
