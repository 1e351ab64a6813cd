// Release management through GraphQL as the console calls it, on real PostgreSQL over real HTTP: updateRelease
// (channel and notes change, the version does not), the release(id) query, deleteRelease and deleteArtifact (drafts
// only; the stored file leaves DATA_DIR), publishRelease refused without artifacts, a read-only member or key refused
// every mutation, another company's ids answered as if they did not exist, the webhook deliveries queued for
// release.published and release.yanked, and the activity-log entries of each change. The releases list: keyset
// pages in semantic-version order both ways, by channel and status, its sort key equal to semantic-version
// precedence (fast-check) and to the key the migration computed for the releases that existed before it.
import { access, readdir, readFile } from 'node:fs/promises';
import fc from 'fast-check';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeVersion, versionOrder } from '../server/src/services/releases/model.js';
import { bySemverDescending } from '../server/src/services/releases/releases.js';
import { createWebhookEndpoint } from '../server/src/services/webhooks/endpoints.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { adminContext, seedTwoTenants, type SeededTenant } from './support/tenants.js';

let t: TestApp;
let A: SeededTenant;
let B: SeededTenant;
const clock = new TestClock();
let endpointId: string;

const RELEASE_FIELDS = 'id productId version channel status notes publishedAt yankedAt artifacts { id filename size }';
type Auth = { token?: string; apiKey?: string };
const admin = (): Auth => ({ token: A.admin.token });

const gql = (query: string, variables: Record<string, unknown>, auth: Auth = admin()) => t.gql(query, variables, auth);
const create = async (version: string, auth: Auth = admin()) =>
  (await t.gqlData(`mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { ${RELEASE_FIELDS} } } }`, { input: { productId: A.product!.id, version, notes: 'First notes.' } }, auth)).createRelease.release as { id: string; version: string };
const update = (input: Record<string, unknown>, auth?: Auth) => gql(`mutation($input: UpdateReleaseInput!) { updateRelease(input: $input) { release { ${RELEASE_FIELDS} } } }`, { input }, auth);
const publish = (id: string, auth?: Auth) => gql(`mutation($input: PublishReleaseInput!) { publishRelease(input: $input) { release { ${RELEASE_FIELDS} } } }`, { input: { id } }, auth);
const yank = (id: string, auth?: Auth) => gql(`mutation($input: YankReleaseInput!) { yankRelease(input: $input) { release { ${RELEASE_FIELDS} } } }`, { input: { id } }, auth);
const deleteRelease = (id: string, auth?: Auth) => gql('mutation($input: DeleteReleaseInput!) { deleteRelease(input: $input) { deletedReleaseId } }', { input: { id } }, auth);
const deleteArtifact = (id: string, auth?: Auth) => gql('mutation($input: DeleteArtifactInput!) { deleteArtifact(input: $input) { deletedArtifactId } }', { input: { id } }, auth);
const fetchRelease = (id: string, auth?: Auth) => gql(`query($id: ID!) { release(id: $id) { ${RELEASE_FIELDS} } }`, { id }, auth);
const code = (response: { errors?: { extensions?: { code?: string } }[] }) => response.errors?.[0]?.extensions?.code;

/** Streams a file into a draft (the staff upload route, as the CLI does). */
async function upload(releaseId: string, filename: string, bytes = Buffer.from(`MZ ${filename}`)) {
  const response = await fetch(`${t.baseUrl}/api/releases/${releaseId}/artifacts?${new URLSearchParams({ filename, platform: 'win32', arch: 'x64' })}`, {
    method: 'PUT',
    body: new Uint8Array(bytes),
    headers: { 'x-api-key': A.adminKey.key, 'content-type': 'application/octet-stream' },
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as { id: string };
}
const storedFile = async (artifactId: string) => {
  const row = await t.prisma.releaseArtifact.findUniqueOrThrow({ where: { id: artifactId } });
  return path.join(t.deps.config.dataDir, 'releases', ...row.storageKey.split('/'));
};
/** A row as text (artifact sizes are BigInt). */
const asText = (value: unknown) => JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v));
const exists = (file: string) => access(file).then(() => true, () => false);
const auditActions = async (entityId: string) => (await t.prisma.auditLogEntry.findMany({ where: { tenantId: A.tenantId, entityId }, orderBy: { seq: 'asc' } })).map((entry) => entry.action);

