// `pnpm bench:import`: a Keygen account of IMPORT_LICENSES licenses (default 10,000) with IMPORT_MACHINES machines
// (default 20,000), built from Keygen's documented shapes (test/support/keygen-fixture.ts), served on loopback as
// Keygen pages it (100 a page, links.next), read through the importer's API source and imported into one company
// of a fresh database, as `pnpm cli import:keygen --url` does; then imported again (nothing to change). Reports the
// seconds of each step and the heap after a full GC. Env: BENCH_DATABASE_URL (admin URL), IMPORT_DB (default
// keyforge_bench_import, dropped and created anew). Writes bench/results/import-latest.{json,md}.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../server/src/config.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { createLogger } from '../server/src/logger.js';
import { openDeps } from '../server/src/deps.js';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { importKeygenAccount } from '../server/src/services/keygen-import/import.js';
import { readApi } from '../server/src/services/keygen-import/source.js';
import { buildKeygenAccount, serveKeygenAccount } from '../test/support/keygen-fixture.js';
import { sql } from './sql.js';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DB = process.env.IMPORT_DB ?? 'keyforge_bench_import';
const LICENSES = Number(process.env.IMPORT_LICENSES ?? 10_000);
const MACHINES = Number(process.env.IMPORT_MACHINES ?? 20_000);
const TENANT = '00000000-0000-4000-8000-00000000f001';

const heapMiB = () => {
  global.gc?.();
  return +(process.memoryUsage().heapUsed / 2 ** 20).toFixed(1);
};
const seconds = (since: number) => +((Date.now() - since) / 1000).toFixed(1);

async function main() {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${DB}`;
  await sql(ADMIN_URL, `DROP DATABASE IF EXISTS "${DB}" WITH (FORCE)`);
  await sql(ADMIN_URL, `CREATE DATABASE "${DB}"`);
  await applyMigrations({ kind: 'pg', url: url.toString() });
  await sql(url.toString(), `INSERT INTO tenants (id, name, key_prefix, created_at, updated_at) VALUES ('${TENANT}', 'Import Co', 'IMPO', now(), now())`);

  const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-bench-import-'));
  const config = loadConfig({ NODE_ENV: 'production', DATABASE_URL: url.toString(), DATA_DIR: dataDir, PUBLIC_URL: 'http://127.0.0.1', SERVER_SECRET: 'bench-import-secret-0123456789abcdef0123456789', LOG_LEVEL: 'warn' });
  const runtime = await openDeps(config, createLogger('warn'));
  const ctx = () => ({ db: runtime.deps.db, secrets: runtime.deps.secrets, now: new Date(), actor: systemActor(TENANT, 'system (bench)'), meta: NO_META });

  const account = buildKeygenAccount({ licenses: LICENSES, machines: MACHINES, seed: 42 });
  const token = 'bench-admin-token';
  const server = await serveKeygenAccount(account, token);
  const baseline = heapMiB();
  try {
    const t0 = Date.now();
    const read = await readApi({ url: server.url, token });
    const readSeconds = seconds(t0);
    const heapAfterRead = heapMiB();
    const t1 = Date.now();
    const report = await importKeygenAccount(ctx(), read, {
      onProgress: ({ phase, done, total }) => done > 0 && done % 1000 === 0 && console.log(`${phase}: ${done} of ${total} (${seconds(t1)} s)`),
    });
    const importSeconds = seconds(t1);
    if (report.licenses.created !== LICENSES || report.activations.created !== account.lists.machines.length || report.problemCount) {
      throw new Error(`imported ${JSON.stringify({ licenses: report.licenses, activations: report.activations, problems: report.problems.slice(0, 5) })}`);
    }
    const t2 = Date.now();
    const again = await importKeygenAccount(ctx(), await readApi({ url: server.url, token }));
    const rerunSeconds = seconds(t2);
    if (again.licenses.created || again.licenses.changed) throw new Error(`the re-run changed something: ${JSON.stringify(again.licenses)}`);
    const result = {
      at: new Date().toISOString(),
      licenses: LICENSES,
      machines: account.lists.machines.length,
      pages: read.pages,
      readSeconds,
      importSeconds,
      totalSeconds: +(readSeconds + importSeconds).toFixed(1),
      licensesPerSecond: Math.round(LICENSES / importSeconds),
      rerunSeconds,
      heapMiB: { baseline, afterRead: heapAfterRead, afterImport: heapMiB() },
    };
    mkdirSync('bench/results', { recursive: true });
    writeFileSync('bench/results/import-latest.json', `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(
      'bench/results/import-latest.md',
      `# Keygen import, ${LICENSES.toLocaleString('en')} licenses and ${result.machines.toLocaleString('en')} machines (${result.at})\n\n` +
        `| step | seconds |\n|---|---|\n| read ${result.pages} pages over HTTP | ${readSeconds} |\n| import (${result.licensesPerSecond} licenses/s) | ${importSeconds} |\n| **total** | **${result.totalSeconds}** |\n| re-run, nothing to change (read included) | ${rerunSeconds} |\n\n` +
        `Heap after a full GC: ${baseline} MiB before, ${heapAfterRead} MiB with the account read, ${result.heapMiB.afterImport} MiB after.\n`,
    );
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await server.close();
    await runtime.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
