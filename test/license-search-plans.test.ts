import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { countBulkSelection } from '../server/src/services/licenses/bulk.js';
import { listLicenses, SEARCH_WALK, type LicenseFilter } from '../server/src/services/licenses/management.js';
import { COUNT_CAP, SEARCH_COUNT_CAP } from '../server/src/services/listing.js';
import { licenseStatus } from '../server/src/services/licenses/predicates.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { capturedSelects } from './support/statements.js';

// The license search's plans at a modest size, by their shape (no timings): a search reads the trigram indexes of
// its own company only, and a search most of the list matches is answered by walking the list, not by the trigram
// index (which would list every match before the first row). A 1M-license database shows the cost of getting it
// wrong (pnpm bench:scale); here two companies are enough for the plan to show it:
// "Other" has 10,000 licenses whose emails all contain "shared"; "Mine" has 2,500, a third of them "customer1…".

const T = Date.parse('2026-06-15T12:00:00.000Z');
let t: TestApp;
let mine: string;

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/** Every plan node of every SELECT `run` sends, as EXPLAIN (ANALYZE, FORMAT JSON) shows it. */
async function planNodes(run: () => Promise<unknown>): Promise<PlanNode[]> {
  const nodes: PlanNode[] = [];
  for (const { text, values } of await capturedSelects(run)) {
    const [row] = await t.prisma.$queryRawUnsafe<{ 'QUERY PLAN': { Plan: PlanNode }[] }[]>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, ...values);
    nodes.push(...nodesOf(row['QUERY PLAN'][0].Plan));
  }
  return nodes;
}
const trigramScans = (nodes: PlanNode[]) => nodes.filter((node) => /_trgm_idx$/.test(node['Index Name'] ?? ''));

const ctx = () => ({ db: t.deps.db, secrets: t.deps.secrets, now: new Date(T), actor: systemActor(mine), meta: NO_META });

beforeAll(async () => {
  t = await startTestApp({ clock: new TestClock(T) });
  const insert = (tenantId: string, productId: string, count: number, email: string) =>
    t.prisma.$executeRawUnsafe(
      `INSERT INTO licenses (id, tenant_id, product_id, key_digest, key_hint, max_activations, status, expires_at, customer_email, created_at, updated_at)
       SELECT gen_random_uuid(), $1::uuid, $2::uuid, md5(random()::text || n), 'PLAN-…-' || lpad(n::text, 5, '0'), 1,
              CASE WHEN n % 10 = 0 THEN 'revoked' ELSE 'active' END::license_status,
              CASE WHEN n % 3 = 0 THEN NULL ELSE $3::timestamptz + (n % 200 - 100) * interval '1 day' END,
              replace($4, '#', n::text), $3::timestamptz - n * interval '1 minute', now()
         FROM generate_series(1, $5::int) AS n`,
      tenantId, productId, new Date(T).toISOString(), email, count,
    );
  const other = await t.seedTenant({ name: 'Other Co', keyPrefix: 'OTHR' });
  await insert(other.id, (await t.seedProduct(other.id, 'Other')).id, 10_000, 'shared#@other.test');
  mine = (await t.seedTenant({ name: 'Mine Co', keyPrefix: 'MINE' })).id;
  await insert(mine, (await t.seedProduct(mine, 'Mine')).id, 2_500, 'customer#@mine.test');
  // As the schema's owner: the app role may not ANALYZE (PostgreSQL skips it with a warning).
  const owner = new pg.Client({ connectionString: t.ownerUrl });
  await owner.connect();
  // VACUUM too: it merges the GIN indexes' pending lists, the state a busy table's indexes are in most of the time
  // (autovacuum does it at its own moment otherwise, and the plans below would then depend on when it ran).
  await owner.query('VACUUM ANALYZE licenses').finally(() => owner.end());
});
afterAll(() => t.close());

// A search is walked first when PostgreSQL expects more than SEARCH_WALK.commonRows matches in the company: "Mine"
// is small, so the bar is lowered to what it would be in proportion to 500,000 licenses.
const { commonRows } = SEARCH_WALK;
beforeAll(() => void (SEARCH_WALK.commonRows = 200));
afterAll(() => void (SEARCH_WALK.commonRows = commonRows));

