import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueEmails } from '../server/src/services/notifications/outbox.js';
import { startTestApp, type TestApp } from './support/harness.js';

// Relay connections over the services' lists: edge cursors and both directions, on the small lists (sliced) and on
// the large keyset lists (an index walked either way from the cursor); and the one vendor word (company) over the
// activity log's stored entity type.
let t: TestApp;
let token: string;
let tenantId: string;
let alphaId: string;

const ok = (query: string, variables: Record<string, unknown> = {}) => t.gqlData(query, variables, { token });

beforeAll(async () => {
  t = await startTestApp();
  const admin = await t.setupAdmin();
  token = admin.token;
  tenantId = admin.user.tenantId;
  for (const name of ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo']) {
    const product = await t.seedProduct(tenantId, name);
    if (name === 'Alpha') {
      alphaId = product.id;
      for (let i = 0; i < 5; i++) await t.seedLicense(tenantId, product.id);
    }
  }
});
afterAll(() => t?.close());

const PRODUCTS = `query($first: Int, $after: String, $last: Int, $before: String) {
  products(first: $first, after: $after, last: $last, before: $before) {
    totalCount edges { cursor node { name } } nodes { name } pageInfo { startCursor endCursor hasNextPage hasPreviousPage }
  }
}`;
const names = (connection: { nodes: { name: string }[] }) => connection.nodes.map((node) => node.name);

describe('small lists (whole list, sliced): first/after and last/before', () => {
  it('pages forward and backward by cursor, with the total on every page', async () => {
    const first = (await ok(PRODUCTS, { first: 2 })).products;
    expect(names(first)).toEqual(['Alpha', 'Bravo']);
    expect(first.edges.map((edge: { node: { name: string } }) => edge.node.name)).toEqual(names(first));
    expect(first).toMatchObject({ totalCount: 5, pageInfo: { hasNextPage: true, endCursor: first.edges[1].cursor, startCursor: first.edges[0].cursor } });

    const second = (await ok(PRODUCTS, { first: 2, after: first.pageInfo.endCursor })).products;
    expect(names(second)).toEqual(['Charlie', 'Delta']);
    expect(second.totalCount).toBe(5);

    const previous = (await ok(PRODUCTS, { last: 2, before: second.pageInfo.startCursor })).products;
    expect(names(previous)).toEqual(['Alpha', 'Bravo']);
    expect(names((await ok(PRODUCTS, { last: 1 })).products)).toEqual(['Echo']);
    expect(names((await ok(PRODUCTS)).products)).toEqual(['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo']); // 100 by default
  });

  it('a page size over 100 or a foreign cursor is InvalidRequest', async () => {
    expect((await t.gql(PRODUCTS, { first: 101 }, { token })).errors?.[0].extensions?.code).toBe('InvalidRequest');
    expect((await t.gql(PRODUCTS, { after: 'not-a-cursor' }, { token })).errors?.[0].extensions?.code).toBe('InvalidRequest');
  });
});

const PAGE = 'totalCount edges { cursor node { id } } pageInfo { startCursor endCursor hasNextPage hasPreviousPage }';
interface Connection {
  totalCount: number;
  edges: { cursor: string; node: { id: string } }[];
  pageInfo: { startCursor: string | null; endCursor: string | null; hasNextPage: boolean; hasPreviousPage: boolean };
}
const ids = (connection: Connection) => connection.edges.map((edge) => edge.node.id);

/**
 * Pages a keyset list forward to its end (first/after), then backward from its end (last/before), checking the
 * pageInfo of every page; returns the ids of both walks (display order) and the number of pages.
 */
