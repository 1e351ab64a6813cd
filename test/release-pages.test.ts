// The public release API reads a product's published releases a page at a time (services/releases/public.ts): an
// update check reads one page however many releases the product has, and listing, filtering and the upgrade check
// give what reading every release would, whatever the releases, channels, features and platforms (fast-check, over
// real HTTP on real PostgreSQL, against a reference computed here from the rows themselves); at 20,000 releases the
// newest is read along the version index.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import pg from 'pg';
import semver from 'semver';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RELEASE_PAGE_SIZE, releasePageSize } from '../server/src/services/releases/public.js';
import { RELEASE_CHANNELS, channelsUpTo, versionOrder, type ReleaseChannel } from '../server/src/services/releases/model.js';
import { startTestApp, type TestApp } from './support/harness.js';
import { capturedSelects, type SentStatement } from './support/statements.js';
import { seedTwoTenants, type SeededTenant } from './support/tenants.js';

let t: TestApp;
let A: SeededTenant;
/** A license with the feature `pro`, and one without. */
let proKey: string;
let plainKey: string;
const PLATFORMS = ['win32', 'linux'] as const;

interface ReleaseSpec {
  version: string;
  channel: ReleaseChannel;
  status: 'draft' | 'published' | 'yanked';
  requiresPro: boolean;
  platforms: (typeof PLATFORMS)[number][];
}

const productId = () => A.product!.id;
const get = (pathname: string, params: Record<string, string | number | undefined>, key: string) =>
  t.get(`/api/v1${pathname}?${new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]))}`, { authorization: `License ${key}` });

/** Replaces the product's releases with these, each with one artifact per platform (rows only: listing reads no file). */
async function publish(specs: ReleaseSpec[]) {
  await t.prisma.release.deleteMany({ where: { productId: productId() } });
  const releases = specs.map((spec, i) => ({
    id: randomUUID(), tenantId: A.tenantId, productId: productId(), version: spec.version, versionOrder: versionOrder(spec.version), channel: spec.channel,
    status: spec.status, requiredFeatures: spec.requiresPro ? ['pro'] : [], publishedAt: spec.status === 'draft' ? null : new Date(Date.UTC(2026, 0, 1) + i * 60_000),
  }));
  await t.prisma.release.createMany({ data: releases });
  await t.prisma.releaseArtifact.createMany({
    data: releases.flatMap((release, i) => specs[i].platforms.map((platform) => ({
      tenantId: A.tenantId, releaseId: release.id, filename: `app-${platform}.bin`, platform, arch: 'x64', filetype: 'bin', size: 1n,
      sha256: '0'.repeat(64), sha512: '0'.repeat(128), storageKey: `test/${randomUUID()}`, signature: 'unsigned',
    }))),
  });
}

/** What a license may download on `channel` with an artifact for `platform`, newest first: every row read and filtered here. */
function expectedList(specs: ReleaseSpec[], pro: boolean, channel: ReleaseChannel, platform: string | undefined) {
  return specs
    .filter((s) => s.status === 'published' && channelsUpTo(channel).includes(s.channel) && (platform === undefined || s.platforms.includes(platform as never)))
    .sort((a, b) => semver.rcompare(a.version, b.version))
    .filter((s) => pro || !s.requiresPro);
}

