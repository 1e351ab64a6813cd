import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { postJson, runCli, startServerProcess, type ServerProcess } from './support/processes.js';

/** The `pnpm start` default: embedded PGlite under DATA_DIR, no database server, real processes and HTTP. */
const parent = mkdtempSync(path.join(tmpdir(), 'kf-embedded-'));
// Created by the processes (a DATA_DIR that does not exist yet, as on a first start).
const dataDir = path.join(parent, 'data');
const env = { DATA_DIR: dataDir, DATABASE_URL: '', SERVER_SECRET: '', LOG_LEVEL: 'info' };
let server: ServerProcess | undefined;
// The usual default umask, inherited by every process started here: the files must be private all the same.
const umask = process.umask(0o022);

afterAll(async () => {
  await server?.stop('SIGKILL');
  process.umask(umask);
  rmSync(parent, { recursive: true, force: true });
});

/** Every path under DATA_DIR (itself included) that its group or others may use, with its mode; and how many paths. */
function openToOthers(): { open: string[]; paths: number } {
  const open: string[] = [];
  let paths = 0;
  const visit = (at: string) => {
    const stat = lstatSync(at);
    paths += 1;
    if (!stat.isSymbolicLink() && stat.mode & 0o077) open.push(`${path.relative(dataDir, at) || '.'} ${(stat.mode & 0o777).toString(8)}`);
    if (stat.isDirectory()) for (const entry of readdirSync(at)) visit(path.join(at, entry));
  };
  visit(dataDir);
  return { open, paths };
}

/** As root, reads `file` as the user nobody (setpriv): what another local user could read. Null when that cannot be tried. */
function readAsNobody(file: string): number | null {
  if (process.getuid?.() !== 0 || spawnSync('setpriv', ['--version']).status !== 0) return null;
  return spawnSync('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', 'cat', file], { stdio: 'ignore' }).status;
}

/** Every file and directory under DATA_DIR private (0600/0700), and another user refused a file of each kind. */
function expectPrivate(files: string[]) {
  expect(statSync(dataDir).mode & 0o777).toBe(0o700);
  const { open, paths } = openToOthers();
  expect(paths).toBeGreaterThan(100); // the embedded database's files are there
  expect(open).toEqual([]);
  for (const file of files) {
    const status = readAsNobody(path.join(dataDir, file));
    if (status !== null) expect(status, file).not.toBe(0);
  }
}

/**
 * A POST on a connection of its own: runCli blocks this event loop for seconds, long enough for the server to close
 * an idle keep-alive connection that fetch would then reuse.
 */
function postFresh(url: string, body: unknown): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, json: JSON.parse(text) }));
    });
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
}

