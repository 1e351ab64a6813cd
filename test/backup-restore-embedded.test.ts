import { execFileSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { JSONWebKeySet } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startServerProcess, type ServerProcess } from './support/processes.js';

/**
 * Backup and restore of the embedded (PGlite) database, as the operator docs describe it: stop the server, `tar` the
 * whole DATA_DIR (the database's files and the server secret generated into it), extract the archive elsewhere and
 * start a server on the copy. The restored installation must answer every key as before, publish the same signing
 * keys and hold an activity log that verifies against the checkpoint kept from before the backup.
 */
const work = mkdtempSync(path.join(tmpdir(), 'kf-embackup-'));
const dataDir = path.join(work, 'original', 'keyforge-data');
mkdirSync(path.dirname(dataDir));
// The `pnpm start` default: no DATABASE_URL, no SERVER_SECRET (generated into DATA_DIR on first start).
const env = { DATA_DIR: dataDir, DATABASE_URL: '', SERVER_SECRET: '', LOG_LEVEL: 'warn' };
let server: ServerProcess | undefined;
const ADMIN = 'bill@initech.test';
const PASSWORD = 'a long enough password';

afterAll(async () => {
  await server?.stop('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});

const cli = (args: string[], environment: Record<string, string>) => {
  const result = runCli([...args, '--json'], environment);
  expect(result.status, result.stderr).toBe(0);
  return result.json;
};

/**
 * A request on a connection of its own: runCli blocks this event loop for seconds, long enough for the server to
 * close an idle keep-alive connection that fetch would then reuse.
 */
function call(url: string, body?: unknown, token?: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
    const request = httpRequest(url, { method: body === undefined ? 'GET' : 'POST', agent: false, headers }, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => (response.statusCode === 200 ? resolve(JSON.parse(text)) : reject(new Error(`${url}: ${response.statusCode} ${text}`))));
    });
    request.on('error', reject);
    request.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
const gql = async (baseUrl: string, token: string | undefined, query: string, variables: Record<string, unknown> = {}) => {
  const answer = await call(`${baseUrl}/api/graphql`, { query, variables }, token);
  expect(answer.errors).toBeUndefined();
  return answer.data;
};
const login = async (baseUrl: string) =>
  (await gql(baseUrl, undefined, 'mutation($e: String!, $p: String!) { login(input: { email: $e, password: $p }) { ... on LoginSuccess { accessToken } } }', { e: ADMIN, p: PASSWORD })).login.accessToken as string;
const validate = (baseUrl: string, licenseKey: string) => call(`${baseUrl}/api/v1/validate`, { licenseKey, deviceId: 'pc-1' });
const activate = async (baseUrl: string, licenseKey: string, deviceId: string) => {
  const { nonce } = await call(`${baseUrl}/api/v1/nonce`);
  return call(`${baseUrl}/api/v1/activate`, { licenseKey, nonce, deviceId });
};
const jwks = (baseUrl: string) => call(`${baseUrl}/.well-known/jwks.json`) as Promise<JSONWebKeySet>;

/** Every entry under `dir`, itself included, with its permission bits. */
function modes(dir: string): { entry: string; mode: number }[] {
  const found = [{ entry: '.', mode: statSync(dir).mode & 0o777 }];
  for (const entry of readdirSync(dir, { recursive: true, encoding: 'utf8' })) found.push({ entry, mode: statSync(path.join(dir, entry)).mode & 0o777 });
  return found;
}

describe('backup and restore (embedded database)', () => {
  it('stop, tar DATA_DIR, extract into a new DATA_DIR: keys, signing keys and the activity log carry over', async () => {
    // A populated installation, driven through the running server: a company and its admin (CLI), a product and
    // licenses (GraphQL), an activation, a signed checkpoint of the activity log kept apart, then a revocation after it.
    server = await startServerProcess(env);
    cli(['tenant:create', '--name', 'Initech', '--prefix', 'INIT'], env);
    cli(['user:create', '--tenant', 'INIT', '--email', ADMIN, '--password', PASSWORD, '--role', 'CompanyAdmin'], env);
    let token = await login(server.url);
    const { createProduct } = await gql(server.url, token, 'mutation { createProduct(input: { name: "TPS Reports" }) { product { id } } }');
    const keys: string[] = [];
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) {
      const { createLicense } = await gql(server.url, token, 'mutation($p: ID!) { createLicense(input: { productId: $p, maxActivations: 2 }) { key license { id } } }', { p: createProduct.product.id });
      keys.push(createLicense.key);
      ids.push(createLicense.license.id);
    }
    expect(await activate(server.url, keys[0], 'pc-1')).toMatchObject({ isValid: true, remainingActivations: 1 });
    const integrity = (await gql(server.url, token, '{ activityLogIntegrity { valid pendingEntries latestCheckpoint { seq checkpoint } } }')).activityLogIntegrity;
    expect(integrity).toMatchObject({ valid: true, pendingEntries: 0, latestCheckpoint: { seq: expect.any(Number) } });
    const kept = integrity.latestCheckpoint.checkpoint as string;
    await gql(server.url, token, 'mutation($id: ID!) { revokeLicense(input: { id: $id }) { license { id } } }', { id: ids[2] });
    const before = await Promise.all(keys.map((key) => validate(server!.url, key)));
    expect(before.map(({ isValid, errorCode }) => ({ isValid, errorCode }))).toEqual([
      { isValid: true, errorCode: null },
      { isValid: true, errorCode: null },
      { isValid: false, errorCode: 'LicenseRevoked' },
    ]);
    const jwksBefore = await jwks(server.url);
    expect(jwksBefore.keys.length).toBeGreaterThan(0);

    // The backup: the server stopped (its files are consistent and unlocked), the whole DATA_DIR in one archive.
    expect(await server.stop('SIGTERM')).toBe(0);
    server = undefined;
    const originalModes = modes(dataDir);
    const archive = path.join(work, 'keyforge-data.tar.gz');
    execFileSync('tar', ['-czf', archive, '-C', path.dirname(dataDir), path.basename(dataDir)], { stdio: 'pipe' });
    const listed = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).split('\n');
    expect(listed).toEqual(expect.arrayContaining(['keyforge-data/server-secret', 'keyforge-data/pglite/']));
    expect(listed.filter((entry) => /pglite\.lock|cli\.sock/.test(entry))).toEqual([]); // nothing of the stopped server's

    // The restore: a new place, the archive extracted there, a server started on it with no SERVER_SECRET set, so
    // the generated secret that came along in the archive is the one in use.
    const restoredParent = path.join(work, 'restored');
    mkdirSync(restoredParent);
    execFileSync('tar', ['-xzf', archive, '-C', restoredParent], { stdio: 'pipe' });
    rmSync(path.join(work, 'original'), { recursive: true, force: true }); // nothing may still read the original
    const restoredDir = path.join(restoredParent, 'keyforge-data');
    const restoredEnv = { ...env, DATA_DIR: restoredDir };
    // The stopped server left DATA_DIR private, and tar keeps every entry's mode: the copy is private before any
    // server has run on it (a 0700 directory, nothing under it open to group or others), no more open than the
    // original, and the generated secret stays its owner's alone.
    const restoredModes = modes(restoredDir);
    expect(restoredModes.map(({ entry }) => entry).sort()).toEqual(originalModes.map(({ entry }) => entry).sort());
    const originalMode = new Map(originalModes.map(({ entry, mode }) => [entry, mode]));
    expect(restoredModes.filter(({ entry, mode }) => (mode & ~originalMode.get(entry)!) !== 0)).toEqual([]);
    expect(restoredModes[0]).toEqual({ entry: '.', mode: 0o700 });
    expect(restoredModes.filter(({ mode }) => (mode & 0o077) !== 0)).toEqual([]);
    expect(restoredModes.find(({ entry }) => entry === 'server-secret')?.mode).toBe(0o600);
    server = await startServerProcess(restoredEnv);

    // Every key answers as before: the valid ones valid with their activation, the revoked one refused.
    const after = await Promise.all(keys.map((key) => validate(server!.url, key)));
    for (const [index, answer] of after.entries()) {
      expect(answer).toMatchObject({ isValid: before[index].isValid, errorCode: before[index].errorCode, remainingActivations: before[index].remainingActivations });
    }
    expect(after[0]).toMatchObject({ isValid: true, remainingActivations: 1 });
    // The same signing keys are published.
    expect(await jwks(server.url)).toEqual(jwksBefore);
    // The activity log, re-hashed under the restored secret, is intact and extends the checkpoint kept before; the
    // revocation after it is in it.
    token = await login(server.url);
    const verification = (await gql(server.url, token, 'query($c: String!) { activityLogVerification(checkpoints: $c) { valid entries problem checkpoints { seq status } } }', { c: kept })).activityLogVerification;
    expect(verification).toMatchObject({ valid: true, problem: null, checkpoints: [{ seq: integrity.latestCheckpoint.seq, status: 'EXTENDS' }] });
    expect(verification.entries).toBeGreaterThan(integrity.latestCheckpoint.seq);
    const log = (await gql(server.url, token, '{ activityLog(first: 50) { nodes { seq action entityId } } }')).activityLog.nodes as { seq: number; action: string; entityId: string }[];
    expect(log.find(({ action, entityId }) => action === 'REVOKE_LICENSE' && entityId === ids[2])?.seq).toBeGreaterThan(integrity.latestCheckpoint.seq);
    // The restored database takes writes: a new device takes the second seat.
    expect(await activate(server.url, keys[0], 'pc-2')).toMatchObject({ isValid: true, remainingActivations: 0 });
  }, 300_000); // two server starts and two cold CLI runs: seconds on an idle machine, minutes on a loaded one
});