/** The upgrade check's answer as version and reason: the newest allowed newer release, else the newest blocked one's reason. */
function expectedUpgrade(specs: ReleaseSpec[], pro: boolean, channel: ReleaseChannel, platform: string | undefined, current: string) {
  const newer = expectedList(specs, true, channel, platform).filter((s) => semver.gt(s.version, current));
  const allowed = newer.find((s) => pro || !s.requiresPro);
  if (allowed) return { available: true, version: allowed.version, reason: undefined };
  if (newer.length) return { available: false, version: newer[0].version, reason: 'FeatureMissing' };
  return { available: false, version: null, reason: 'NoNewerRelease' };
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/** Page statements a walk through `total` releases sends (the pages grow: releasePageSize). */
function statementsToWalk(total: number) {
  let left = total;
  for (let index = 0; ; index++) {
    if (left < releasePageSize(index)) return index + 1;
    left -= releasePageSize(index);
  }
}

const releaseStatements = (statements: SentStatement[]) => statements.filter((s) => /FROM "public"\."releases"/.test(s.text));

beforeAll(async () => {
  t = await startTestApp();
  ({ A } = await seedTwoTenants(t));
  proKey = (await t.seedLicense(A.tenantId, productId(), { features: ['pro'] })).key;
  plainKey = (await t.seedLicense(A.tenantId, productId())).key;
});
afterAll(async () => {
  await t?.prisma.release.deleteMany({ where: { productId: productId() } });
  await t?.close();
});

describe('published releases read a page at a time', () => {
  // 60 stable releases 1.0.0 … 1.59.0; the newest 30 require `pro`; only the three oldest have a linux file.
  const specs: ReleaseSpec[] = Array.from({ length: 60 }, (_, i) => ({
    version: `1.${i}.0`, channel: 'stable', status: 'published', requiresPro: i >= 30, platforms: i < 3 ? ['win32', 'linux'] : ['win32'],
  }));
  beforeEach(async () => {
    await publish(specs);
  });

  it('the newest release, an up-to-date check and a newer one each read one page', async () => {
    let list: Awaited<ReturnType<typeof get>> | undefined;
    const listing = releaseStatements(await capturedSelects(async () => void (list = await get('/releases', { product: productId(), limit: 1 }, proKey))));
    expect(list!.json.releases.map((r: { version: string }) => r.version)).toEqual(['1.59.0']);
    expect(listing).toHaveLength(1);
    expect(listing[0].text).toMatch(/LIMIT \$\d+/);
    expect(listing[0].values.map(String)).toContain(String(RELEASE_PAGE_SIZE));

    let upToDate: Awaited<ReturnType<typeof get>> | undefined;
    const check = releaseStatements(await capturedSelects(async () => void (upToDate = await get('/releases/upgrade', { product: productId(), version: '1.59.0' }, proKey))));
    expect(upToDate!.json).toMatchObject({ available: false, reason: 'NoNewerRelease', release: null });
    expect(check).toHaveLength(1);

    const upgrade = await get('/releases/upgrade', { product: productId(), version: '1.58.0' }, proKey);
    expect(upgrade.json).toMatchObject({ available: true, release: { version: '1.59.0' } });
  });

  it('goes on to older pages for what the newest do not have: a platform, a license without the feature', async () => {
    let list: Awaited<ReturnType<typeof get>> | undefined;
    const listing = releaseStatements(await capturedSelects(async () => void (list = await get('/releases', { product: productId(), platform: 'linux' }, proKey))));
    expect(list!.json.releases.map((r: { version: string }) => r.version)).toEqual(['1.2.0', '1.1.0', '1.0.0']);
    expect(listing).toHaveLength(statementsToWalk(60));
    expect(listing).toHaveLength(2);

    const plain = await get('/releases', { product: productId(), limit: 3 }, plainKey);
    expect(plain.json.releases.map((r: { version: string }) => r.version)).toEqual(['1.29.0', '1.28.0', '1.27.0']);
    const upgrade = await get('/releases/upgrade', { product: productId(), version: '1.0.0' }, plainKey);
    expect(upgrade.json).toMatchObject({ available: true, release: { version: '1.29.0' } });
    const blocked = await get('/releases/upgrade', { product: productId(), version: '1.29.0' }, plainKey);
    expect(blocked.json).toMatchObject({ available: false, reason: 'FeatureMissing', release: { version: '1.59.0' } });
  });
});

describe('paging gives what reading every release would (fast-check)', () => {
  const versionArb = fc
    .tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 2 }), fc.option(fc.constantFrom('alpha', 'alpha.2', 'beta.1', 'rc.1', 'rc.10'), { nil: undefined }))
    .map(([major, minor, patch, pre]) => `${major}.${minor}.${patch}${pre ? `-${pre}` : ''}`);
  const specArb = fc.record({
    channel: fc.constantFrom<ReleaseChannel>('stable', 'stable', 'stable', ...RELEASE_CHANNELS),
    status: fc.constantFrom('published', 'published', 'published', 'draft', 'yanked') as fc.Arbitrary<ReleaseSpec['status']>,
    requiresPro: fc.boolean(),
    platforms: fc.subarray([...PLATFORMS], { minLength: 1 }),
  });
  const specsArb = fc
    .uniqueArray(versionArb, { minLength: 40, maxLength: 120 })
    .chain((versions) => fc.array(specArb, { minLength: versions.length, maxLength: versions.length }).map((rest) => rest.map((spec, i) => ({ ...spec, version: versions[i] }))));
  const queryArb = fc.record({
    pro: fc.boolean(),
    channel: fc.constantFrom(...RELEASE_CHANNELS),
    platform: fc.option(fc.constantFrom(...PLATFORMS), { nil: undefined }),
    limit: fc.integer({ min: 1, max: 100 }),
    current: versionArb,
  });

  it('listing and the upgrade check', async () => {
    // How many answers named a release: the property is not met by empty lists alone.
    let listed = 0;
    let upgrades = 0;
    await fc.assert(
      fc.asyncProperty(specsArb, fc.array(queryArb, { minLength: 3, maxLength: 3 }), async (specs, queries) => {
        await publish(specs);
        for (const q of queries) {
          const key = q.pro ? proKey : plainKey;
          const list = await get('/releases', { product: productId(), channel: q.channel, platform: q.platform, limit: q.limit }, key);
          expect(list.status).toBe(200);
          expect(list.json.releases.map((r: { version: string }) => r.version)).toEqual(expectedList(specs, q.pro, q.channel, q.platform).slice(0, q.limit).map((s) => s.version));
          if (list.json.releases.length > RELEASE_PAGE_SIZE) listed++;
          const upgrade = await get('/releases/upgrade', { product: productId(), channel: q.channel, platform: q.platform, version: q.current }, key);
          expect(upgrade.status).toBe(200);
          const want = expectedUpgrade(specs, q.pro, q.channel, q.platform, q.current);
          expect({ available: upgrade.json.available, version: upgrade.json.release?.version ?? null, reason: upgrade.json.reason }).toEqual(want);
          if (want.version !== null) upgrades++;
        }
      }),
      { numRuns: 25 },
    );
    // Listings longer than a page, and upgrade answers naming a release, came up.
    expect(listed).toBeGreaterThan(0);
    expect(upgrades).toBeGreaterThan(10);
  });
});