/** The plain definition: the term anywhere in the email or key hint (case-insensitive), every filter, newest first. */
async function expected(filter: LicenseFilter & { search: string }) {
  const rows = await t.prisma.license.findMany({ where: { tenantId: mine }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
  const text = filter.search.toLowerCase();
  return rows
    .filter((row) => (row.customerEmail ?? '').toLowerCase().includes(text) || row.keyHint.toLowerCase().includes(text))
    .filter((row) => !filter.status || licenseStatus(row, new Date(T)) === filter.status)
    .map((row) => row.id);
}

describe('license search plans', () => {
  it('reads the trigram index for its own company only: a term 10,000 licenses of another company match costs nothing', async () => {
    for (const filter of [{ search: 'shared' }, { search: 'shared', status: 'active' as const }]) {
      const nodes = await planNodes(() => listLicenses(ctx(), filter));
      // No step reads the other company's rows (an index not led by the tenant returns its 10,000 matches).
      for (const node of nodes) expect(node['Actual Rows'], `${node['Node Type']} ${node['Index Name'] ?? ''}`).toBeLessThanOrEqual(2_500);
      // Each trigram index is entered by the company: it yields at most the company's own entries (with a term no key
      // hint contains, the key-hint index's tenant key alone may yield them all, rechecked), never the other's 10,000.
      for (const scan of trigramScans(nodes)) {
        expect(scan['Index Cond'], scan['Index Name']).toMatch(/tenant_id = /);
        expect(scan['Actual Rows'], scan['Index Name']).toBeLessThanOrEqual(2_500);
      }
      expect((await listLicenses(ctx(), filter)).totalCount).toBe(0);
    }
  });

  it('walks the list for a term most licenses match, without the trigram index, and pages and counts it exactly', async () => {
    const filter = { search: 'customer1', status: 'active' as const };
    const all = await expected(filter);
    expect(all.length).toBeGreaterThan(SEARCH_WALK.commonRows);
    const list = await planNodes(() => listLicenses(ctx(), filter));
    const count = await planNodes(() => countBulkSelection(ctx(), { filter }, COUNT_CAP));
    expect(trigramScans([...list, ...count])).toEqual([]);
    const page = await listLicenses(ctx(), filter);
    expect(page.nodes.map((node) => node.id)).toEqual(all.slice(0, 20));
    expect(page.totalCount).toBe(all.length);
    // A cursor page forward and back, from the walk as well.
    const next = await listLicenses(ctx(), filter, { first: 20, after: page.pageInfo.endCursor });
    expect(next.nodes.map((node) => node.id)).toEqual(all.slice(20, 40));
    const back = await listLicenses(ctx(), filter, { last: 20, before: next.pageInfo.startCursor });
    expect(back.nodes.map((node) => node.id)).toEqual(all.slice(0, 20));
    expect(await countBulkSelection(ctx(), { filter }, COUNT_CAP)).toEqual({ totalCount: all.length, totalCountCapped: false });
  });

  it('caps a search count at 1,000 whichever way it is counted, and counts exactly without a cap', async () => {
    const filter = { search: 'mine.test' };
    expect((await expected(filter)).length).toBe(2_500);
    expect(await countBulkSelection(ctx(), { filter }, COUNT_CAP)).toEqual({ totalCount: SEARCH_COUNT_CAP, totalCountCapped: true });
    expect(await countBulkSelection(ctx(), { filter })).toEqual({ totalCount: 2_500, totalCountCapped: false });
    const list = await listLicenses(ctx(), filter);
    expect({ totalCount: list.totalCount, totalCountCapped: list.totalCountCapped }).toEqual({ totalCount: SEARCH_COUNT_CAP, totalCountCapped: true });
    // Rare in the walk's first rows (the oldest licenses only): found by the indexes, then paged in list order.
    const rare = { search: 'customer2499' };
    expect((await listLicenses(ctx(), rare)).nodes.map((node) => node.id)).toEqual(await expected(rare));
  });
});
