import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

// A Keygen account built from the object shapes Keygen's API serializers write (app/serializers/*_serializer.rb of
// keygen-api: camelCase attributes, relationships with { data: { type, id } } linkage, metadata, created/updated),
// and a tiny local server that serves it as Keygen does: list endpoints paged by page[number]/page[size] with
// links.self/next/prev/first/last, behind a bearer token. Deterministic for a seed: tests compare an import with it.

export interface KeygenResourceDoc {
  id: string;
  type: string;
  attributes: Record<string, unknown>;
  relationships: Record<string, unknown>;
  links: { self: string };
}

export interface FixtureAccount {
  accountId: string;
  lists: Record<'products' | 'policies' | 'entitlements' | 'users' | 'licenses' | 'machines', KeygenResourceDoc[]>;
  /** Entitlement ids of each policy. */
  policyEntitlements: Map<string, string[]>;
  /** What each license should be after an import: its key, product, features, seats, machines and Keygen status. */
  expected: { licenseId: string; key: string; productName: string; features: string[]; seats: number; machines: string[]; status: string; email: string | null }[];
}

export interface FixtureOptions {
  products?: number;
  policies?: number;
  licenses?: number;
  machines?: number;
  now?: Date;
  seed?: number;
}

/** Mulberry32: a small seeded generator, so a fixture is the same every run. */
function random(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const uuid = (rand: () => number) => {
  const hex = Array.from({ length: 32 }, () => Math.floor(rand() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
};
/** Keygen's default key format: six groups of six upper-case hex digits, then a version (…-V3). */
const keygenKey = (rand: () => number) =>
  `${Array.from({ length: 5 }, () => Array.from({ length: 6 }, () => Math.floor(rand() * 16).toString(16).toUpperCase()).join('')).join('-')}-V3`;

export const KEYGEN_STATUSES = ['ACTIVE', 'INACTIVE', 'EXPIRING', 'EXPIRED', 'SUSPENDED', 'BANNED'] as const;

/** The policies of the fixture, in turn per product: node-locked, floating, floating with 2× overage and heartbeats. */
const POLICY_KINDS = [
  { name: 'Node-locked', floating: false, maxMachines: 1, overage: 'NO_OVERAGE', duration: 31_536_000, heartbeat: false, seats: 1 },
  { name: 'Floating', floating: true, maxMachines: 5, overage: 'NO_OVERAGE', duration: null, heartbeat: false, seats: 5 },
  { name: 'Team', floating: true, maxMachines: 3, overage: 'ALLOW_2X_OVERAGE', duration: 2_592_000, heartbeat: true, seats: 6 },
];

export function buildKeygenAccount(options: FixtureOptions = {}): FixtureAccount {
  const { products: productCount = 3, policies: policyCount = 6, licenses: licenseCount = 300, machines: machineCount = 500, now = new Date(), seed = 1 } = options;
  const rand = random(seed);
  const accountId = uuid(rand);
  const at = (ms: number) => new Date(now.getTime() + ms).toISOString();
  const base = `/v1/accounts/${accountId}`;
  const relationship = (type: string, id: string | null, link: string) => ({ data: id ? { type, id } : null, links: { related: `${base}/${link}` } });
  const resource = (type: string, id: string, attributes: Record<string, unknown>, relationships: Record<string, unknown>): KeygenResourceDoc => ({
    id,
    type,
    attributes: { ...attributes, created: at(-400 * 86_400_000), updated: at(-86_400_000) },
    relationships: { account: relationship('accounts', accountId, ''), environment: { data: null }, ...relationships },
    links: { self: `${base}/${type}/${id}` },
  });

  const products = Array.from({ length: productCount }, (_, i) =>
    resource('products', uuid(rand), { name: `Keygen App ${i + 1}`, code: `app-${i + 1}`, distributionStrategy: 'LICENSED', url: null, platforms: null, permissions: [], metadata: {} }, {}),
  );
  const entitlements = ['SYNC', 'EXPORT', 'CLOUD', 'PRIORITY_SUPPORT'].map((code) =>
    resource('entitlements', uuid(rand), { name: code.replace('_', ' ').toLowerCase(), code, metadata: {} }, {}),
  );
  const policyEntitlements = new Map<string, string[]>();
  const policies = Array.from({ length: policyCount }, (_, i) => {
    const kind = POLICY_KINDS[i % POLICY_KINDS.length];
    const product = products[i % products.length];
    const policy = resource(
      'policies',
      uuid(rand),
      {
        name: `${kind.name} ${Math.floor(i / POLICY_KINDS.length) + 1}`,
        duration: kind.duration, strict: true, floating: kind.floating, usePool: false, maxMachines: kind.maxMachines, maxProcesses: null, maxUsers: null,
        maxCores: null, maxMemory: null, maxDisk: null, maxUses: null, machineUniquenessStrategy: 'UNIQUE_PER_LICENSE', machineMatchingStrategy: 'MATCH_ANY',
        componentUniquenessStrategy: 'UNIQUE_PER_MACHINE', componentMatchingStrategy: 'MATCH_ANY', expirationStrategy: 'RESTRICT_ACCESS',
        expirationBasis: 'FROM_CREATION', renewalBasis: 'FROM_EXPIRY', transferStrategy: 'KEEP_EXPIRY', authenticationStrategy: 'LICENSE',
        machineLeasingStrategy: 'PER_LICENSE', processLeasingStrategy: 'PER_MACHINE', overageStrategy: kind.overage, scheme: null, encrypted: false,
        protected: false, requireProductScope: false, requirePolicyScope: false, requireMachineScope: false, requireFingerprintScope: false,
        requireComponentsScope: false, requireUserScope: false, requireChecksumScope: false, requireVersionScope: false, requireCheckIn: false,
        checkInInterval: null, checkInIntervalCount: null, heartbeatDuration: kind.heartbeat ? 172_800 : null, heartbeatCullStrategy: 'DEACTIVATE_DEAD',
        heartbeatResurrectionStrategy: 'NO_REVIVE', heartbeatBasis: 'FROM_FIRST_PING', requireHeartbeat: kind.heartbeat, metadata: { tier: kind.name.toLowerCase() },
      },
      { product: relationship('products', product.id, `policies/x/product`), entitlements: { links: { related: `${base}/policies/x/entitlements` } } },
    );
    policyEntitlements.set(policy.id, entitlements.slice(0, 1 + (i % entitlements.length)).map((entitlement) => entitlement.id));
    return policy;
  });
  const users = Array.from({ length: Math.ceil(licenseCount / 2) }, (_, i) =>
    resource('users', uuid(rand), { fullName: `Customer ${i}`, firstName: 'Customer', lastName: String(i), email: `customer${i}@keygen-import.test`, status: 'ACTIVE', role: 'user', permissions: [], metadata: {} }, {}),
  );

  const licenses: KeygenResourceDoc[] = [];
  const expected: FixtureAccount['expected'] = [];
  for (let i = 0; i < licenseCount; i++) {
    const policyIndex = i % policies.length;
    const policy = policies[policyIndex];
    const kind = POLICY_KINDS[policyIndex % POLICY_KINDS.length];
    const status = KEYGEN_STATUSES[Math.floor(i / policies.length) % KEYGEN_STATUSES.length];
    const expiry =
      status === 'EXPIRED' ? at(-30 * 86_400_000) : status === 'EXPIRING' ? at(2 * 86_400_000) : kind.duration === null && status === 'ACTIVE' ? null : at(200 * 86_400_000);
    const owner = i % 3 === 2 ? null : users[i % users.length];
    const key = keygenKey(rand);
    const license = resource(
      'licenses',
      uuid(rand),
      {
        name: i % 4 === 0 ? `Seat pack ${i}` : null, key, expiry, status, uses: 0, suspended: status === 'SUSPENDED', scheme: null, encrypted: false,
        strict: true, floating: kind.floating, protected: false, version: null, maxMachines: kind.maxMachines, maxProcesses: null, maxUsers: null, maxCores: null,
        maxMemory: null, maxDisk: null, maxUses: null, requireHeartbeat: kind.heartbeat, requireCheckIn: false, lastValidated: at(-86_400_000),
        lastCheckIn: null, nextCheckIn: null, lastCheckOut: null, permissions: ['license.validate'], metadata: { orderId: `ord_${1000 + i}`, seatsBought: kind.maxMachines },
      },
      {
        product: relationship('products', (policy.relationships.product as { data: { id: string } }).data.id, 'licenses/x/product'),
        policy: relationship('policies', policy.id, 'licenses/x/policy'),
        group: { data: null },
        owner: relationship('users', owner?.id ?? null, 'licenses/x/owner'),
        users: { links: { related: `${base}/licenses/x/users` }, meta: { count: owner ? 1 : 0 } },
        machines: { links: { related: `${base}/licenses/x/machines` }, meta: { count: 0, cores: 0, memory: 0, disk: 0 } },
      },
    );
    licenses.push(license);
    const product = products.find((candidate) => candidate.id === (policy.relationships.product as { data: { id: string } }).data.id)!;
    const features = policyEntitlements.get(policy.id)!.map((id) => entitlements.find((entitlement) => entitlement.id === id)!.attributes.code as string).sort();
    expected.push({ licenseId: license.id, key, productName: product.attributes.name as string, features, seats: kind.seats, machines: [], status, email: owner ? (owner.attributes.email as string) : null });
  }

  // Machines: at most the license's seats, spread over the licenses in turn until machineCount are placed.
  const machines: KeygenResourceDoc[] = [];
  for (let round = 0; machines.length < machineCount && round < 100; round++) {
    for (let i = 0; i < licenses.length && machines.length < machineCount; i++) {
      const want = expected[i];
      if (want.machines.length >= Math.min(want.seats, POLICY_KINDS[(i % policies.length) % POLICY_KINDS.length].maxMachines)) continue;
      if (round === 0 && i % 5 === 4) continue; // some licenses without machines
      const fingerprint = `fp-${Array.from({ length: 24 }, () => Math.floor(rand() * 16).toString(16)).join('')}`;
      want.machines.push(fingerprint);
      const policyIndex = i % policies.length;
      machines.push(
        resource(
          'machines',
          uuid(rand),
          {
            fingerprint, cores: 8, memory: null, disk: null, ip: `203.0.113.${(i % 250) + 1}`, hostname: `host-${i}-${want.machines.length}`,
            platform: ['macOS', 'Windows', 'Linux'][i % 3], name: want.machines.length === 1 ? `Workstation ${i}` : null, requireHeartbeat: POLICY_KINDS[policyIndex % 3].heartbeat,
            heartbeatStatus: 'NOT_STARTED', heartbeatDuration: null, maxProcesses: null, lastCheckOut: null, lastHeartbeat: null, nextHeartbeat: null, metadata: {},
          },
          { license: relationship('licenses', licenses[i].id, 'machines/x/license'), product: relationship('products', (policies[i % policies.length].relationships.product as { data: { id: string } }).data.id, 'machines/x/product'), owner: { data: null } },
        ),
      );
    }
  }
  return { accountId, lists: { products, policies, entitlements, users, licenses, machines }, policyEntitlements, expected };
}

/** The list endpoints of the fixture, by path under the account (products, …, policies/{id}/entitlements). */
export function fixtureLists(account: FixtureAccount): Map<string, KeygenResourceDoc[]> {
  const lists = new Map<string, KeygenResourceDoc[]>(Object.entries(account.lists));
  for (const [policyId, ids] of account.policyEntitlements) {
    lists.set(`policies/${policyId}/entitlements`, ids.map((id) => account.lists.entitlements.find((entitlement) => entitlement.id === id)!));
  }
  return lists;
}

/** One page of a list as Keygen answers it (offset pagination with counts). */
export function keygenPage(account: FixtureAccount, list: string, items: KeygenResourceDoc[], number: number, size: number) {
  const pages = Math.max(1, Math.ceil(items.length / size));
  const link = (n: number | null) => (n === null ? null : `/v1/accounts/${account.accountId}/${list}?page[number]=${n}&page[size]=${size}`);
  return {
    data: items.slice((number - 1) * size, number * size),
    links: { self: link(number), prev: link(number > 1 ? number - 1 : null), next: link(number < pages ? number + 1 : null), first: link(1), last: link(pages), meta: { pages, count: items.length } },
    meta: {},
  };
}

/** Writes every page of every list as files under `dir` (policies/<id>/entitlements-<n>.json for a policy's). */
export function writeKeygenDirectory(account: FixtureAccount, dir: string, size = 100) {
  for (const [list, items] of fixtureLists(account)) {
    const pages = Math.max(1, Math.ceil(items.length / size));
    for (let number = 1; number <= pages; number++) {
      const file = path.join(dir, `${list}-${number}.json`);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, JSON.stringify(keygenPage(account, list, items, number, size)));
    }
  }
}

/** Every page of every list as one bundle (NDJSON: a page a line), as the console uploads it. */
export function keygenBundle(account: FixtureAccount, size = 100): string {
  const lines: string[] = [];
  for (const [list, items] of fixtureLists(account)) {
    const pages = Math.max(1, Math.ceil(items.length / size));
    for (let number = 1; number <= pages; number++) lines.push(JSON.stringify(keygenPage(account, list, items, number, size)));
  }
  return `${lines.join('\n')}\n`;
}

export interface KeygenServer {
  url: string;
  requests: { path: string; authorized: boolean }[];
  /** Replaces the answer of one list's pages: e.g. a next link that loops back. */
  override: (list: string, answer: (page: number, size: number) => unknown) => void;
  close(): Promise<void>;
}

/** Serves the account's pages on 127.0.0.1 at /v1/accounts/<id>/<list>?page[number]=&page[size]=, to `token` only. */
export async function serveKeygenAccount(account: FixtureAccount, token: string): Promise<KeygenServer> {
  const lists = fixtureLists(account);
  const overrides = new Map<string, (page: number, size: number) => unknown>();
  const requests: KeygenServer['requests'] = [];
  const prefix = `/v1/accounts/${account.accountId}/`;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const authorized = req.headers.authorization === `Bearer ${token}`;
    requests.push({ path: url.pathname, authorized });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/vnd.api+json' });
      res.end(JSON.stringify(body));
    };
    if (!authorized) return send(401, { errors: [{ title: 'Unauthorized', detail: 'You must be authenticated to complete the request', code: 'TOKEN_INVALID' }] });
    const list = url.pathname.startsWith(prefix) ? url.pathname.slice(prefix.length) : null;
    const number = Math.max(1, Number(url.searchParams.get('page[number]') ?? 1) || 1);
    const size = Math.min(100, Math.max(1, Number(url.searchParams.get('page[size]') ?? 10) || 10));
    if (list && overrides.has(list)) return send(200, overrides.get(list)!(number, size));
    const items = list ? lists.get(list) : undefined;
    if (!items) return send(404, { errors: [{ title: 'Not found', detail: 'The requested endpoint was not found', code: 'NOT_FOUND' }] });
    send(200, keygenPage(account, list!, items, number, size));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/accounts/${account.accountId}`,
    requests,
    override: (list, answer) => overrides.set(list, answer),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
