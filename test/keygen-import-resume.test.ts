import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { buildKeygenAccount, writeKeygenDirectory, type FixtureAccount } from './support/keygen-fixture.js';
import { runCli } from './support/processes.js';
import { waitUntil } from './support/wait.js';
import { verifyAuditChain } from '../server/src/services/audit/audit-log.js';

// `pnpm cli import:keygen` killed (SIGKILL) in the middle of its licenses (docs/guide/migrating.md "Run it again"):
// what committed is whole (each license with all its activations, its mapping row and its activity entry; the
// activity log's chain intact), and the same command run again finishes the job without doubling anything. The
// account is large enough (3,000 licenses, written in batches) for the kill to land part-way.

const dir = mkdtempSync(path.join(tmpdir(), 'kf-keygen-resume-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const LICENSES = 3000;
const MACHINES = 5000; // at most the seats of each license: the fixture places what fits

describe('import:keygen after a crash', () => {
  let t: TestApp;
  let env: Record<string, string>;
  let killedAccount: FixtureAccount;
  const killedPages = path.join(dir, 'killed');
  beforeAll(async () => {
    const clock = TestClock.startingNow();
    t = await startTestApp({ clock });
    env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir };
    await t.seedTenant({ name: 'Killed', keyPrefix: 'KILL' });
    killedAccount = buildKeygenAccount({ now: clock.now(), seed: 3, licenses: LICENSES, machines: MACHINES });
    writeKeygenDirectory(killedAccount, killedPages);
  });
  afterAll(() => t.close());
  const tenantLicenses = (prefix: string) => t.prisma.license.count({ where: { tenant: { keyPrefix: prefix } } });

  it('a run killed (SIGKILL) part-way is finished by the next: no license twice, none without its machines', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'server/src/cli.ts'), 'import:keygen', '--tenant', 'KILL', '--dir', killedPages, '--json'], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    await waitUntil(async () => (await tenantLicenses('KILL')) > 0, { timeout: 120_000, interval: 20 });
    child.kill('SIGKILL');
    await exited;
    const partial = await tenantLicenses('KILL');
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(LICENSES);
    const tenantId = (await t.prisma.tenant.findFirstOrThrow({ where: { keyPrefix: 'KILL' } })).id;
    // Whatever committed is whole: each license has exactly its machines and its mapping row.
    const licenses = await t.prisma.license.findMany({ where: { tenantId }, include: { _count: { select: { activations: true } } } });
    const byMapping = new Map((await t.prisma.keygenImportMapping.findMany({ where: { tenantId, kind: 'license' } })).map((row) => [row.keyforgeId, row.keygenId]));
    for (const license of licenses) {
      const want = killedAccount.expected.find((item) => item.licenseId === byMapping.get(license.id))!;
      expect(license._count.activations).toBe(want.machines.length);
    }
    expect(byMapping.size).toBe(partial);
    expect(await t.prisma.keygenImportMapping.count({ where: { tenantId, kind: 'machine' } })).toBe(await t.prisma.activation.count({ where: { tenantId } }));
    expect(await t.prisma.auditLogEntry.count({ where: { tenantId, action: 'CreateLicense' } })).toBe(partial);
    const rerun = runCli(['import:keygen', '--tenant', 'KILL', '--dir', killedPages, '--json'], env);
    expect(rerun.status, rerun.stderr).toBe(0);
    expect(rerun.json.report.licenses).toMatchObject({ created: LICENSES - partial, unchanged: partial });
    expect(await tenantLicenses('KILL')).toBe(LICENSES);
    expect(await t.prisma.activation.count({ where: { tenantId } })).toBe(killedAccount.lists.machines.length);
    expect(await t.prisma.keygenImportMapping.count({ where: { tenantId, kind: 'license' } })).toBe(LICENSES);
    expect(await t.prisma.auditLogEntry.count({ where: { tenantId, action: 'CreateLicense' } })).toBe(LICENSES);
    expect(await verifyAuditChain(t.prisma, tenantId, t.deps.secrets.auditChainKey)).toMatchObject({ valid: true, brokenAtSeq: null });
    expect(await t.prisma.product.count({ where: { tenantId } })).toBe(3);
    expect(await t.prisma.plan.count({ where: { tenantId } })).toBe(6);
  }, 600_000);
});
