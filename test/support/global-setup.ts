import type { TestProject } from 'vitest/node';
import { applyMigrations } from '../../server/src/db/migrate.js';
import { grantAppRole } from '../../server/src/db/roles.js';
import { armTripwire, tripwireVerdict } from './fixed-port-tripwire.js';
import { answers } from './optional.js';
import { startCluster, sweepAbandonedClusters, type PgCluster } from './pg-cluster.js';
import { appRoleUrl, createDatabase, DEFAULT_ADMIN_URL, dropDatabase, redactUrl, uniqueName } from './pg.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string;
    /** The port a tripwire listens on (5432) when the run's database is elsewhere; 0 when none could be armed. */
    fixedPortTripwire: number;
  }
}

/**
 * The PostgreSQL server of this run (docs/development.md › "What `pnpm test` needs"): TEST_DATABASE_URL when set,
 * else the one on 127.0.0.1:5432 when something answers there, else a cluster started for this run alone (on a free
 * port, stopped at the end). KEYFORGE_TEST_PG=provision starts one whatever answers. Its URL reaches every test
 * file, and every process they start, as TEST_DATABASE_URL.
 */
async function chooseServer(): Promise<{ url: string; cluster?: PgCluster }> {
  const mode = process.env.KEYFORGE_TEST_PG || 'auto';
  if (mode !== 'auto' && mode !== 'provision') throw new Error(`KEYFORGE_TEST_PG=${mode}: expected auto or provision`);
  if (mode === 'auto') {
    if (process.env.TEST_DATABASE_URL) return { url: process.env.TEST_DATABASE_URL };
    if (await answers('127.0.0.1', 5432)) return { url: DEFAULT_ADMIN_URL };
  }
  const swept = await sweepAbandonedClusters();
  if (swept.length) console.log(`[tests] removed ${swept.length} cluster(s) left by runs that were killed`);
  const started = Date.now();
  const cluster = await startCluster();
  const why = mode === 'provision' ? 'KEYFORGE_TEST_PG=provision' : 'TEST_DATABASE_URL is unset and nothing answers on 127.0.0.1:5432';
  console.log(`[tests] ${why}: started ${cluster.binaries.label} on 127.0.0.1:${cluster.port} in ${Date.now() - started} ms (stopped when the run ends)`);
  return { url: cluster.url, cluster };
}

/** Chooses the server, migrates one template database (as the owner) and grants the app role; every test file clones it (CREATE DATABASE … TEMPLATE). */
export default async function setup(project: TestProject) {
  const { url: adminUrl, cluster } = await chooseServer();
  process.env.TEST_DATABASE_URL = adminUrl;
  if (!cluster) console.log(`[tests] PostgreSQL: ${redactUrl(adminUrl)}`);
  const name = uniqueName('kf_template');
  try {
    const url = await createDatabase(name);
    await applyMigrations({ kind: 'pg', url });
    // The two-role setup of production: the app connects as APP_ROLE (append-only audit log); clones keep the grants.
    await grantAppRole(url, appRoleUrl(url));
  } catch (error) {
    cluster?.destroy();
    throw error;
  }
  project.provide('templateDatabase', name);
  // When the run's database is not on 5432, a listener there catches any test that dials the default port instead.
  const chosen = new URL(adminUrl);
  const tripwire = chosen.port && chosen.port !== '5432' ? await armTripwire(5432) : undefined;
  project.provide('fixedPortTripwire', tripwire?.port ?? 0);
  if (tripwire) console.log(`[tests] a tripwire listens on 127.0.0.1:${tripwire.port}: a test that connects there instead of the run's database fails the run`);
  return async () => {
    try {
      if (!cluster) await dropDatabase(name);
    } finally {
      cluster?.destroy();
      await tripwire?.close();
    }
    const verdict = tripwire && tripwireVerdict(tripwire);
    if (verdict) {
      // vitest reports an error thrown here but still exits 0 when every test passed: set the exit code as well.
      process.exitCode = 1;
      throw new Error(verdict);
    }
  };
}
