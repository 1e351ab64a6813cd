import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/harness.js';

// Relay connections over the services' lists: edge cursors, both directions on the small lists, forward-only keyset
// pages on the large ones; and the one vendor word (company) over the activity log's stored entity type.
let t: TestApp;
let token: string;
let tenantId: string;

async function ok(query: string, variables: Record<string, unknown> = {}) {
  const response = await t.gql(query, variables, { token });
  if (response.errors) throw new Error(JSON.stringify(response.errors));
  return response.data;
}

beforeAll(async () => {
  t = await startTestApp();
  const admin = await t.setupAdmin();
  token = admin.token;
  tenantId = admin.user.tenantId;
  for (const name of ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo']) {
    const product = await t.seedProduct(tenantId, name);
    if (name === 'Alpha') for (let i = 0; i < 5; i++) await t.seedLicense(tenantId, product.id);
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

describe('large lists (keyset pages)', () => {
  const LICENSES = `query($first: Int, $after: String, $last: Int, $before: String) {
    licenses(first: $first, after: $after, last: $last, before: $before) { totalCount edges { cursor node { id } } pageInfo { endCursor hasNextPage hasPreviousPage } }
  }`;

  it("every edge's cursor continues after that edge", async () => {
    const all = (await ok(LICENSES, { first: 5 })).licenses;
    expect(all.totalCount).toBe(5);
    expect(all.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false, endCursor: all.edges[4].cursor });
    const ids = all.edges.map((edge: { node: { id: string } }) => edge.node.id);
    const rest = (await ok(LICENSES, { first: 5, after: all.edges[1].cursor })).licenses;
    expect(rest.edges.map((edge: { node: { id: string } }) => edge.node.id)).toEqual(ids.slice(2));
    expect(rest.pageInfo.hasPreviousPage).toBe(true);
  });

  it('last/before are refused with a field error (these lists page forward from the newest)', async () => {
    const response = await t.gql(LICENSES, { last: 2 }, { token });
    expect(response.errors?.[0].extensions).toMatchObject({ code: 'InvalidRequest', fields: { last: expect.any(String) } });
  });
});

describe('one vendor word', () => {
  it('the company settings entry reads entityType Company, and filters by it', async () => {
    await ok('mutation { updateCompanySettings(input: { supportEmail: "help@acme.test" }) { company { supportEmail } } }');
    const log = (await ok('{ activityLog(filter: { entityType: "Company" }) { nodes { action entityType entity } } }')).activityLog;
    expect(log.nodes).toEqual([{ action: 'UPDATE_COMPANY_SETTINGS', entityType: 'Company', entity: 'Acme Corp' }]);
  });
});