describe('embedded mode end to end', () => {
  let key: string;

  it('the CLI migrates and seeds the embedded database', () => {
    expect(runCli(['tenant:create', '--name', 'Initech', '--prefix', 'INIT', '--json'], env).status).toBe(0);
    expect(runCli(['product:create', '--tenant', 'INIT', '--name', 'TPS Reports', '--json'], env).status).toBe(0);
    const created = runCli(['license:create', '--tenant', 'INIT', '--product', 'TPS Reports', '--max-activations', '2', '--offline-grace-days', '5', '--json'], env);
    expect(created.status, created.stderr).toBe(0);
    key = created.json.key;
    // The CLI opened (created) the embedded database: nothing under DATA_DIR is open to other users.
    expectPrivate(['server-secret', 'pglite/PG_VERSION', 'pglite/global/pg_control']);
  });

  it('the server starts on it, and activate/validate work over HTTP', async () => {
    server = await startServerProcess(env);
    expect(server.output()).toContain('listening');
    expectPrivate(['server-secret', 'pglite/PG_VERSION', 'pglite/global/pg_control']);
    const { nonce } = (await (await fetch(`${server.url}/api/v1/nonce`)).json()) as { nonce: string };
    const activated = await postJson(`${server.url}/api/v1/activate`, { licenseKey: key, nonce, deviceId: 'pc-1' });
    expect(activated).toMatchObject({ status: 200, json: { isValid: true, remainingActivations: 1 } });
    const validated = await postJson(`${server.url}/api/v1/validate`, { licenseKey: key });
    expect(validated.json).toMatchObject({ isValid: true, productName: 'TPS Reports', remainingActivations: 1 });
    const { payload } = await jwtVerify(validated.json.offlineCacheToken, createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`)), { algorithms: ['EdDSA'] });
    expect(payload.product).toBe('TPS Reports');
  });

  it('the CLI works while the server runs: the server, the only owner of the database, runs its commands', async () => {
    const shown = runCli(['license:show', '--key', key, '--json'], env);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stderr).toContain('(through the running server)');
    expect(shown.json.license.activations).toHaveLength(1);
    expect(statSync(path.join(dataDir, 'cli.sock')).mode & 0o777).toBe(0o600);

    // A locked-out sole admin is recovered without stopping the licensing API.
    expect(runCli(['user:create', '--tenant', 'INIT', '--email', 'bill@initech.test', '--password', 'the original password', '--role', 'CompanyAdmin', '--json'], env).status).toBe(0);
    const login = (password: string) =>
      postFresh(`${server!.url}/api/graphql`, { query: 'mutation($p: String!) { login(input: { email: "bill@initech.test", password: $p }) { __typename } }', variables: { p: password } });
    for (let n = 0; n < 5; n++) await login('a wrong password');
    expect((await login('the original password')).json.errors[0].extensions.code).toBe('AccountLocked');
    expect(runCli(['user:unlock', '--email', 'bill@initech.test', '--json'], env).json).toEqual({ email: 'bill@initech.test', wasLocked: true });
    expect((await login('the original password')).json.data.login.__typename).toBe('LoginSuccess');
    const reset = runCli(['user:reset-password', '--email', 'bill@initech.test', '--json'], env);
    expect((await login(reset.json.generatedPassword)).json.data.login.__typename).toBe('PasswordChangeRequired');
    // Errors come back as the CLI's own; validate kept answering throughout.
    expect(runCli(['user:unlock', '--email', 'nobody@initech.test', '--json'], env).json.error.code).toBe('NotFound');
    expect((await postFresh(`${server!.url}/api/v1/validate`, { licenseKey: key })).json.isValid).toBe(true);
  });

  it('the channel refuses a caller that cannot show the token derived from the server secret', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(path.join(dataDir, 'cli.sock'), () => socket.write(`${JSON.stringify({ token: 'guess', command: 'user:unlock', opts: { email: 'bill@initech.test' } })}\n`));
      socket.on('data', (chunk) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(JSON.parse(answer).error.code).toBe('Unauthorized');
  });

  it('stops gracefully on SIGTERM and keeps its data across a restart', async () => {
    expect(await server!.stop('SIGTERM')).toBe(0);
    expect(server!.output()).toContain('stopped');
    server = await startServerProcess(env);
    expect((await postJson(`${server.url}/api/v1/validate`, { licenseKey: key })).json).toMatchObject({ isValid: true, remainingActivations: 1 });
    // The server secret was generated once into DATA_DIR and reused, so the key still resolves.
    await server.stop('SIGTERM');
    server = undefined;
    expect(runCli(['license:show', '--key', key, '--json'], env).json.license.activations).toHaveLength(1);
  });

  it('an existing DATA_DIR open to other users is tightened at start, with a warning that counts the paths (server and CLI)', async () => {
    const loosen = () => spawnSync('chmod', ['-R', 'go+rwX', dataDir]);
    loosen();
    const opened = openToOthers().open.length;
    expect(opened).toBeGreaterThan(100);
    const cli = runCli(['license:show', '--key', key, '--json'], env);
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stderr).toContain(`was open to other users: group and other permissions taken off ${opened} path(s)`);
    expectPrivate(['server-secret']);

    loosen();
    server = await startServerProcess(env);
    expect(server.output()).toMatch(/was open to other users: group and other permissions taken off \d+ path\(s\)/);
    expect(server.output()).not.toContain(readFileSync(path.join(dataDir, 'server-secret'), 'utf8').trim());
    expectPrivate(['server-secret', 'pglite/PG_VERSION']);
    await server.stop('SIGTERM');
    server = undefined;
  });

  it('a port in use: one clear line, exit 1, nothing created', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    const freshDir = path.join(tmpdir(), `kf-port-${process.pid}-${port}`);
    try {
      const result = spawnSync(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
        env: { ...process.env, ...env, DATA_DIR: freshDir, PORT: String(port), HOST: '127.0.0.1' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(result.status).toBe(1);
      expect(result.stderr.trim().split('\n')).toEqual([`Port ${port} on 127.0.0.1 is already in use: stop the process using it, or start with PORT=<another port>.`]);
      expect(result.stdout).toBe('');
      expect(existsSync(freshDir)).toBe(false);
    } finally {
      taken.close();
      rmSync(freshDir, { recursive: true, force: true });
    }
  });
});