beforeAll(async () => {
  t = await startTestApp({ clock });
  ({ A, B } = await seedTwoTenants(t));
  // An endpoint subscribed to the release events (no delivery job runs in the test app: the rows stay queued).
  endpointId = (await createWebhookEndpoint(adminContext(t, A), { url: 'https://hooks.acme.test/keyforge', eventTypes: ['release.published', 'release.yanked'] }, { allowPrivate: true })).endpoint.id;
});
afterAll(async () => {
  await t?.close();
});

describe('updateRelease and release(id)', () => {
  it('changes notes and channel, keeps the version, and logs the change', async () => {
    const release = await create('1.0.0');
    const updated = await update({ id: release.id, notes: 'Better notes.', channel: 'BETA' });
    expect(updated.errors).toBeUndefined();
    expect(updated.data.updateRelease.release).toMatchObject({ id: release.id, version: '1.0.0', notes: 'Better notes.', channel: 'BETA', status: 'DRAFT' });
    // The version is not an input field: GraphQL refuses the document, nothing changes.
    const versioned = await update({ id: release.id, version: '9.9.9' });
    expect(versioned.errors?.length).toBeGreaterThan(0);
    const read = await fetchRelease(release.id);
    expect(read.data.release).toMatchObject({ id: release.id, productId: A.product!.id, version: '1.0.0', notes: 'Better notes.', channel: 'BETA', artifacts: [] });
    // A read-only member reads it too.
    expect((await fetchRelease(release.id, { token: A.readOnly.token })).data.release.id).toBe(release.id);
    expect(await auditActions(release.id)).toEqual(['CreateRelease', 'UpdateRelease']);
    const entry = await t.prisma.auditLogEntry.findFirstOrThrow({ where: { tenantId: A.tenantId, entityId: release.id, action: 'UpdateRelease' } });
    expect(entry.actor).toBe(A.admin.email);
    expect(JSON.stringify(entry.details)).toContain('Better notes.');
  });

  it('release(id) is null for an unknown id, a malformed id and another company\'s release', async () => {
    const theirs = await t.gqlData(`mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { id } } }`, { input: { productId: B.product!.id, version: '1.0.0' } }, { token: B.admin.token });
    const bId = theirs.createRelease.release.id as string;
    for (const id of [bId, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const response = await fetchRelease(id);
      expect(response.errors, id).toBeUndefined();
      expect(response.data.release, id).toBeNull();
    }
  });
});

describe('publish, yank and delete', () => {
  it('publishRelease without artifacts is refused (Conflict), the release stays a draft', async () => {
    const release = await create('2.0.0');
    const response = await publish(release.id);
    expect(code(response)).toBe('Conflict');
    expect(response.errors![0].message).toContain('at least one artifact');
    expect((await fetchRelease(release.id)).data.release.status).toBe('DRAFT');
    expect(await t.prisma.webhookEvent.count({ where: { tenantId: A.tenantId, type: 'release.published' } })).toBe(0);
  });

  it('deleteArtifact removes a draft\'s artifact and its file in DATA_DIR; deleteRelease removes a draft and its files', async () => {
    const release = await create('3.0.0');
    const first = await upload(release.id, 'one.exe');
    const second = await upload(release.id, 'two.exe');
    const firstFile = await storedFile(first.id);
    const secondFile = await storedFile(second.id);
    expect(await exists(firstFile)).toBe(true);

    const removed = await deleteArtifact(first.id);
    expect(removed.errors).toBeUndefined();
    expect(removed.data.deleteArtifact.deletedArtifactId).toBe(first.id);
    expect(await exists(firstFile)).toBe(false);
    expect(await t.prisma.releaseArtifact.count({ where: { id: first.id } })).toBe(0);
    expect((await fetchRelease(release.id)).data.release.artifacts.map((a: { filename: string }) => a.filename)).toEqual(['two.exe']);
    expect(code(await deleteArtifact(first.id))).toBe('NotFound');

    const gone = await deleteRelease(release.id);
    expect(gone.errors).toBeUndefined();
    expect(gone.data.deleteRelease.deletedReleaseId).toBe(release.id);
    expect(await exists(secondFile)).toBe(false);
    expect((await fetchRelease(release.id)).data.release).toBeNull();
    expect(await t.prisma.releaseArtifact.count({ where: { releaseId: release.id } })).toBe(0);
    // Nothing of the release is left under its directory.
    const releaseDir = path.dirname(secondFile);
    expect(await readdir(releaseDir).catch(() => [])).toEqual([]);
    expect(await auditActions(release.id)).toEqual(['CreateRelease', 'UploadArtifact', 'UploadArtifact', 'DeleteArtifact', 'DeleteRelease']);
  });

  it('publish and yank queue one delivery each for the subscribed endpoint; a published release is neither deleted nor loses files', async () => {
    const release = await create('4.0.0');
    const artifact = await upload(release.id, 'four.exe');
    const file = await storedFile(artifact.id);

    const published = await publish(release.id);
    expect(published.errors).toBeUndefined();
    expect(published.data.publishRelease.release).toMatchObject({ status: 'PUBLISHED', publishedAt: clock.now().toISOString() });

    // Published: deleting it or its artifact is refused, the file stays.
    const refusedDelete = await deleteRelease(release.id);
    expect(code(refusedDelete)).toBe('Conflict');
    expect(refusedDelete.errors![0].message).toContain('yank it instead');
    expect(code(await deleteArtifact(artifact.id))).toBe('Conflict');
    expect(await exists(file)).toBe(true);
    expect(code(await publish(release.id))).toBe('Conflict');

    clock.advance(60_000);
    const yanked = await yank(release.id);
    expect(yanked.errors).toBeUndefined();
    expect(yanked.data.yankRelease.release).toMatchObject({ status: 'YANKED', yankedAt: clock.now().toISOString() });
    expect(code(await yank(release.id))).toBe('Conflict');
    expect(code(await deleteRelease(release.id))).toBe('Conflict');
    // A yanked release can no longer be edited.
    expect(code(await update({ id: release.id, notes: 'late' }))).toBe('Conflict');

    const deliveries = await t.prisma.webhookDelivery.findMany({ where: { endpointId }, include: { event: true }, orderBy: { createdAt: 'asc' } });
    expect(deliveries.map((delivery) => [delivery.event.type, delivery.status, delivery.tenantId])).toEqual([
      ['release.published', 'pending', A.tenantId],
      ['release.yanked', 'pending', A.tenantId],
    ]);
    for (const delivery of deliveries) {
      const body = JSON.parse(delivery.event.body);
      expect(body).toMatchObject({ type: delivery.event.type, tenantId: A.tenantId, data: { releaseId: release.id, productId: A.product!.id, productName: A.product!.name, version: '4.0.0', channel: 'stable' } });
      expect(body.data.artifacts).toEqual([expect.objectContaining({ artifactId: artifact.id, filename: 'four.exe' })]);
      // Never a storage key in what leaves the server.
      expect(delivery.event.body).not.toContain('storageKey');
      expect(delivery.event.body).not.toContain(A.tenantId + '/');
    }
    expect(JSON.parse(deliveries[0].event.body).data.status).toBe('published');
    expect(JSON.parse(deliveries[1].event.body).data.status).toBe('yanked');
    expect(await auditActions(release.id)).toEqual(['CreateRelease', 'UploadArtifact', 'PublishRelease', 'YankRelease']);
  });
});

describe('refusals', () => {
  it('a read-only member and a read-only API key are refused every mutation (Forbidden), changing nothing', async () => {
    const release = await create('5.0.0');
    const artifact = await upload(release.id, 'five.exe');
    const snapshot = async () => JSON.stringify([await t.prisma.release.findMany({ where: { tenantId: A.tenantId }, orderBy: { id: 'asc' } }), await t.prisma.releaseArtifact.count(), await t.prisma.auditLogEntry.count(), await t.prisma.webhookEvent.count()]);
    const before = await snapshot();
    for (const auth of [{ token: A.readOnly.token }, { apiKey: A.readOnlyKey.key }]) {
      const createResponse = await gql('mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { id } } }', { input: { productId: A.product!.id, version: '5.1.0' } }, auth);
      const outcomes = {
        createRelease: code(createResponse),
        updateRelease: code(await update({ id: release.id, notes: 'sneaky' }, auth)),
        publishRelease: code(await publish(release.id, auth)),
        yankRelease: code(await yank(release.id, auth)),
        deleteArtifact: code(await deleteArtifact(artifact.id, auth)),
        deleteRelease: code(await deleteRelease(release.id, auth)),
      };
      expect(outcomes, JSON.stringify(auth)).toEqual({ createRelease: 'Forbidden', updateRelease: 'Forbidden', publishRelease: 'Forbidden', yankRelease: 'Forbidden', deleteArtifact: 'Forbidden', deleteRelease: 'Forbidden' });
    }
    expect(await snapshot()).toBe(before);
    expect(await exists(await storedFile(artifact.id))).toBe(true);
  });

  it("another company's admin gets NotFound for every mutation on A's ids, with nothing about them in the answer", async () => {
    const release = await create('6.0.0');
    const artifact = await upload(release.id, 'six.exe');
    const before = asText(await t.prisma.release.findUniqueOrThrow({ where: { id: release.id }, include: { artifacts: true } }));
    for (const auth of [{ token: B.admin.token }, { apiKey: B.adminKey.key }]) {
      const answers = [
        await update({ id: release.id, notes: 'hijacked' }, auth),
        await publish(release.id, auth),
        await yank(release.id, auth),
        await deleteArtifact(artifact.id, auth),
        await deleteRelease(release.id, auth),
      ];
      expect(answers.map(code)).toEqual(['NotFound', 'NotFound', 'NotFound', 'NotFound', 'NotFound']);
      for (const answer of answers) {
        const text = JSON.stringify(answer.errors);
        for (const secret of ['6.0.0', 'six.exe', A.product!.name, A.tenantId]) expect(text).not.toContain(secret);
      }
      expect((await fetchRelease(release.id, auth)).data.release).toBeNull();
      // Nor may B create a release of A's product.
      const createResponse = await gql('mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { id } } }', { input: { productId: A.product!.id, version: '6.1.0' } }, auth);
      expect(code(createResponse)).toBe('NotFound');
    }
    expect(asText(await t.prisma.release.findUniqueOrThrow({ where: { id: release.id }, include: { artifacts: true } }))).toBe(before);
    expect(await exists(await storedFile(artifact.id))).toBe(true);
  });
});

describe('releases(productId): pages in semantic-version order', () => {
  const LIST = `query($productId: ID!, $first: Int, $after: String, $last: Int, $before: String, $channel: ReleaseChannel, $status: ReleaseStatus) {
    releases(productId: $productId, first: $first, after: $after, last: $last, before: $before, channel: $channel, status: $status) {
      totalCount totalCountCapped pageInfo { startCursor endCursor hasNextPage hasPreviousPage } nodes { version channel status }
    } }`;
  type Listed = { totalCount: number; pageInfo: { startCursor: string | null; endCursor: string | null; hasNextPage: boolean; hasPreviousPage: boolean }; nodes: { version: string; channel: string; status: string }[] };
  const list = async (variables: Record<string, unknown>, auth: Auth = admin()) => (await t.gqlData(LIST, variables, auth)).releases as Listed;
  // Numbers compared as numbers, prereleases before their release, numeric identifiers before alphanumeric ones, fewer identifiers first.
  const VERSIONS = ['1.0.0', '1.2.0', '1.10.0', '1.9.0', '2.0.0-0', '2.0.0-alpha', '2.0.0-alpha.1', '2.0.0-alpha.beta', '2.0.0-beta', '2.0.0-beta.2', '2.0.0-beta.11', '2.0.0-rc.1', '2.0.0', '10.0.0', '9.99.999', '0.0.1', '1.0.0-x-y', '1.0.0-x', ...Array.from({ length: 30 }, (_, i) => `3.${i}.${i % 4}`)];
  const expected = [...VERSIONS].sort((a, b) => bySemverDescending({ version: a }, { version: b }));
  let productId: string;

  beforeAll(async () => {
    productId = (await t.gqlData('mutation($input: CreateProductInput!) { createProduct(input: $input) { product { id } } }', { input: { name: 'Paged Studio' } }, admin())).createProduct.product.id;
    // Created in an order unlike the list's, some on the beta channel.
    for (const [index, version] of [...VERSIONS].reverse().entries()) {
      await t.gqlData('mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { id } } }', { input: { productId, version, channel: index % 3 === 0 ? 'BETA' : 'STABLE' } }, admin());
    }
  });

  it('walks every release forward and backward, a page at a time, in semantic-version order', async () => {
    const forward: string[] = [];
    let after: string | null = null;
    for (let pages = 0; ; pages++) {
      const page: Listed = await list({ productId, first: 7, after });
      expect(page.totalCount).toBe(VERSIONS.length);
      expect(page.pageInfo.hasPreviousPage).toBe(after !== null);
      forward.push(...page.nodes.map((node) => node.version));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
      expect(pages).toBeLessThan(10);
    }
    expect(forward).toEqual(expected);
    const backward: string[] = [];
    let before: string | null = null;
    do {
      const page: Listed = await list({ productId, last: 9, before });
      backward.unshift(...page.nodes.map((node) => node.version));
      before = page.pageInfo.hasPreviousPage ? page.pageInfo.startCursor : null;
    } while (before);
    expect(backward).toEqual(expected);
    // Twenty by default; a read-only member reads the same list.
    expect((await list({ productId })).nodes.map((node) => node.version)).toEqual(expected.slice(0, 20));
    for (const auth of [{ token: A.readOnly.token }, { apiKey: A.readOnlyKey.key }]) expect((await list({ productId, first: 5 }, auth)).nodes.map((node) => node.version)).toEqual(expected.slice(0, 5));
  });

  it('narrows by channel and status, counting only the matches', async () => {
    const betas = [...VERSIONS].reverse().filter((_, index) => index % 3 === 0);
    const page = await list({ productId, channel: 'BETA', first: 100 });
    expect(page.nodes.map((node) => node.version)).toEqual(expected.filter((version) => betas.includes(version)));
    expect(page.totalCount).toBe(betas.length);
    const id = (await t.gqlData(LIST.replace('nodes { version', 'nodes { id version'), { productId, first: 1 }, admin())).releases.nodes[0].id as string;
    await upload(id, 'paged.exe');
    expect((await publish(id)).errors).toBeUndefined();
    const published = await list({ productId, status: 'PUBLISHED' });
    expect(published).toMatchObject({ totalCount: 1, nodes: [{ version: expected[0], status: 'PUBLISHED' }] });
    expect((await list({ productId, status: 'DRAFT', first: 100 })).totalCount).toBe(VERSIONS.length - 1);
    expect((await list({ productId, status: 'YANKED' })).nodes).toEqual([]);
  });

  it('refuses bad page arguments and cursors, and another company\'s product', async () => {
    const refusal = async (variables: Record<string, unknown>, auth: Auth = admin()) => code(await t.gql(LIST, { productId, ...variables }, auth));
    expect(await refusal({ first: 101 })).toBe('InvalidRequest');
    expect(await refusal({ first: 0 })).toBe('InvalidRequest');
    expect(await refusal({ first: 5, last: 5 })).toBe('InvalidRequest');
    for (const after of ['nope', Buffer.from('["ZZ"]').toString('base64url'), Buffer.from(JSON.stringify(["'; DROP TABLE releases; --"])).toString('base64url'), Buffer.from('[1]').toString('base64url')]) {
      expect(await refusal({ after })).toBe('InvalidRequest');
    }
    const answer = await t.gql(LIST, { productId, first: 5 }, { token: B.admin.token });
    expect(code(answer)).toBe('NotFound');
    expect(JSON.stringify(answer)).not.toContain('Paged Studio');
    expect(code(await t.gql(LIST, { productId: 'not-a-uuid' }, admin()))).toBe('NotFound');
  });

  it('the sort key orders any two versions as semantic-version precedence does', () => {
    const identifier = fc.oneof(fc.nat({ max: 10_000_000 }).map(String), fc.stringMatching(/^[0-9A-Za-z-]{0,6}[A-Za-z-][0-9A-Za-z-]{0,6}$/));
    const version = fc
      .tuple(fc.nat({ max: 1_000_000 }), fc.nat({ max: 1000 }), fc.nat({ max: 1000 }), fc.array(identifier, { maxLength: 4 }))
      .map(([major, minor, patch, pre]) => normalizeVersion(`${major}.${minor}.${patch}${pre.length ? `-${pre.join('.')}` : ''}`))
      .filter((v): v is string => v !== null);
    fc.assert(
      fc.property(version, version, (a, b) => {
        const bySemver = Math.sign(bySemverDescending({ version: b }, { version: a }));
        const byKey = Math.sign(versionOrder(a) < versionOrder(b) ? -1 : versionOrder(a) > versionOrder(b) ? 1 : 0);
        expect(byKey).toBe(bySemver);
      }),
      { numRuns: 2000 },
    );
  });

  it("the migration's key for the releases it found equals the application's", async () => {
    const sql = await readFile(path.join(import.meta.dirname, '../prisma/migrations/20261207010000_release_version_order/migration.sql'), 'utf8');
    const fn = sql.slice(sql.indexOf('CREATE FUNCTION'), sql.indexOf('$$;') + 3).replace('release_version_order_backfill', 'pg_temp.version_order_probe');
    const versions = [...VERSIONS, '0.0.0-0.a.00a.-', '12345678901234.0.1-Z.z.9999999999999999999'];
    const keys = await t.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(fn);
      return tx.$queryRawUnsafe<{ key: string }[]>('SELECT pg_temp.version_order_probe(v) AS key FROM unnest($1::text[]) WITH ORDINALITY AS u(v, n) ORDER BY n', versions);
    });
    expect(keys.map((row) => row.key)).toEqual(versions.map((v) => versionOrder(normalizeVersion(v)!)));
  });
});
