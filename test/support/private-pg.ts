import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './processes.js';

/**
 * A PostgreSQL cluster of its own (initdb + pg_ctl as user postgres, as .ci/run does) on a random free
 * port, so a test can stop and start the database under a running server without touching the shared one.
 */
export interface PrivatePg {
  url: string;
  port: number;
  start(): void;
  /** `pg_ctl -m immediate stop`: the database vanishes as in a crash. */
  stopImmediate(): void;
  destroy(): void;
}

function pgBin(): string {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = `/usr/lib/postgresql/${version}/bin`;
    if (readdirSync(bin).includes('initdb')) return bin;
  }
  throw new Error('initdb not found under /usr/lib/postgresql (install the postgresql package)');
}

const asPostgres = (command: string) => execFileSync('su', ['postgres', '-c', command], { stdio: 'pipe', timeout: 60_000 });

export async function startPrivatePg(): Promise<PrivatePg> {
  const bin = pgBin();
  const dir = mkdtempSync(path.join(tmpdir(), 'kf-pg-'));
  chmodSync(dir, 0o777);
  const port = await freePort();
  asPostgres(`${bin}/initdb -D ${dir}/data -U postgres --auth=trust >/dev/null`);
  const start = () => asPostgres(`${bin}/pg_ctl -D ${dir}/data -o '-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off' -l ${dir}/log -w start >/dev/null`);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stopImmediate: () => asPostgres(`${bin}/pg_ctl -D ${dir}/data -m immediate -w stop >/dev/null`),
    destroy: () => {
      try {
        asPostgres(`${bin}/pg_ctl -D ${dir}/data -m immediate -w stop >/dev/null 2>&1 || true`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
