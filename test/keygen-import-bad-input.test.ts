import { mkdirSync, mkdtempSync, openSync, closeSync, ftruncateSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../server/src/domain/errors.js';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { parsePage } from '../server/src/services/keygen-import/documents.js';
import { importKeygenAccount } from '../server/src/services/keygen-import/import.js';
import { MAX_PAGE_BYTES, readApi, readBundle, readDirectory } from '../server/src/services/keygen-import/source.js';
import { createLicense } from '../server/src/services/licenses/management.js';
import { lockTenantAudit, verifyAuditChain } from '../server/src/services/audit/audit-log.js';
import { waitUntil } from './support/wait.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { hostileString } from './support/hostile.js';
import { buildKeygenAccount, keygenPage, serveKeygenAccount, writeKeygenDirectory, type FixtureAccount } from './support/keygen-fixture.js';

// The Keygen importer on bad input (docs/guide/migrating.md "Bad input"): a malformed document stops it before
// anything is written; a missing relationship, an unknown attribute and a key another company has are report
// lines; a 1 GB file and an endless answer are refused by a size bound before (or while) they are read; a
// links.next that loops back stops it. Hostile documents (fast-check) only ever give InvalidRequest.

const dir = mkdtempSync(path.join(tmpdir(), 'kf-keygen-bad-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Anything parsePage throws must be the service's InvalidRequest (a 400, a CLI error line), never a crash. */
function onlyInvalidRequest(run: () => unknown) {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('InvalidRequest');
  }
}

describe('hostile documents (fast-check)', () => {
  const fixture = buildKeygenAccount({ products: 1, policies: 3, licenses: 6, machines: 4, now: new Date('2026-06-01T00:00:00Z') });
  const valid = [...Object.entries(fixture.lists)].map(([list, items]) => keygenPage(fixture, list, items, 1, 100));
  const value = fc.oneof(fc.jsonValue(), hostileString, fc.constantFrom(null, -1, 1.5, 2 ** 60, '', [], {}, { id: 1 }, { type: 'licenses' }));

  it('any JSON value as a page: a page or InvalidRequest', () => {
    fc.assert(fc.property(fc.jsonValue(), (document) => onlyInvalidRequest(() => parsePage(document, 'fuzz.json'))), { numRuns: 500 });
  });

  it('a real page with one value anywhere replaced: a page or InvalidRequest, and a page read holds only well-formed resources', () => {
    const mutate = (node: unknown, at: number[], replacement: unknown): unknown => {
      if (!at.length || node === null || typeof node !== 'object') return replacement;
      const entries = Object.entries(node as Record<string, unknown>);
      if (!entries.length) return replacement;
      const [key, child] = entries[at[0] % entries.length];
      const copy: any = Array.isArray(node) ? [...node] : { ...node };
      copy[key] = mutate(child, at.slice(1), replacement);
      return copy;
    };
    fc.assert(
      fc.property(fc.constantFrom(...valid), fc.array(fc.nat(), { minLength: 1, maxLength: 6 }), value, (page, at, replacement) => {
        onlyInvalidRequest(() => {
          const parsed = parsePage(mutate(page, at, replacement), 'fuzz.json');
          for (const resource of parsed.data) {
            expect(typeof resource.id).toBe('string');
            expect(typeof resource.attributes).toBe('object');
          }
        });
      }),
      { numRuns: 1000 },
    );
  });

  it('a bundle of hostile lines: an account or InvalidRequest', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(hostileString, fc.jsonValue().map((v) => JSON.stringify(v)), fc.constantFrom(...valid.map((page) => JSON.stringify(page)))), { maxLength: 6 }), async (lines) => {
        try {
          await readBundle((async function* () {
            yield* lines;
          })());
        } catch (error) {
          expect(error).toBeInstanceOf(AppError);
          expect((error as AppError).code).toBe('InvalidRequest');
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('bad accounts against the database', () => {
  let t: TestApp;
  let tenantId: string;
  let otherTenantId: string;
  const clock = new TestClock();
  const ctx = (tenant = tenantId) => ({ db: t.deps.db, secrets: t.deps.secrets, now: clock.now(), actor: systemActor(tenant, 'system (test)'), meta: NO_META });
  const written = async () => ({
    products: await t.prisma.product.count({ where: { tenantId } }),
    plans: await t.prisma.plan.count({ where: { tenantId } }),
    licenses: await t.prisma.license.count({ where: { tenantId } }),
    mappings: await t.prisma.keygenImportMapping.count({ where: { tenantId } }),
  });
  const nothing = { products: 0, plans: 0, licenses: 0, mappings: 0 };
  const small = (seed: number) => buildKeygenAccount({ products: 1, policies: 3, licenses: 12, machines: 10, now: clock.now(), seed });
  const saved = (account: FixtureAccount, name: string) => {
    const at = path.join(dir, name);
    writeKeygenDirectory(account, at);
    return at;
  };

  beforeAll(async () => {
    t = await startTestApp({ clock });
    tenantId = (await t.seedTenant({ name: 'Bad Input', keyPrefix: 'BADI' })).id;
    otherTenantId = (await t.seedTenant({ name: 'Other Company', keyPrefix: 'OTHR' })).id;
  });
  afterAll(() => t.close());

  it('a malformed document (a value of the wrong type, a page that is not JSON) stops the import with its place; nothing is written', async () => {
    const account = small(11);
    (account.lists.licenses[7].attributes as Record<string, unknown>).expiry = 'next tuesday';
    await expect(importKeygenAccount(ctx(), await readDirectory(saved(account, 'bad-date')))).rejects.toThrow(
      new RegExp(`licenses ${account.lists.licenses[7].id}: attributes.expiry must be an ISO 8601 date-time`),
    );
    (account.lists.licenses[7].attributes as Record<string, unknown>).expiry = null;
    (account.lists.policies[1].attributes as Record<string, unknown>).maxMachines = 'five';
    await expect(importKeygenAccount(ctx(), await readDirectory(saved(account, 'bad-seats')))).rejects.toThrow(/attributes.maxMachines must be a whole number/);
    (account.lists.policies[1].attributes as Record<string, unknown>).maxMachines = 5;
    // PostgreSQL cannot store a NUL: in an id or in any attribute it stops the import with its place, before a write.
    const productId = account.lists.products[0].id;
    account.lists.products[0].id = 'prod\u0000uct';
    await expect(readDirectory(saved(account, 'nul-id'))).rejects.toThrow(/data\.0\.id holds a NUL character/);
    account.lists.products[0].id = productId;
    (account.lists.machines[3].attributes as Record<string, unknown>).fingerprint = 'finger\u0000print';
    await expect(readDirectory(saved(account, 'nul-fingerprint'))).rejects.toThrow(/data\.3\.attributes\.fingerprint holds a NUL character/);
    expect(await written()).toEqual(nothing);

    const broken = path.join(dir, 'not-json');
    mkdirSync(broken);
    writeFileSync(path.join(broken, 'licenses-1.json'), '{"data": [ {"id": "1", "type": "licenses", ');
    await expect(readDirectory(broken)).rejects.toThrow(/^licenses-1\.json: not JSON/);
    writeFileSync(path.join(broken, 'licenses-1.json'), JSON.stringify({ errors: [{ title: 'Unauthorized' }] }));
    await expect(readDirectory(broken)).rejects.toThrow(/an error answer/);
  });

  it('a missing relationship, an unknown attribute and a key another company holds are report lines; the rest is imported', async () => {
    const account = small(12);
    // A key another company's license already has.
    const taken = account.expected[3];
    const otherProduct = await t.prisma.product.create({ data: { tenantId: otherTenantId, name: 'Theirs', allowImportedKeys: true } });
    await createLicense(ctx(otherTenantId), { productId: otherProduct.id, maxActivations: 1 }, { key: taken.key });
    // A license whose policy is not in the documents, a machine whose license is not.
    (account.lists.licenses[5].relationships.policy as { data: { id: string } }).data = { type: 'policies', id: 'no-such-policy' } as never;
    (account.lists.machines[0].relationships.license as { data: { id: string } }).data = { type: 'licenses', id: 'no-such-license' } as never;
    // A policy attribute newer than the importer.
    (account.lists.policies[0].attributes as Record<string, unknown>).quantumEntanglement = 'ENABLED';

    const report = await importKeygenAccount(ctx(), await readDirectory(saved(account, 'partial')));
    const problems = report.problems.map((problem) => `${problem.type} ${problem.keygenId}: ${problem.message}`);
    expect(problems).toEqual(
      expect.arrayContaining([
        `licenses ${taken.licenseId}: not imported: This key cannot be used (another license of this installation has or had this key)`,
        `licenses ${account.lists.licenses[5].id}: not imported: its policy no-such-policy is not in the documents (or could not be imported)`,
        `machines ${account.lists.machines[0].id}: not imported: its license no-such-license is not in the documents`,
      ]),
    );
    expect(report.notes).toContainEqual(expect.objectContaining({ type: 'policies', field: 'quantumEntanglement', message: 'an attribute the importer does not know: not imported', examples: [account.lists.policies[0].id] }));
    expect(report.licenses).toMatchObject({ created: 10, skipped: 2 });
    expect(await t.prisma.license.count({ where: { tenantId } })).toBe(10);
    // The other company's license is as it was.
    expect(await t.prisma.license.count({ where: { tenantId: otherTenantId } })).toBe(1);
  });

  it('a key another company takes while the import runs (after its check, before its batch is written): only that license is refused, the others of its batch are written whole', async () => {
    const racing = (await t.seedTenant({ name: 'Racing Import', keyPrefix: 'RACE' })).id;
    const account = small(13);
    const taken = account.expected[8];
    // Its first half imported first (products and plans with it): the second run's first write is its batch of the other half.
    const half = new Set(account.lists.licenses.slice(0, 6).map((license) => license.id));
    const licenseOf = (machine: (typeof account.lists.machines)[number]) => (machine.relationships.license as { data: { id: string } }).data.id;
    const first = { ...account, lists: { ...account.lists, licenses: account.lists.licenses.filter((license) => half.has(license.id)), machines: account.lists.machines.filter((machine) => half.has(licenseOf(machine))) } };
    expect(await importKeygenAccount(ctx(racing), await readDirectory(saved(first, 'race-first')))).toMatchObject({ licenses: { created: 6 }, problemCount: 0 });
    const read = await readDirectory(saved(account, 'race'));
    const otherProduct = await t.prisma.product.create({ data: { tenantId: otherTenantId, name: 'Theirs too', allowImportedKeys: true } });
    // The company's activity-log lock held: the import checks the keys, prepares its batch, then waits for the lock.
    const { running } = await t.prisma.$transaction(
      async (tx) => {
        await lockTenantAudit(tx, racing);
        const running = importKeygenAccount(ctx(racing), read);
        const waiting = () => t.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
        await waitUntil(async () => (await waiting())[0].n > 0, { timeout: 20_000 });
        await createLicense(ctx(otherTenantId), { productId: otherProduct.id, maxActivations: 1 }, { key: taken.key });
        return { running };
      },
      { timeout: 30_000 },
    );
    const report = await running;
    expect(report.problems.map((problem) => `${problem.keygenId}: ${problem.message}`)).toEqual([`${taken.licenseId}: not imported: This key cannot be used (another license of this installation has or had this key)`]);
    expect(report.licenses).toEqual({ created: 5, changed: 0, unchanged: 6, skipped: 1 });
    expect(report.activations.skipped).toBe(taken.machines.length);
    const licenses = await t.prisma.license.findMany({ where: { tenantId: racing }, include: { _count: { select: { activations: true } } } });
    const keygenIdOf = new Map((await t.prisma.keygenImportMapping.findMany({ where: { tenantId: racing, kind: 'license' } })).map((row) => [row.keyforgeId, row.keygenId]));
    expect(licenses).toHaveLength(11);
    for (const license of licenses) {
      expect(license._count.activations).toBe(account.expected.find((want) => want.licenseId === keygenIdOf.get(license.id))!.machines.length);
    }
    expect(await t.prisma.auditLogEntry.count({ where: { tenantId: racing, action: 'CreateLicense' } })).toBe(11);
    expect(await verifyAuditChain(t.prisma, racing, t.deps.secrets.auditChainKey)).toMatchObject({ valid: true, brokenAtSeq: null });
  });

  it('a 1 GB file is refused by its size before it is read, and an endless answer when it passes the bound', async () => {
    const big = path.join(dir, 'big');
    mkdirSync(big);
    const fd = openSync(path.join(big, 'licenses-1.json'), 'w');
    ftruncateSync(fd, 1024 ** 3); // sparse: no disk, no memory
    closeSync(fd);
    const before = process.memoryUsage().rss;
    await expect(readDirectory(big)).rejects.toThrow(new RegExp(`licenses-1\\.json: 1073741824 bytes, more than a page may have \\(${MAX_PAGE_BYTES}\\)`));
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);

    // A server that answers one page without end, and no length: reading stops at the bound.
    let sent = 0;
    const server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/vnd.api+json' });
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      const pump = () => {
        while (sent < 1024 ** 3 && res.write(chunk)) sent += chunk.length;
        if (sent >= 1024 ** 3) res.end();
      };
      res.on('drain', pump);
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/accounts/acct`;
      await expect(readApi({ url, token: 'tok' })).rejects.toThrow(/longer than a page may be/);
      expect(sent).toBeLessThan(1024 ** 3);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    expect(await written()).toMatchObject({ products: 1 }); // the previous test's, nothing more
  });

  it('a links.next that leads back to a page already read stops the import; nothing is written', async () => {
    const account = small(14);
    const server = await serveKeygenAccount(account, 'secret-token');
    server.override('machines', (page, size) => {
      const answer = keygenPage(account, 'machines', account.lists.machines, page, size);
      return { ...answer, links: { ...answer.links, next: `/v1/accounts/${account.accountId}/machines?page[size]=${size}&page[number]=1` } };
    });
    const before = await written();
    try {
      await expect(readApi({ url: server.url, token: 'secret-token' })).rejects.toThrow(/machines: links\.next leads back to a page already read/);
      // A next link to another host is refused too: the token would go there.
      server.override('machines', () => ({ data: [], links: { next: 'http://127.0.0.2:1/v1/accounts/x/machines?page[number]=2' } }));
      await expect(readApi({ url: server.url, token: 'secret-token' })).rejects.toThrow(/leads to another host/);
    } finally {
      await server.close();
    }
    expect(await written()).toEqual(before);
  });
});