describe('at scale', () => {
  it('the newest of 20,000 published releases is read along the version index, a page of rows, not the product\'s releases', async () => {
    const product = await t.seedProduct(A.tenantId, 'Scale Studio');
    const key = (await t.seedLicense(A.tenantId, product.id)).key;
    const versions = Array.from({ length: 20_000 }, (_, n) => `${Math.floor(n / 1000)}.${n % 1000}.0`);
    await t.prisma.$executeRawUnsafe(
      `INSERT INTO releases (id, tenant_id, product_id, version, version_order, channel, status, published_at, updated_at)
       SELECT gen_random_uuid(), $1::uuid, $2::uuid, v.version, v.version_order, 'stable', 'published', now(), now()
         FROM unnest($3::text[], $4::text[]) AS v(version, version_order)`,
      A.tenantId, product.id, versions, versions.map(versionOrder),
    );
    await t.prisma.$executeRawUnsafe(
      `INSERT INTO release_artifacts (id, tenant_id, release_id, filename, platform, arch, filetype, size, sha256, sha512, storage_key, signature)
       SELECT gen_random_uuid(), tenant_id, id, 'app.bin', 'win32', 'x64', 'bin', 1, repeat('0', 64), repeat('0', 128), 'scale/' || id, 'unsigned'
         FROM releases WHERE product_id = $1::uuid`,
      product.id,
    );
    try {
      // As the schema's owner: the app role may not ANALYZE (PostgreSQL skips it with a warning).
      const owner = new pg.Client({ connectionString: t.ownerUrl });
      await owner.connect();
      await owner.query('ANALYZE releases, release_artifacts').finally(() => owner.end());
      let list: Awaited<ReturnType<typeof get>> | undefined;
      const [page, ...more] = releaseStatements(await capturedSelects(async () => void (list = await get('/releases', { product: product.id, limit: 1 }, key))));
      expect(list!.json.releases.map((r: { version: string }) => r.version)).toEqual(['19.999.0']);
      expect(more).toEqual([]);
      const [row] = await t.prisma.$queryRawUnsafe<{ 'QUERY PLAN': { Plan: PlanNode }[] }[]>(`EXPLAIN (ANALYZE, FORMAT JSON) ${page.text}`, ...page.values);
      const nodes = nodesOf(row['QUERY PLAN'][0].Plan);
      expect(nodes.map((node) => node['Index Name'])).toContain('releases_product_id_version_order_key');
      expect(nodes.filter((node) => node['Actual Rows'] * node['Actual Loops'] > 100).map((node) => `${node['Node Type']} ${node['Actual Rows']}`)).toEqual([]);

      // A platform none has walks every release, in a few growing pages rather than 800 of 25.
      let none: Awaited<ReturnType<typeof get>> | undefined;
      const walk = releaseStatements(await capturedSelects(async () => void (none = await get('/releases', { product: product.id, platform: 'linux' }, key))));
      expect(none!.json.releases).toEqual([]);
      expect(walk).toHaveLength(statementsToWalk(20_000));
      expect(walk.length).toBeLessThanOrEqual(16);
    } finally {
      await t.prisma.release.deleteMany({ where: { productId: product.id } });
    }
  });
});
