import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { inject } from 'vitest';
import { loadConfig } from '../../server/src/config.js';
import { createHttpServer } from '../../server/src/app.js';
import { openDeps, type OpenDeps } from '../../server/src/deps.js';
import { createLogger } from '../../server/src/logger.js';
import { appRoleUrl, createDatabase, dropDatabase, grantDatabaseToAppRole, uniqueName } from './pg.js';
import { SEED_PASSWORD, seeder } from './seed.js';
import { renderToken, unsealEmailToken } from '../../server/src/services/notifications/sealed-token.js';

/** A clock the test moves by hand. */
export class TestClock {
  constructor(private time = Date.parse('2026-06-01T12:00:00.000Z')) {}
  /**
   * A clock that starts at the wall time, for suites whose app shares rules with processes on the wall clock (the
   * CLI, a worker). Such a suite must not depend on the hour: see test/time-of-day.test.ts and docs/development.md.
   */
  static startingNow() {
    return new TestClock(Date.now());
  }
  now = () => new Date(this.time);
  advance(ms: number) {
    this.time += ms;
  }
  set(iso: string) {
    this.time = Date.parse(iso);
  }
}

export const DAY = 86_400_000;

export interface TestAppOptions {
  env?: Record<string, string>;
  /** 'app' (default): the server connects as the app role, like production; 'owner': as the schema owner. */
  dbRole?: 'app' | 'owner';
  clock?: TestClock;
  /** The URL the server connects with, from the direct one: e.g. through a pooler (test/support/pgbouncer.ts). */
  connectVia?: (url: string) => string;
}

export type TestApp = Awaited<ReturnType<typeof startTestApp>>;

/**
 * The real app on its own PostgreSQL database (cloned from the migrated template), served over real HTTP on an
 * ephemeral loopback port by the same server factory `pnpm start` uses (app.ts createHttpServer), so every request
 * takes the production path: the public API's node:http handler, the Hono app for the rest. Log lines are captured
 * so tests can check what reaches them.
 */