async function walkBothWays(query: string, pick: (data: any) => Connection, variables: Record<string, unknown>, size: number) {
  const get = async (page: Record<string, unknown>) => pick(await ok(query, { ...variables, ...page }));
  const forward: string[] = [];
  let totalCount: number | undefined;
  let pages = 0;
  for (let after: string | null = null; ; ) {
    const page = await get({ first: size, after });
    totalCount ??= page.totalCount;
    expect(page.totalCount).toBe(totalCount);
    expect(page.pageInfo).toMatchObject({ hasPreviousPage: after !== null, startCursor: page.edges[0]?.cursor ?? null, endCursor: page.edges.at(-1)?.cursor ?? null });
    forward.push(...ids(page));
    pages++;
    if (!page.pageInfo.hasNextPage) break;
    expect(page.edges).toHaveLength(size);
    after = page.pageInfo.endCursor;
  }
  const backward: string[] = [];
  for (let before: string | null = null; ; ) {
    const page = await get({ last: size, before });
    expect(page.totalCount).toBe(totalCount);
    expect(page.pageInfo).toMatchObject({ hasNextPage: before !== null, startCursor: page.edges[0]?.cursor ?? null, endCursor: page.edges.at(-1)?.cursor ?? null });
    backward.unshift(...ids(page));
    if (!page.pageInfo.hasPreviousPage) break;
    expect(page.edges).toHaveLength(size);
    before = page.pageInfo.startCursor;
  }
  expect(forward).toHaveLength(totalCount!);
  expect(new Set(forward).size).toBe(forward.length);
  return { forward, backward, pages };
}

