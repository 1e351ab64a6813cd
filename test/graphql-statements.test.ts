import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutageAwareClient } from '../server/src/db/pg-client.js';
import { startTestApp, type TestApp } from './support/harness.js';

// The SQL statements one GraphQL answer costs. Relations of the table-backed types (docs/integrate/management-api.md ›
// "Loading relations") are loaded by @pothos/plugin-prisma together with their parent rows: a page of licenses
// with their products, activations and counts is a fixed number of statements however many licenses it shows,
// where a resolver per row (an N+1) would add statements with every license.
let t: TestApp;
let token: string;
let endpointId: string;

/** Every statement the server sends to PostgreSQL while `run` runs (all go through OutageAwareClient.query). */
async function statementsOf(run: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const query = OutageAwareClient.prototype.query;
  OutageAwareClient.prototype.query = function (this: OutageAwareClient, ...args: any[]) {
    const text = typeof args[0] === 'string' ? args[0] : args[0]?.text;
    if (typeof text === 'string') seen.push(text);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    await run();
  } finally {
    OutageAwareClient.prototype.query = query;
  }
  // BEGIN/COMMIT and the like are not reads; what counts is each SELECT.
  return seen.filter((text) => /^\s*(WITH|SELECT)\b/i.test(text));
}

const PAGE = `query($first: Int) {
  licenses(first: $first) {
    totalCount totalCountCapped
    nodes {
      id keyHint status currentActivations remainingActivations
      product { id name }
      activations(first: 3) { totalCount totalCountCapped nodes { id deviceName active createdAt } pageInfo { hasNextPage endCursor } }
    }
  }
  products { nodes { id name licenseCount bundleMembers { id name } } }
}`;

beforeAll(async () => {
  t = await startTestApp();
  const admin = await t.setupAdmin();
  token = admin.token;
  const tenantId = admin.user.tenantId;
  const products = [await t.seedProduct(tenantId, 'Studio'), await t.seedProduct(tenantId, 'Render')];
  await t.seedProduct(tenantId, 'Suite', ['Studio', 'Render']);
  for (let i = 0; i < 50; i++) {
    const { license } = await t.seedLicense(tenantId, products[i % 2].id, { maxActivations: 10 });
    t.clock.advance(1_000);
    // Four activations each (a page of three shows hasNextPage), written directly: the protocol is not under test.
    await t.prisma.activation.createMany({
      data: [0, 1, 2, 3].map((n) => ({ tenantId, licenseId: license.id, deviceId: `device-${n}`, deviceName: `Device ${n}`, createdAt: new Date(t.clock.now().getTime() + n) })),
    });
    await t.prisma.license.update({ where: { id: license.id }, data: { currentActivations: 4 } });
  }
  // 50 invitations by the admin, 50 emails (half of them to the admin), 50 deliveries of one endpoint; written
  // directly: only their reading is under test.
  const stamp = (i: number) => new Date(t.clock.now().getTime() + i);
  await t.prisma.invitation.createMany({
    data: Array.from({ length: 50 }, (_, i) => ({ tenantId, email: `member${i}@acme.test`, role: 'ReadOnly' as const, tokenDigest: `digest-${i}`, expiresAt: new Date(t.clock.now().getTime() + 86_400_000), createdById: admin.user.id, createdAt: stamp(i) })),
  });
  await t.prisma.emailOutbox.createMany({
    data: Array.from({ length: 50 }, (_, i) => ({
      tenantId, kind: 'invitation', idempotencyKey: `statements:${i}`, toAddress: i % 2 ? admin.user.email : `member${i}@acme.test`, subject: `Email ${i}`,
      text: `Join: https://keyforge.test/accept-invite#token=kfi_secret${i}`, html: `<a href="https://keyforge.test/accept-invite#token=kfi_secret${i}">Join</a>`, status: 'sent' as const, createdAt: stamp(i),
    })),
  });
  const endpoint = await t.prisma.webhookEndpoint.create({ data: { tenantId, url: 'https://hooks.acme.test/keyforge', eventTypes: [], secretEncrypted: 'not read here' } });
  endpointId = endpoint.id;
  const events = Array.from({ length: 50 }, (_, i) => ({ id: randomUUID(), tenantId, type: i % 2 ? 'license.created' : 'license.revoked', body: '{}', createdAt: stamp(i) }));
  await t.prisma.webhookEvent.createMany({ data: events });
  const seq = (await t.prisma.auditLogEntry.count({ where: { tenantId } })) + 1;
  await t.prisma.auditLogEntry.createMany({
    data: Array.from({ length: 50 }, (_, i) => ({ tenantId, seq: seq + i, action: 'UpdateLicense', entityType: 'License', entity: `ACME-${i}`, actor: 'admin@acme.test', createdAt: stamp(i), prevHash: 'not verified here', hash: 'not verified here' })),
  });
  await t.prisma.webhookDelivery.createMany({ data: events.map((event, i) => ({ tenantId, eventId: event.id, endpointId, status: 'succeeded' as const, attempts: 1, createdAt: stamp(i) })) });
});
afterAll(() => t?.close());