export async function startTestApp(options: TestAppOptions = {}) {
  const dbName = uniqueName('kf_test');
  const ownerUrl = await createDatabase(dbName, inject('templateDatabase'));
  await grantDatabaseToAppRole(dbName);
  const directUrl = options.dbRole === 'owner' ? ownerUrl : appRoleUrl(ownerUrl);
  const databaseUrl = options.connectVia ? options.connectVia(directUrl) : directUrl;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-test-'));
  const clock = options.clock ?? new TestClock();
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    PUBLIC_URL: 'http://licensing.test',
    SERVER_SECRET: 'test-server-secret-0123456789abcdef0123456789',
    TRUST_PROXY: 'true',
    RATE_LIMIT_PUBLIC_PER_MINUTE: '100000',
    RATE_LIMIT_TENANT_PER_MINUTE: '100000',
    RATE_LIMIT_SIGNIN_PER_IP_PER_MINUTE: '100000',
    RATE_LIMIT_SIGNIN_PER_ACCOUNT_PER_MINUTE: '100000',
    RATE_LIMIT_LICENSE_PER_MINUTE: '100000',
    // Off unless a test turns it on: a test that changes a license and validates at once must not depend on the
    // notification beating its next request (test/license-cache.test.ts covers the cache).
    LICENSE_CACHE: 'off',
    DATABASE_POOL_SIZE: '10',
    LOG_LEVEL: 'debug',
    ...options.env,
  });
  const runtime: OpenDeps = await openDeps(config, createLogger(config.logLevel, logStream), clock.now);
  const server = createHttpServer(runtime.deps);
  // Idle connections stay open: a test that blocks the event loop (spawnSync of the CLI) would otherwise find its
  // kept-alive connection closed by the server's keep-alive timer the moment it sends the next request (ECONNRESET).
  server.keepAliveTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  /** Where the server listens: `http://127.0.0.1:<port>`. */
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Seeding goes through test/support/seed.ts, at the app's clock.
  const seed = seeder({ db: runtime.deps.db, secrets: runtime.deps.secrets, now: clock.now });

  const t_prisma = () => runtime.deps.db.prisma;

  /**
   * Marks the session of an access token as re-authenticated now (what the `reauthenticate` mutation records), so a
   * test can do account-security actions (docs/security.md); test/reauthentication.test.ts covers
   * the mutation itself. login and setupAdmin do it unless told `reauth: false`.
   */
  async function stampReauth(token: string) {
    const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as { sub: string; fam: string };
    const at = clock.now();
    await t_prisma().sessionReauthentication.upsert({ where: { familyId: claims.fam }, create: { familyId: claims.fam, userId: claims.sub, reauthenticatedAt: at }, update: { reauthenticatedAt: at } });
  }

  async function request(method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}) {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${baseUrl}${pathname}`, init);
    const text = await response.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, json, text };
  }

  // The fuzzers' transport: node:http on kept-alive connections. Real HTTP to the same server, without fetch's
  // Request/Response/Headers machinery, which costs the client more CPU than the server spends on a rejected body.
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  function postLean(pathname: string, body: string, headers: Record<string, string> = {}) {
    return new Promise<{ status: number; text: string; json: any }>((resolve, reject) => {
      const req = httpRequest(`${baseUrl}${pathname}`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: any;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, text, json });
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  return {
    baseUrl,
    /** The schema owner's URL (what migrations use) and the URL the server connects with. */
    ownerUrl,
    databaseUrl,
    clock,
    config,
    deps: runtime.deps,
    prisma: runtime.deps.db.prisma,
    logs,
    request,
    get: (pathname: string, headers?: Record<string, string>) => request('GET', pathname, undefined, headers),
    post: (pathname: string, body?: unknown, headers?: Record<string, string>) => request('POST', pathname, body, headers),
    /** A GraphQL call to /api/graphql; `auth` is an access token, an API key, or a refresh cookie. */
    async gql(query: string, variables: Record<string, unknown> = {}, auth: { token?: string; apiKey?: string; cookie?: string; ip?: string } = {}) {
      const headers: Record<string, string> = {};
      if (auth.token) headers.authorization = `Bearer ${auth.token}`;
      if (auth.apiKey) headers['x-api-key'] = auth.apiKey;
      if (auth.cookie) headers.cookie = auth.cookie;
      if (auth.ip) headers['x-forwarded-for'] = auth.ip;
      const response = await request('POST', '/api/graphql', { query, variables }, headers);
      const setCookie = response.headers.get('set-cookie');
      return { ...response, data: response.json?.data, errors: response.json?.errors as { message: string; extensions?: { code?: string; fields?: Record<string, string> } }[] | undefined, setCookie };
    },
    /** A POST of a ready body over node:http (status, text, json): for thousands of bodies, where fetch's cost shows. */
    postLean,
    /** A GraphQL call whose answer must have no errors (they are thrown): its `data`. */
    async gqlData(query: string, variables: Record<string, unknown> = {}, auth: { token?: string; apiKey?: string; cookie?: string; ip?: string } = {}) {
      const response = await this.gql(query, variables, auth);
      if (response.errors) throw new Error(JSON.stringify(response.errors));
      return response.data;
    },
    stampReauth,
    /** The `reauthenticate` mutation for a session (its answer: data and errors). */
    reauthenticate(token: string, input: { password?: string; totpCode?: string; backupCode?: string } = {}, ip?: string) {
      return this.gql('mutation($input: ReauthenticateInput!) { reauthenticate(input: $input) { reauthenticatedUntil } }', { input: { password: SEED_PASSWORD, ...input } }, { token, ip });
    },
    /** The single-use token (reset link, invitation) an outbox row carries sealed (what its addressee receives). */
    outboxToken(row: { idempotencyKey: string; toAddress: string; sealedToken: string | null }) {
      if (!row.sealedToken) throw new Error(`the email ${row.idempotencyKey} carries no sealed token`);
      return unsealEmailToken(runtime.deps.secrets, { idempotencyKey: row.idempotencyKey, to: row.toAddress, sealedToken: row.sealedToken });
    },
    /** An outbox row's text body as its addressee receives it (the sealed token rendered in). */
    outboxText(row: { idempotencyKey: string; toAddress: string; sealedToken: string | null; text: string }) {
      return row.sealedToken ? renderToken(row.text, this.outboxToken(row)) : row.text;
    },
    /** Runs first-run setup (company ACME + admin) and returns the admin's access token (re-authenticated unless `reauth: false`). */
    async setupAdmin(input: { email?: string; password?: string; keyPrefix?: string; companyName?: string; reauth?: boolean } = {}) {
      const response = await this.gql(
        `mutation($companyName: String!, $keyPrefix: String!, $email: String!, $password: String!) {
          setup(input: { companyName: $companyName, keyPrefix: $keyPrefix, email: $email, password: $password }) { accessToken user { id tenantId: id } }
        }`,
        { companyName: input.companyName ?? 'Acme Corp', keyPrefix: input.keyPrefix ?? 'ACME', email: input.email ?? 'admin@acme.test', password: input.password ?? SEED_PASSWORD },
      );
      if (response.errors) throw new Error(JSON.stringify(response.errors));
      const user = await t_prisma().user.findUniqueOrThrow({ where: { email: input.email ?? 'admin@acme.test' } });
      if (input.reauth !== false) await stampReauth(response.data.setup.accessToken);
      return { token: response.data.setup.accessToken as string, user, cookie: response.setCookie!.split(';')[0] };
    },
    /** A user created directly (as the operator CLI does). */
    seedUser: seed.user,
    /**
     * Signs in and returns the access token and refresh cookie (throws on any error). The session counts as
     * re-authenticated now unless `reauth: false`.
     */
    async login(email: string, password = SEED_PASSWORD, extra: { totpCode?: string; backupCode?: string; ip?: string; reauth?: boolean } = {}) {
      const { ip, reauth, ...codes } = extra;
      const response = await this.gql(
        'mutation($input: LoginInput!) { login(input: $input) { __typename ... on LoginSuccess { accessToken } ... on PasswordChangeRequired { resetToken } } }',
        { input: { email, password, ...codes } },
        { ip },
      );
      if (response.errors) throw Object.assign(new Error(response.errors[0].message), { code: response.errors[0].extensions?.code });
      // status: the login payload's type, as the former LoginStatus values.
      const status = ({ MfaRequired: 'MFA_REQUIRED', PasswordChangeRequired: 'PASSWORD_CHANGE_REQUIRED' } as Record<string, string>)[response.data.login.__typename] ?? 'SUCCESS';
      if (status === 'SUCCESS' && reauth !== false) await stampReauth(response.data.login.accessToken);
      return { token: response.data.login.accessToken as string, status, cookie: response.setCookie?.split(';')[0], resetToken: response.data.login.resetToken as string | undefined };
    },
    async nonce(): Promise<string> {
      const response = await request('GET', '/api/v1/nonce');
      if (response.status !== 200) throw new Error(`nonce: ${response.status} ${response.text}`);
      return response.json.nonce;
    },
    /** GET a nonce, then activate with it. */
    async activate(body: Record<string, unknown>, headers?: Record<string, string>) {
      const nonce = await this.nonce();
      return request('POST', '/api/v1/activate', { nonce, ...body }, headers);
    },
    seedTenant: seed.tenant,
    seedProduct: seed.product,
    seedLicense: seed.license,
    /** One tenant, one product, one license: the common starting point. */
    seedBasic: seed.basic,
    async close() {
      agent.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await runtime.close();
      await dropDatabase(dbName);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
