import { startCluster } from './pg-cluster.js';

/**
 * A PostgreSQL cluster of its own on a random free port, so a test can stop and start the database under a running
 * server without touching the shared one. The binaries and the OS user it runs as: pg-cluster.ts.
 */
export interface PrivatePg {
  url: string;
  port: number;
  /** e.g. "PostgreSQL 15.20 (/usr/lib/postgresql/15/bin)" */
  label: string;
  start(): void;
  /** `pg_ctl -m immediate stop`: the database vanishes as in a crash. */
  stopImmediate(): void;
  destroy(): void;
}

export async function startPrivatePg(): Promise<PrivatePg> {
  const cluster = await startCluster();
  return {
    url: cluster.url,
    port: cluster.port,
    label: cluster.binaries.label,
    start: cluster.start,
    stopImmediate: () => cluster.stop('immediate'),
    destroy: cluster.destroy,
  };
}