describe('large lists (keyset pages, both directions)', () => {
  const LICENSES = `query($first: Int, $after: String, $last: Int, $before: String, $filter: LicenseFilter) {
    licenses(first: $first, after: $after, last: $last, before: $before, filter: $filter) { ${PAGE} }
  }`;
  const licenses = (data: any) => data.licenses as Connection;
  let bravoId: string;
  let licenseId: string;

  beforeAll(async () => {
    // Bravo: 11 licenses in three creation instants (ties broken by id), two of them revoked.
    const bravo = await t.prisma.product.findFirstOrThrow({ where: { tenantId, name: 'Bravo' } });
    bravoId = bravo.id;
    for (let i = 0; i < 11; i++) {
      if (i % 4 === 0) t.clock.advance(60_000);
      const { license } = await t.seedLicense(tenantId, bravo.id, { customerEmail: `buyer${i}@${i % 2 ? 'odd' : 'even'}.test` });
      if (i === 3 || i === 8) await t.prisma.license.update({ where: { id: license.id }, data: { status: 'revoked', revokedAt: t.clock.now() } });
      licenseId = license.id;
    }
    // One license with 9 activations (four share a creation time), and 9 emails in two batches and two kinds.
    const base = t.clock.now().getTime();
    await t.prisma.activation.createMany({
      data: Array.from({ length: 9 }, (_, i) => ({ tenantId, licenseId, deviceId: `device-${i}`, createdAt: new Date(base - (i < 4 ? 0 : i) * 1000) })),
    });
    const email = (i: number) => ({ tenantId, kind: i % 3 ? ('weekly-digest' as const) : ('test' as const), idempotencyKey: `paging:${i}`, to: `to${i}@acme.test`, subject: `#${i}`, html: '<p>x</p>', text: 'x' });
    await enqueueEmails(t.prisma, [0, 1, 2, 3, 4].map(email), t.clock.now());
    await enqueueEmails(t.prisma, [5, 6, 7, 8].map(email), new Date(base + 1000));
  });

  it("every edge's cursor continues after that edge (forward) and before it (backward)", async () => {
    const all = (await ok(LICENSES, { first: 5, filter: { productId: alphaId } })).licenses as Connection;
    expect(all.totalCount).toBe(5);
    expect(all.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false, endCursor: all.edges[4].cursor });
    const rest = (await ok(LICENSES, { first: 5, after: all.edges[1].cursor, filter: { productId: alphaId } })).licenses as Connection;
    expect(ids(rest)).toEqual(ids(all).slice(2));
    expect(rest.pageInfo.hasPreviousPage).toBe(true);
    const before = (await ok(LICENSES, { last: 2, before: all.edges[3].cursor, filter: { productId: alphaId } })).licenses as Connection;
    expect(ids(before)).toEqual(ids(all).slice(1, 3));
    expect(before.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: true, startCursor: all.edges[1].cursor, endCursor: all.edges[2].cursor });
    const head = (await ok(LICENSES, { last: 5, before: all.edges[1].cursor, filter: { productId: alphaId } })).licenses as Connection;
    expect(ids(head)).toEqual(ids(all).slice(0, 1));
    expect(head.pageInfo).toMatchObject({ hasPreviousPage: false, hasNextPage: true });
    const tail = (await ok(LICENSES, { last: 2, filter: { productId: alphaId } })).licenses as Connection;
    expect(ids(tail)).toEqual(ids(all).slice(3));
    expect(tail.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
  });

  it('licenses: the same rows in the same order both ways, unfiltered and filtered (product, status, search)', async () => {
    const everything = await walkBothWays(LICENSES, licenses, {}, 3);
    expect(everything.forward).toHaveLength(16);
    expect(everything.backward).toEqual(everything.forward);
    const newestFirst = await t.prisma.license.findMany({ where: { tenantId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], select: { id: true } });
    expect(everything.forward).toEqual(newestFirst.map((row) => row.id));
    for (const filter of [{ productId: bravoId }, { productId: bravoId, status: 'ACTIVE' }, { status: 'REVOKED' }, { search: 'odd.test' }, { search: 'BUYER1' }]) {
      const walked = await walkBothWays(LICENSES, licenses, { filter }, 2);
      expect(walked.backward, JSON.stringify(filter)).toEqual(walked.forward);
    }
    expect((await walkBothWays(LICENSES, licenses, { filter: { productId: bravoId, status: 'ACTIVE' } }, 2)).forward).toHaveLength(9);
    expect((await walkBothWays(LICENSES, licenses, { filter: { search: 'odd.test' } }, 2)).forward).toHaveLength(5);
  });

  it('License.activations: both ways, ties on the creation time broken by id', async () => {
    const ACTIVATIONS = `query($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
      license(id: $id) { activations(first: $first, after: $after, last: $last, before: $before) { ${PAGE} } }
    }`;
    const walked = await walkBothWays(ACTIVATIONS, (data) => data.license.activations, { id: licenseId }, 2);
    expect(walked.forward).toHaveLength(9);
    expect(walked.backward).toEqual(walked.forward);
    const newestFirst = await t.prisma.activation.findMany({ where: { licenseId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], select: { id: true } });
    expect(walked.forward).toEqual(newestFirst.map((row) => row.id));
  });

  it('activityLog: both ways, with an action filter, a date range and an entity text filter', async () => {
    const ACTIVITY = `query($first: Int, $after: String, $last: Int, $before: String, $filter: ActivityFilter) {
      activityLog(first: $first, after: $after, last: $last, before: $before, filter: $filter) { ${PAGE} }
    }`;
    const activity = (data: any) => data.activityLog as Connection;
    const everything = await walkBothWays(ACTIVITY, activity, {}, 4);
    expect(everything.backward).toEqual(everything.forward);
    const licensesCreated = await walkBothWays(ACTIVITY, activity, { filter: { action: 'CREATE_LICENSE' } }, 3);
    expect(licensesCreated.forward).toHaveLength(16);
    expect(licensesCreated.backward).toEqual(licensesCreated.forward);
    const from = new Date(Date.parse('2026-06-01T12:00:00.000Z') + 60_000).toISOString();
    const since = await walkBothWays(ACTIVITY, activity, { filter: { action: 'CREATE_LICENSE', from } }, 3);
    expect(since.forward).toHaveLength(11);
    expect(since.backward).toEqual(since.forward);
    const text = await walkBothWays(ACTIVITY, activity, { filter: { entity: 'Bravo' } }, 3);
    expect(text.forward.length).toBeGreaterThan(3);
    expect(text.backward).toEqual(text.forward);
  });

  it('emails: both ways, with a kind filter', async () => {
    const EMAILS = `query($first: Int, $after: String, $last: Int, $before: String, $kind: EmailKind) {
      emails(first: $first, after: $after, last: $last, before: $before, kind: $kind) { ${PAGE} }
    }`;
    const emails = (data: any) => data.emails as Connection;
    const everything = await walkBothWays(EMAILS, emails, {}, 2);
    expect(everything.forward).toHaveLength(9);
    expect(everything.backward).toEqual(everything.forward);
    const digests = await walkBothWays(EMAILS, emails, { kind: 'WEEKLY_DIGEST' }, 2);
    expect(digests.forward).toHaveLength(6);
    expect(digests.backward).toEqual(digests.forward);
  });

  it('mixing the directions, a bad size or a foreign cursor is InvalidRequest naming the argument', async () => {
    const first = (await ok(LICENSES, { first: 2 })).licenses as Connection;
    const refused = async (variables: Record<string, unknown>, field: string) => {
      const response = await t.gql(LICENSES, variables, { token });
      expect(response.errors?.[0].extensions, JSON.stringify(variables)).toMatchObject({ code: 'InvalidRequest', fields: { [field]: expect.any(String) } });
    };
    await refused({ first: 2, last: 2 }, 'last');
    await refused({ first: 2, before: first.pageInfo.endCursor }, 'before');
    await refused({ last: 2, after: first.pageInfo.endCursor }, 'last');
    await refused({ last: 0 }, 'last');
    await refused({ last: 101 }, 'last');
    await refused({ last: 2, before: 'not-a-cursor' }, 'before');
    const response = await t.gql(LICENSES, { first: 2, last: 2 }, { token });
    expect(response.errors?.[0].message).toMatch(/first\/after.*last\/before/);
  });

  it('a cursor of the right shape that PostgreSQL cannot compare (year 0, a negative year, a sequence past int4) is InvalidRequest naming the argument', async () => {
    const cursor = (key: unknown[]) => Buffer.from(JSON.stringify(key)).toString('base64url');
    const id = '00000000-0000-4000-8000-000000000000';
    const lists: [string, Record<string, unknown>, unknown[][]][] = [
      ['query($after: String) { licenses(first: 2, after: $after) { totalCount } }', {}, [['0000-01-01T00:00:00Z', id], ['-000001-01-01T00:00:00Z', id]]],
      ['query($after: String, $filter: LicenseFilter) { licenses(first: 2, after: $after, filter: $filter) { totalCount } }', { filter: { search: 'odd.test' } }, [['0000-01-01T00:00:00Z', id]]],
      ['query($id: ID!, $after: String) { license(id: $id) { activations(first: 2, after: $after) { totalCount } } }', { id: licenseId }, [['0000-01-01T00:00:00Z', id]]],
      ['query($after: String) { emails(first: 2, after: $after) { totalCount } }', {}, [['0000-01-01T00:00:00Z', id]]],
      ['query($after: String) { webhookEndpoints(first: 2, after: $after) { totalCount } }', {}, [['0000-01-01T00:00:00Z', id]]],
      ['query($after: String) { activityLog(first: 2, after: $after) { totalCount } }', {}, [[2 ** 31], [2 ** 53]]],
      ['query($after: String, $filter: ActivityFilter) { activityLog(first: 2, after: $after, filter: $filter) { totalCount } }', { filter: { entity: 'Bravo' } }, [[2 ** 31]]],
    ];
    for (const [query, variables, keys] of lists) {
      for (const key of keys) {
        const response = await t.gql(query, { ...variables, after: cursor(key) }, { token });
        expect(response.errors?.[0].extensions, `${query.slice(0, 60)} ${JSON.stringify(key)}`).toMatchObject({ code: 'InvalidRequest', fields: { after: 'invalid cursor' } });
      }
    }
    // The largest sequence PostgreSQL holds is still a cursor.
    expect((await t.gql(lists[5][0], { after: cursor([2 ** 31 - 1]) }, { token })).errors).toBeUndefined();
  });
});

describe('one vendor word', () => {
  it('the company settings entry reads entityType Company, and filters by it', async () => {
    await ok('mutation { updateCompanySettings(input: { supportEmail: "help@acme.test" }) { company { supportEmail } } }');
    const log = (await ok('{ activityLog(filter: { entityType: "Company" }) { nodes { action entityType entity } } }')).activityLog;
    expect(log.nodes).toEqual([{ action: 'UPDATE_COMPANY_SETTINGS', entityType: 'Company', entity: 'Acme Corp' }]);
  });
});