describe('a licenses page with product, activations and counts', () => {
  it('costs the same statements for 5 licenses as for 50 (no statement per license)', async () => {
    let small: any;
    let large: any;
    const few = await statementsOf(async () => {
      small = await t.gqlData(PAGE, { first: 5 }, { token });
    });
    const many = await statementsOf(async () => {
      large = await t.gqlData(PAGE, { first: 50 }, { token });
    });
    expect(small.licenses.nodes).toHaveLength(5);
    expect(large.licenses.nodes).toHaveLength(50);
    expect(many.length, many.join('\n---\n')).toBe(few.length);
    // The caller's session (2); the licenses' count and page (2) with their products (1) and activations' pages and
    // counts (2); the products (1) with their rollup counts (1), bundle items (1) and the members' names (1).
    expect(many.length, many.join('\n---\n')).toBeLessThanOrEqual(11);
  });

  it('answers what the rows hold: each license its product and newest activations, capped counts', async () => {
    const { licenses, products } = await t.gqlData(PAGE, { first: 50 }, { token });
    expect(licenses).toMatchObject({ totalCount: 50, totalCountCapped: false });
    const newest = licenses.nodes[0];
    expect(newest.product.name).toBe('Render'); // the 50th license (index 49) is of the second product
    expect(newest).toMatchObject({ currentActivations: 4, remainingActivations: 6, status: 'ACTIVE' });
    expect(newest.activations).toMatchObject({ totalCount: 4, totalCountCapped: false, pageInfo: { hasNextPage: true } });
    expect(newest.activations.nodes.map((node: { deviceName: string }) => node.deviceName)).toEqual(['Device 3', 'Device 2', 'Device 1']);
    const rows = await t.prisma.license.findMany({ orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], select: { id: true, product: { select: { name: true } } } });
    expect(licenses.nodes.map((node: { id: string; product: { name: string } }) => [node.id, node.product.name])).toEqual(rows.map((row) => [row.id, row.product.name]));
    expect(Object.fromEntries(products.nodes.map((node: { name: string; licenseCount: number }) => [node.name, node.licenseCount]))).toEqual({ Render: 25, Studio: 25, Suite: 0 });
    expect(products.nodes.find((node: { name: string }) => node.name === 'Suite').bundleMembers.map((member: { name: string }) => member.name).sort()).toEqual(['Render', 'Studio']);
  });
});

const OTHER_LISTS = `query($first: Int, $endpointId: ID!) {
  invitations(first: $first) { nodes { id email invitedBy } }
  emails(first: $first) { nodes { id to subject textBody htmlBody } }
  webhookDeliveries(endpointId: $endpointId, first: $first) { nodes { id eventId eventType status } }
  activityLog(first: $first) { nodes { seq action entity entityType user timestamp } }
}`;

describe('invitations with their inviter, emails with their bodies, deliveries with their event type, activity entries', () => {
  it('cost the same statements for 5 rows as for 50 (no statement per row)', async () => {
    let small: any;
    let large: any;
    const few = await statementsOf(async () => {
      small = await t.gqlData(OTHER_LISTS, { first: 5, endpointId }, { token });
    });
    const many = await statementsOf(async () => {
      large = await t.gqlData(OTHER_LISTS, { first: 50, endpointId }, { token });
    });
    for (const list of ['invitations', 'emails', 'webhookDeliveries', 'activityLog']) {
      expect(small[list].nodes).toHaveLength(5);
      expect(large[list].nodes).toHaveLength(50);
    }
    expect(many.length, many.join('\n---\n')).toBe(few.length);
    // The caller's session (2); the invitations with their inviters (2); the emails' page and count (2); the
    // endpoint, the deliveries' page with their events and their count (4); the entries' page and count (2).
    expect(many.length, many.join('\n---\n')).toBeLessThanOrEqual(12);
  });

  it('answers what the rows hold: the inviter, the event type, the bodies with their tokens redacted', async () => {
    const { invitations, emails, webhookDeliveries } = await t.gqlData(OTHER_LISTS, { first: 50, endpointId }, { token });
    expect(new Set(invitations.nodes.map((node: { invitedBy: string }) => node.invitedBy))).toEqual(new Set(['admin@acme.test']));
    const events = new Map((await t.prisma.webhookEvent.findMany({ select: { id: true, type: true } })).map((event) => [event.id, event.type]));
    for (const delivery of webhookDeliveries.nodes) expect(delivery.eventType).toBe(events.get(delivery.eventId)!.replace('.', '_').toUpperCase());
    // Single-use tokens are redacted in every preview, the addressee's included.
    for (const email of emails.nodes) {
      expect(email.textBody).toContain('kfi_REDACTED');
      expect(email.htmlBody).toContain('kfi_REDACTED');
      expect(`${email.textBody}${email.htmlBody}`).not.toContain('kfi_secret');
    }
    expect(emails.nodes.filter((email: { to: string }) => email.to === 'admin@acme.test')).toHaveLength(25);
  });
});

describe('usage totals with their quotas', () => {
  it('answer each quota from the row usageTotals read: no statement to load it again', async () => {
    const { tenantId } = (await t.prisma.user.findFirstOrThrow({ where: { email: 'admin@acme.test' } }));
    const product = await t.seedProduct(tenantId, 'Metered');
    const { license } = await t.seedLicense(tenantId, product.id);
    await t.prisma.meterQuota.createMany({ data: Array.from({ length: 5 }, (_, i) => ({ licenseId: license.id, event: `event.n${i}`, period: 'day' as const, limit: 10 + i })) });
    const usage = (quota: string) => `query($id: ID!) { usageTotals(licenseId: $id, period: DAY) { totals { event total ${quota} } } }`;
    let answer: any;
    const without = await statementsOf(() => t.gqlData(usage(''), { id: license.id }, { token }));
    const withQuota = await statementsOf(async () => {
      answer = await t.gqlData(usage('quota { period limit }'), { id: license.id }, { token });
    });
    expect(answer.usageTotals.totals).toEqual(Array.from({ length: 5 }, (_, i) => ({ event: `event.n${i}`, total: 0, quota: { period: 'DAY', limit: 10 + i } })));
    expect(withQuota.length, withQuota.join('\n---\n')).toBe(without.length);
  });
});
