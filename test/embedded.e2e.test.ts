import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { postJson, runCli, startServerProcess, type ServerProcess } from './support/processes.js';

/** The `pnpm start` default: embedded PGlite under DATA_DIR, no database server, real processes and HTTP. */
const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-embedded-'));
const env = { DATA_DIR: dataDir, DATABASE_URL: '', SERVER_SECRET: '', LOG_LEVEL: 'info' };
let server: ServerProcess | undefined;

afterAll(async () => {
  await server?.stop('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

describe('embedded mode end to end', () => {
  let key: string;

  it('the CLI migrates and seeds the embedded database', () => {
    expect(runCli(['tenant:create', '--name', 'Initech', '--prefix', 'INIT', '--json'], env).status).toBe(0);
    expect(runCli(['product:create', '--tenant', 'INIT', '--name', 'TPS Reports', '--json'], env).status).toBe(0);
    const created = runCli(['license:create', '--tenant', 'INIT', '--product', 'TPS Reports', '--max-activations', '2', '--offline-grace-days', '5', '--json'], env);
    expect(created.status, created.stderr).toBe(0);
    key = created.json.key;
  });

  it('the server starts on it, and activate/validate work over HTTP', async () => {
    server = await startServerProcess(env);
    expect(server.output()).toContain('listening');
    const { nonce } = (await (await fetch(`${server.url}/api/v1/nonce`)).json()) as { nonce: string };
    const activated = await postJson(`${server.url}/api/v1/activate`, { licenseKey: key, nonce, deviceId: 'pc-1' });
    expect(activated).toMatchObject({ status: 200, json: { isValid: true, remainingActivations: 1 } });
    const validated = await postJson(`${server.url}/api/v1/validate`, { licenseKey: key });
    expect(validated.json).toMatchObject({ isValid: true, productName: 'TPS Reports', remainingActivations: 1 });
    const { payload } = await jwtVerify(validated.json.offlineCacheToken, createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`)), { algorithms: ['EdDSA'] });
    expect(payload.product).toBe('TPS Reports');
  });

  it('a second process cannot open the embedded database while the server holds it', () => {
    const refused = runCli(['license:show', '--key', key, '--json'], env);
    expect(refused.status).toBe(1);
    expect(refused.json.error.message).toMatch(/in use by another process/);
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
