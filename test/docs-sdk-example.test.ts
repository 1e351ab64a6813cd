import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { startServerProcess, type ServerProcess } from './support/processes.js';

/**
 * The first example of docs/integrate/sdk.md is a complete program: taken from the page as written (the code block
 * after `<!-- sdk-first-example -->`), set up as the page says (the tarball `npm pack` makes, `"type": "module"` set
 * with `npm pkg set`, the JWKS saved beside it) and run with plain `node` against a real server process.
 */
const SDK = path.resolve(import.meta.dirname, '../sdk');
const PAGE = path.resolve(import.meta.dirname, '../docs/integrate/sdk.md');

function firstExample(): string {
  const page = readFileSync(PAGE, 'utf8');
  const match = /<!-- sdk-first-example -->\n```js\n([\s\S]*?)\n```/.exec(page);
  if (!match) throw new Error('docs/integrate/sdk.md has no ```js block after <!-- sdk-first-example -->');
  return match[1];
}

let t: TestApp;
let server: ServerProcess;
let publicUrl: string;
let tenantId: string;
let productId: string;
let work: string;
let app: string;

beforeAll(async () => {
  t = await startTestApp({ clock: TestClock.startingNow() });
  tenantId = (await t.seedTenant()).id;
  productId = (await t.seedProduct(tenantId, 'Acme Studio')).id;
  server = await startServerProcess({ DATABASE_URL: t.databaseUrl, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, JOBS_WORKER: 'false', LOG_LEVEL: 'warn' });
  // The server's PUBLIC_URL (http://localhost:PORT): the issuer its tokens carry, and the SDK's baseUrl.
  publicUrl = `http://localhost:${new URL(server.url).port}`;

  work = mkdtempSync(path.join(tmpdir(), 'kf-docs-sdk-'));
  // `npm pack` as the page runs it (the prepack builds), the tarball sent to the temporary folder, not left in sdk/.
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: SDK, encoding: 'utf8', timeout: 150_000, env: { ...process.env, npm_config_loglevel: 'error', npm_config_update_notifier: 'false' } })) as { filename: string }[];
  // Installed as `npm install <tarball>` installs it, with its dependency jose from this repository (no registry).
  app = path.join(work, 'app');
  mkdirSync(path.join(app, 'node_modules/@keyforge'), { recursive: true });
  execFileSync('tar', ['-xzf', path.join(work, packed[0].filename), '-C', path.join(app, 'node_modules/@keyforge')]);
  execFileSync('mv', [path.join(app, 'node_modules/@keyforge/package'), path.join(app, 'node_modules/@keyforge/client')]);
  symlinkSync(realpathSync(path.join(SDK, 'node_modules/jose')), path.join(app, 'node_modules/jose'), 'dir');
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'acme-studio', private: true, dependencies: { '@keyforge/client': '0.1.0' } }));
  execFileSync('npm', ['pkg', 'set', 'type=module'], { cwd: app, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });
  writeFileSync(path.join(app, 'keyforge-jwks.json'), await (await fetch(`${server.url}/.well-known/jwks.json`)).text());
  writeFileSync(path.join(app, 'license.js'), firstExample());
}, 240_000);
afterAll(async () => {
  await server?.stop();
  await t?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

function runExample(licenseKey: string) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    // HOME: the FileStore's folder (~/.acme-studio) inside the temporary folder.
    const child = execFile(process.execPath, ['license.js'], { cwd: app, encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH!, HOME: work, KEYFORGE_URL: publicUrl, LICENSE_KEY: licenseKey } }, (_error, stdout, stderr) =>
      resolve({ status: child.exitCode, stdout, stderr }),
    );
  });
}

describe('docs/integrate/sdk.md: the first example', () => {
  it('runs as written with node: activates, validates, enables the licensed feature', async () => {
    const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 2, features: ['export'] });
    const result = await runExample(key);
    expect(result, result.stderr).toMatchObject({ status: 0, stdout: 'licensed: Acme Studio, features [export]\nexport: enabled\n' });
    expect(await t.prisma.activation.count({ where: { licenseId: license.id, deactivatedAt: null } })).toBe(1);
    // The token it verified is kept in the FileStore the example names.
    expect(readFileSync(path.join(work, '.acme-studio', 'license.json'), 'utf8')).toContain('license:');
  });

  it('prints the refusal and exits 1: a key of another product takes no seat (ProductMismatch)', async () => {
    const other = await t.seedProduct(tenantId, 'Other App');
    const { key, license } = await t.seedLicense(tenantId, other.id, { maxActivations: 1 });
    const result = await runExample(key);
    expect(result, result.stderr).toMatchObject({ status: 1, stdout: expect.stringMatching(/^refused ProductMismatch: This license is for another product/) });
    expect(await t.prisma.activation.count({ where: { licenseId: license.id } })).toBe(0);
  });
});
