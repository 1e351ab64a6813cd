import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyforgeClient, MemoryStore } from '../sdk/src/index.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { buildKeygenAccount, serveKeygenAccount, writeKeygenDirectory, type FixtureAccount } from './support/keygen-fixture.js';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { importKeygenAccount } from '../server/src/services/keygen-import/import.js';
import { readApi, readDirectory } from '../server/src/services/keygen-import/source.js';
import { runCli, runCliAsync } from './support/processes.js';
import { verifyAuditChain } from '../server/src/services/audit/audit-log.js';

// `pnpm cli import:keygen` (docs/guide/migrating.md): a fixture account of Keygen's documented shapes (3 products,
// 6 policies, 300 licenses in every status, 500 machines) imported from saved pages and from a local server that
// pages like Keygen; a dry run writes nothing; a re-run creates nothing and applies what changed on the Keygen side;
// a license moved to another policy moves to its plan; every imported key validates through /api/v1 as it did.

const dir = mkdtempSync(path.join(tmpdir(), 'kf-keygen-import-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('import:keygen', () => {
  let t: TestApp;
  let env: Record<string, string>;
  // One account per company: a key is unique across the installation.
  let account: FixtureAccount;
  let apiAccount: FixtureAccount;
  const pages = path.join(dir, 'pages');
  beforeAll(async () => {
    const clock = TestClock.startingNow();
    t = await startTestApp({ clock });
    env = { DATABASE_URL: t.config.databaseUrl!, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir };
    await t.seedTenant({ name: 'Migrating', keyPrefix: 'MIGR' });
    await t.seedTenant({ name: 'From API', keyPrefix: 'MAPI' });
    account = buildKeygenAccount({ now: clock.now(), seed: 1 });
    apiAccount = buildKeygenAccount({ now: clock.now(), seed: 2 });
    writeKeygenDirectory(account, pages);
  });
  afterAll(() => t.close());

  /** The service the command runs, in this process (a CLI start costs seconds): for the runs after the first. */
  const inProcess = async (prefix: string) => {
    const tenant = await t.prisma.tenant.findFirstOrThrow({ where: { keyPrefix: prefix } });
    return { db: t.deps.db, secrets: t.deps.secrets, now: new Date(), actor: systemActor(tenant.id, 'system (cli)'), meta: NO_META };
  };
  const tenantLicenses = (prefix: string) => t.prisma.license.count({ where: { tenant: { keyPrefix: prefix } } });

  it('a dry run reports and writes nothing; the import creates every object once; a re-run creates nothing; every key validates as it did in Keygen', async () => {
    expect(account.lists.licenses).toHaveLength(300);
    expect(account.lists.machines).toHaveLength(500);
    const dry = runCli(['import:keygen', '--tenant', 'MIGR', '--dir', pages, '--dry-run', '--json'], env);
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.json.report).toMatchObject({
      dryRun: true,
      read: { products: 3, policies: 6, entitlements: 4, licenses: 300, machines: 500 },
      products: { created: 3 },
      plans: { created: 6 },
      features: { created: 4 },
      licenses: { created: 300, skipped: 0 },
      activations: { created: 500, skipped: 0 },
      problemCount: 0,
    });
    expect(await tenantLicenses('MIGR')).toBe(0);
    expect(await t.prisma.product.count({ where: { tenant: { keyPrefix: 'MIGR' } } })).toBe(0);

    const run = runCli(['import:keygen', '--tenant', 'MIGR', '--dir', pages, '--json'], env);
    expect(run.status, run.stderr).toBe(0);
    expect(run.json.report).toMatchObject({ dryRun: false, products: { created: 3 }, plans: { created: 6 }, licenses: { created: 300 }, activations: { created: 500 }, problemCount: 0 });
    // What Keyforge cannot hold is in the report, not dropped: the heartbeat policies, the machines' cores, hostnames.
    const fields = run.json.report.notes.map((note: { type: string; field: string }) => `${note.type}.${note.field}`);
    expect(fields).toEqual(expect.arrayContaining(['policies.requireHeartbeat', 'machines.cores', 'policies.authenticationStrategy']));
    expect(await tenantLicenses('MIGR')).toBe(300);
    expect(await t.prisma.activation.count({ where: { tenant: { keyPrefix: 'MIGR' } } })).toBe(500);
    const plans = await t.prisma.plan.findMany({ where: { tenant: { keyPrefix: 'MIGR' } }, orderBy: { name: 'asc' } });
    expect(plans.map((plan) => [plan.name, plan.maxActivations, plan.nodeLocked, plan.duration])).toEqual([
      ['Floating 1', 5, false, null],
      ['Floating 2', 5, false, null],
      ['Node-locked 1', 1, true, 'P365D'],
      ['Node-locked 2', 1, true, 'P365D'],
      ['Team 1', 6, false, 'P30D'],
      ['Team 2', 6, false, 'P30D'],
    ]);
    const audit = await t.prisma.auditLogEntry.findFirst({ where: { tenant: { keyPrefix: 'MIGR' }, action: 'ImportKeygenAccount' } });
    expect(audit?.details).toMatchObject({ licenses: { created: 300 }, activations: { created: 500 } });

    const again = await importKeygenAccount(await inProcess('MIGR'), await readDirectory(pages));
    expect(again).toMatchObject({
      products: { created: 0, changed: 0, unchanged: 3 },
      plans: { created: 0, changed: 0, unchanged: 6 },
      licenses: { created: 0, changed: 0, unchanged: 300 },
      activations: { created: 0, changed: 0, unchanged: 500 },
    });
    expect(await tenantLicenses('MIGR')).toBe(300);

    // Every key, as customers hold it, validates through the public API with its entitlements, seats and status.
    const errorOf: Record<string, string | null> = { ACTIVE: null, INACTIVE: null, EXPIRING: null, EXPIRED: 'LicenseExpired', SUSPENDED: 'Suspended', BANNED: 'LicenseRevoked' };
    for (const want of account.expected) {
      const { json } = await t.post('/api/v1/validate', { licenseKey: want.key });
      expect({ key: want.key, errorCode: json.errorCode, features: json.features, productName: json.productName, remaining: json.remainingActivations }).toEqual({
        key: want.key,
        errorCode: errorOf[want.status],
        features: want.features,
        productName: want.productName,
        remaining: want.seats - want.machines.length,
      });
    }
    // Through the TypeScript SDK, a sample: a key of each policy activates its first machine again, with the same features and seats.
    for (const policy of account.lists.policies) {
      const want = account.expected.find((item, index) => item.status === 'ACTIVE' && item.machines.length > 0 && (account.lists.licenses[index].relationships.policy as { data: { id: string } }).data.id === policy.id)!;
      const sdk = new KeyforgeClient({ baseUrl: t.baseUrl, issuer: 'http://licensing.test', product: want.productName, store: new MemoryStore(), timeoutMs: 30_000 });
      const activation = await sdk.activate({ licenseKey: want.key, deviceId: want.machines[0] });
      expect({ features: activation.features, remaining: activation.remainingActivations, nodeLocked: activation.nodeLocked }).toEqual({
        features: want.features,
        remaining: want.seats - want.machines.length,
        nodeLocked: want.seats === 1,
      });
    }
    // The SDK's activations above were of known devices: no seat was taken.
    const withMachine = account.expected.find((want) => want.status === 'ACTIVE' && want.machines.length > 0)!;
    const license = await t.prisma.license.findFirst({ where: { tenant: { keyPrefix: 'MIGR' }, activations: { some: { deviceId: withMachine.machines[0] } } } });
    expect(license?.currentActivations).toBe(withMachine.machines.length);
    expect(license?.customerEmail).toBe(withMachine.email);
    expect(license?.customFields).toMatchObject({ orderId: expect.stringMatching(/^ord_/) });
  }, 600_000);

  it('reads the API page by page with the token (from KEYGEN_TOKEN, never printed); a wrong token writes nothing; changes on the Keygen side are applied by a re-run', async () => {
    const token = 'admin-9f86d081884c7d659a2feaa0c55ad015';
    const server = await serveKeygenAccount(apiAccount, token);
    try {
      const refused = await runCliAsync(['import:keygen', '--tenant', 'MAPI', '--url', server.url, '--json'], { ...env, KEYGEN_TOKEN: 'wrong-token' });
      expect(refused.status).toBe(1);
      expect(refused.json.error.message).toMatch(/refused the token \(401\)/);
      expect(await tenantLicenses('MAPI')).toBe(0);

      const run = await runCliAsync(['import:keygen', '--tenant', 'MAPI', '--url', server.url, '--json'], { ...env, KEYGEN_TOKEN: token });
      expect(run.status, run.stderr).toBe(0);
      expect(run.json.report).toMatchObject({ licenses: { created: 300 }, activations: { created: 500 }, read: { pages: 1 + 1 + 1 + 2 + 3 + 5 + 6 } });
      expect(`${run.stdout}${run.stderr}`).not.toContain(token);
      // Every page was followed through links.next with the bearer token; each policy's entitlements were read.
      expect(server.requests.filter((request) => request.authorized).map((request) => request.path)).toContain(`/v1/accounts/${apiAccount.accountId}/policies/${apiAccount.lists.policies[0].id}/entitlements`);

      // On the Keygen side: a license suspended and its seats raised, one machine added, another deleted.
      const license = apiAccount.lists.licenses.find((item, index) => apiAccount.expected[index].status === 'ACTIVE' && apiAccount.expected[index].machines.length >= 2)!;
      const machines = apiAccount.lists.machines.filter((machine) => (machine.relationships.license as { data: { id: string } }).data.id === license.id);
      Object.assign(license.attributes, { status: 'SUSPENDED', suspended: true, maxMachines: 4 });
      const removed = machines[1];
      apiAccount.lists.machines.splice(apiAccount.lists.machines.indexOf(removed), 1);
      apiAccount.lists.machines.push({ ...machines[0], id: '00000000-1111-4222-a333-444444444444', attributes: { ...machines[0].attributes, fingerprint: 'fp-added-on-keygen', name: 'New laptop' } });
      // Another license moved to another policy of its product (policies 0 and 3: both node-locked, of product 1; 3 has more entitlements).
      const [fromPolicy, toPolicy] = [apiAccount.lists.policies[0], apiAccount.lists.policies[3]];
      const movedIndex = apiAccount.lists.licenses.findIndex((item) => item !== license && (item.relationships.policy as { data: { id: string } }).data.id === fromPolicy.id);
      const movedLicense = apiAccount.lists.licenses[movedIndex];
      (movedLicense.relationships.policy as { data: { id: string } }).data.id = toPolicy.id;
      const dry = await importKeygenAccount(await inProcess('MAPI'), await readApi({ url: server.url, token }), { dryRun: true });
      expect(dry).toMatchObject({ licenses: { created: 0, changed: 2, unchanged: 298 }, activations: { created: 1, changed: 1 } });
      const rerun = await importKeygenAccount(await inProcess('MAPI'), await readApi({ url: server.url, token }));
      expect(rerun).toMatchObject({ licenses: { created: 0, changed: 2, unchanged: 298 }, activations: { created: 1, changed: 1 } });
      const tenantId = (await t.prisma.tenant.findFirst({ where: { keyPrefix: 'MAPI' } }))!.id;
      const mappingOf = (kind: string, keygenId: string) => t.prisma.keygenImportMapping.findFirstOrThrow({ where: { kind, keygenId, tenantId } });
      const moved = await t.prisma.license.findUniqueOrThrow({ where: { id: (await mappingOf('license', movedLicense.id)).keyforgeId } });
      const toPlan = await t.prisma.plan.findUniqueOrThrow({ where: { id: (await mappingOf('policy', toPolicy.id)).keyforgeId } });
      expect({ planId: moved.planId, features: moved.features }).toEqual({ planId: toPlan.id, features: toPlan.features });
      expect(toPlan.features.length).toBeGreaterThan(apiAccount.expected[movedIndex].features.length);
      const planChange = await t.prisma.auditLogEntry.findFirst({ where: { tenantId, action: 'UpdateLicense', entityId: moved.id, details: { path: ['after', 'planId'], equals: toPlan.id } } });
      expect(planChange).not.toBeNull();
      expect(await verifyAuditChain(t.prisma, tenantId, t.deps.secrets.auditChainKey)).toMatchObject({ valid: true, brokenAtSeq: null });
      const mapped = await mappingOf('license', license.id);
      const changed = await t.prisma.license.findUniqueOrThrow({ where: { id: mapped!.keyforgeId }, include: { activations: true } });
      expect(changed.status).toBe('suspended');
      expect(changed.activations.filter((activation) => activation.deactivatedAt === null).map((activation) => activation.deviceId).sort()).toEqual(
        [...machines.filter((machine) => machine !== removed).map((machine) => machine.attributes.fingerprint as string), 'fp-added-on-keygen'].sort(),
      );
      expect(changed.currentActivations).toBe(machines.length);
      // Once more, the token on standard input: nothing changes.
      const third = await runCliAsync(['import:keygen', '--tenant', 'MAPI', '--url', server.url, '--token-stdin', '--json'], env, `${token}\n`);
      expect(third.status, third.stderr).toBe(0);
      expect(third.json.report).toMatchObject({ licenses: { created: 0, changed: 0 }, activations: { created: 0, changed: 0 } });
    } finally {
      await server.close();
    }
  }, 600_000);

  it('policies of one name become as many plans (all but one named after their ids), and stay so on a re-run', async () => {
    await t.seedTenant({ name: 'Same names', keyPrefix: 'SAME' });
    const same = buildKeygenAccount({ now: new Date(), seed: 3, products: 1, policies: 3, licenses: 6, machines: 0 });
    const [first, second, third] = same.lists.policies;
    (second.attributes as { name: string }).name = (first.attributes as { name: string }).name;
    (third.attributes as { name: string }).name = (first.attributes as { name: string }).name;
    const sameDir = path.join(dir, 'same-names');
    writeKeygenDirectory(same, sameDir);
    const report = await importKeygenAccount(await inProcess('SAME'), await readDirectory(sameDir));
    expect(report.plans).toMatchObject({ created: 3, changed: 0 });
    const name = (first.attributes as { name: string }).name;
    const plans = await t.prisma.plan.findMany({ where: { tenant: { keyPrefix: 'SAME' } }, select: { name: true }, orderBy: { name: 'asc' } });
    // One keeps the name; the other two are named after their policies' ids (whichever two were taken second and third).
    const renamed = plans.map((plan) => plan.name).filter((planName) => planName !== name);
    expect(renamed).toHaveLength(2);
    const suffixes = [first, second, third].map((policy) => `${name} (${policy.id.slice(0, 8)})`);
    expect(renamed.every((planName) => suffixes.includes(planName))).toBe(true);
    const rerun = await importKeygenAccount(await inProcess('SAME'), await readDirectory(sameDir));
    expect(rerun.plans).toMatchObject({ created: 0, changed: 0, unchanged: 3 });
    expect(await t.prisma.plan.count({ where: { tenant: { keyPrefix: 'SAME' } } })).toBe(3);
  });

  it('machines deleted on the Keygen side free their seats, a few hundred at a time, once', async () => {
    await t.seedTenant({ name: 'Machines gone', keyPrefix: 'GONE' });
    const account = buildKeygenAccount({ now: new Date(), seed: 4, products: 1, policies: 3, licenses: 300, machines: 900 });
    const accountDir = path.join(dir, 'machines-gone');
    writeKeygenDirectory(account, accountDir);
    const first = await importKeygenAccount(await inProcess('GONE'), await readDirectory(accountDir));
    const imported = first.activations.created;
    // 600 machines deleted on the Keygen side: those imported span more than two batches.
    const removed = account.lists.machines.splice(0, 600);
    rmSync(accountDir, { recursive: true, force: true });
    writeKeygenDirectory(account, accountDir);
    const tenantId = (await t.prisma.tenant.findFirstOrThrow({ where: { keyPrefix: 'GONE' } })).id;
    const removedIds = (await t.prisma.keygenImportMapping.findMany({ where: { tenantId, kind: 'machine', keygenId: { in: removed.map((machine) => machine.id) } }, select: { keyforgeId: true } })).map((row) => row.keyforgeId);
    expect(removedIds.length).toBeGreaterThan(400);
    const rerun = await importKeygenAccount(await inProcess('GONE'), await readDirectory(accountDir));
    expect(rerun.activations).toMatchObject({ created: 0, changed: removedIds.length });
    expect(await t.prisma.activation.count({ where: { tenantId, id: { in: removedIds }, deactivatedAt: null } })).toBe(0);
    expect(await t.prisma.activation.count({ where: { tenantId, deactivatedAt: null } })).toBe(imported - removedIds.length);
    expect(await t.prisma.keygenImportMapping.count({ where: { tenantId, kind: 'machine', keygenId: { in: removed.map((machine) => machine.id) } } })).toBe(0);
    // Every seat counter equals its active rows.
    const counters = await t.prisma.$queryRaw<{ id: string }[]>`
      SELECT l.id FROM licenses l LEFT JOIN activations a ON a.license_id = l.id AND a.deactivated_at IS NULL
       WHERE l.tenant_id = ${tenantId}::uuid GROUP BY l.id HAVING l.current_activations <> count(a.id)`;
    expect(counters).toEqual([]);
    const third = await importKeygenAccount(await inProcess('GONE'), await readDirectory(accountDir));
    expect(third.activations).toMatchObject({ created: 0, changed: 0 });
  });
});
