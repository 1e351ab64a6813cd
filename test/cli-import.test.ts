import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { postJson, runCli, startServerProcess, type ServerProcess } from './support/processes.js';

// `pnpm cli license:import` (docs/integrate/management-api.md "Importing licenses from CSV"): the dry run's errors and exit code, the import
// with its keys written once to --out, a re-run creating nothing; and through a running embedded server.

const dir = mkdtempSync(path.join(tmpdir(), 'kf-cli-import-'));
const file = (name: string, text: string) => {
  const at = path.join(dir, name);
  writeFileSync(at, text);
  return at;
};
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('license:import on PostgreSQL', () => {
  let t: TestApp;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await startTestApp({ clock: TestClock.startingNow() });
    env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir };
    const tenant = await t.seedTenant({ name: 'Importers', keyPrefix: 'IMPT' });
    await t.seedProduct(tenant.id, 'Migrated App');
  });
  afterAll(() => t.close());

  it('--dry-run lists every error (exit 1); the import writes the generated keys to --out once; a re-run creates nothing', async () => {
    const bad = file('bad.csv', 'product,customer_email,seats\nMigrated App,a@imp.test,2\nMigrated App,nope,0\nOther App,,1\n');
    const dry = runCli(['license:import', bad, '--tenant', 'IMPT', '--dry-run', '--json'], env);
    expect(dry.status, dry.stderr).toBe(1);
    expect(dry.json.report).toMatchObject({ rows: 3, valid: 1, errorCount: 3 });
    expect(dry.json.report.errors.map((error: { line: number; column: string }) => [error.line, error.column])).toEqual([[3, 'customer_email'], [3, 'seats'], [4, 'product']]);
    // Without --dry-run a file with errors is not imported either.
    expect(runCli(['license:import', bad, '--tenant', 'IMPT', '--json'], env).status).toBe(1);
    expect(await t.prisma.license.count({ where: { product: { name: 'Migrated App' } } })).toBe(0);

    const good = file('good.csv', 'product,key,customer_email,seats,notes\nMigrated App,,a@imp.test,2,first\nMigrated App,IMPT-2345-6789-ABCD-EFGH,b@imp.test,1,\n');
    // An --out that exists is refused before anything is imported (the keys are taken once, into a new 0600 file).
    const existing = file('existing.csv', 'not mine\n');
    const refused = runCli(['license:import', good, '--tenant', 'IMPT', '--out', existing, '--json'], env);
    expect(refused.status).toBe(1);
    expect(refused.json.error.message).toMatch(/exists already/);
    expect(readFileSync(existing, 'utf8')).toBe('not mine\n');
    expect(await t.prisma.license.count({ where: { product: { name: 'Migrated App' } } })).toBe(0);

    const keysFile = path.join(dir, 'keys.csv');
    const imported = runCli(['license:import', good, '--tenant', 'IMPT', '--out', keysFile, '--json'], env);
    expect(imported.status, imported.stderr).toBe(0);
    expect(imported.json).toMatchObject({ job: { total: 2, created: 2, skipped: 0, failed: 0 }, failures: [], keysFile });
    expect(statSync(keysFile).mode & 0o777).toBe(0o600);
    const keys: { line: string; key: string }[] = parse(readFileSync(keysFile, 'utf8'), { columns: true });
    expect(keys.map((row) => row.line)).toEqual(['2']);
    expect((await t.post('/api/v1/validate', { licenseKey: keys[0].key })).json).toMatchObject({ isValid: true, productName: 'Migrated App' });
    expect((await t.post('/api/v1/validate', { licenseKey: 'IMPT-2345-6789-ABCD-EFGH' })).json).toMatchObject({ isValid: true });

    const again = runCli(['license:import', good, '--tenant', 'IMPT', '--json'], env);
    expect(again.json).toMatchObject({ report: { alreadyImported: 2 }, job: { created: 0, skipped: 2 } });
    expect(again.json).not.toHaveProperty('keys');
    expect(await t.prisma.license.count({ where: { product: { name: 'Migrated App' } } })).toBe(2);
  }, 180_000);
});

describe('license:import while the embedded server runs', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-cli-import-embedded-'));
  const env = { DATA_DIR: dataDir, DATABASE_URL: '', SERVER_SECRET: '', LOG_LEVEL: 'info' };
  let server: ServerProcess | undefined;
  afterAll(async () => {
    await server?.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('the server runs the import; the keys come back once, printed', async () => {
    expect(runCli(['tenant:create', '--name', 'Initech', '--prefix', 'INIT', '--json'], env).status).toBe(0);
    expect(runCli(['product:create', '--tenant', 'INIT', '--name', 'TPS Reports', '--json'], env).status).toBe(0);
    server = await startServerProcess(env);
    // An expiry a year from the run (validated below against the server's wall clock).
    const nextYear = new Date(Date.now() + 365 * 86_400_000).toISOString().slice(0, 10);
    const csv = file('embedded.csv', `product,seats,expires_at\nTPS Reports,2,${nextYear}\nTPS Reports,1,\n`);
    const imported = runCli(['license:import', csv, '--tenant', 'INIT', '--json'], env);
    expect(imported.status, imported.stderr).toBe(0);
    expect(imported.stderr).toContain('(through the running server)');
    expect(imported.json.job).toMatchObject({ total: 2, created: 2 });
    expect(imported.json.keys.map((row: { line: number }) => row.line)).toEqual([2, 3]);
    for (const { key } of imported.json.keys) expect((await postJson(`${server.url}/api/v1/validate`, { licenseKey: key })).json).toMatchObject({ isValid: true });
  }, 180_000);
});
