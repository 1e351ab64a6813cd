import { execFile, execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { itWith, needCommands } from './support/optional.js';
import { startServerProcess, type ServerProcess } from './support/processes.js';

/**
 * The REST integration examples of the docs (docs/examples/: curl, Python, Go, C#) are complete programs: each is
 * run here, as a vendor would run it, against a real server process — activate, validate and, where the language
 * verifies Ed25519 without a library (Go, openssl), the offline token's signature.
 */
const examples = path.resolve('docs/examples');
const PRODUCT = 'Acme Studio';

interface Example {
  name: string;
  need: ReturnType<typeof needCommands>;
  /** Compiles once (where there is something to compile); returns the command line that runs the program. */
  build(dir: string): string[];
  verifiesToken: boolean;
}

const EXAMPLES: Example[] = [
  { name: 'curl', need: needCommands('bash', 'curl', 'jq', 'openssl'), build: () => ['bash', path.join(examples, 'curl/license.sh')], verifiesToken: true },
  { name: 'python', need: needCommands('python3'), build: () => ['python3', path.join(examples, 'python/license.py')], verifiesToken: false },
  {
    name: 'go',
    need: needCommands('go'),
    build(dir) {
      const binary = path.join(dir, 'license-go');
      // A private build cache and module path, so the build neither reads nor fills the user's.
      execFileSync('go', ['build', '-o', binary, '.'], { cwd: path.join(examples, 'go'), env: { ...process.env, GOCACHE: path.join(dir, 'gocache'), GOPATH: path.join(dir, 'gopath'), GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' }, stdio: 'pipe' });
      return [binary];
    },
    verifiesToken: true,
  },
  {
    name: 'csharp',
    need: needCommands('mcs', 'mono'),
    build(dir) {
      const exe = path.join(dir, 'License.exe');
      execFileSync('mcs', ['-r:System.Net.Http', '-r:System.Web.Extensions', `-out:${exe}`, path.join(examples, 'csharp/License.cs')], { stdio: 'pipe' });
      return ['mono', exe];
    },
    verifiesToken: false,
  },
];

let t: TestApp;
let server: ServerProcess;
let tenantId: string;
let productId: string;
let kid: string;
let forged: Server;
let forgedUrl: string;
let buildDir: string;

beforeAll(async () => {
  // Seeded in-process; served by a real server process on the same database and secret.
  t = await startTestApp({ clock: TestClock.startingNow() });
  const tenant = await t.seedTenant();
  tenantId = tenant.id;
  productId = (await t.seedProduct(tenantId, PRODUCT)).id;
  server = await startServerProcess({ DATABASE_URL: t.databaseUrl, SERVER_SECRET: t.config.serverSecret!, DATA_DIR: t.config.dataDir, JOBS_WORKER: 'false', LOG_LEVEL: 'warn' });
  kid = ((await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys[0].kid;
  // The same server behind a proxy that publishes another public key under the same kid: a token must not verify.
  const impostor = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x;
  forged = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const upstream = await fetch(server.url + request.url, { method: request.method, headers: { 'content-type': 'application/json' }, body: request.method === 'POST' ? Buffer.concat(chunks) : undefined });
    let body = await upstream.text();
    if (request.url === '/.well-known/jwks.json') body = JSON.stringify({ keys: (JSON.parse(body) as { keys: object[] }).keys.map((key) => ({ ...key, x: impostor })) });
    response.writeHead(upstream.status, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => forged.listen(0, '127.0.0.1', resolve));
  forgedUrl = `http://127.0.0.1:${(forged.address() as { port: number }).port}`;
  buildDir = mkdtempSync(path.join(tmpdir(), 'kf-docs-examples-'));
}, 180_000);
afterAll(async () => {
  await new Promise((resolve) => forged?.close(resolve));
  await server?.stop();
  await t?.close();
  if (buildDir) rmSync(buildDir, { recursive: true, force: true });
});

describe.each(EXAMPLES)('docs/examples: $name', (example) => {
  itWith(example.need)('activates (one seat per device), validates, refuses a wrong key or product', async () => {
    const command = example.build(buildDir);
    // Asynchronous: the impostor proxy below answers from this process.
    const run = (env: Record<string, string>, baseUrl = server.url) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = execFile(command[0], command.slice(1), { encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH!, HOME: buildDir, KEYFORGE_URL: baseUrl, PRODUCT, ...env } }, (_error, stdout, stderr) =>
          resolve({ status: child.exitCode, stdout, stderr }),
        );
      });
    const { key, license } = await t.seedLicense(tenantId, productId, { maxActivations: 2, features: ['export', 'sync'] });
    const device = `${example.name}-laptop`;

    const first = await run({ LICENSE_KEY: key, DEVICE_ID: device });
    expect(first, first.stderr).toMatchObject({ status: 0 });
    const lines = first.stdout.trim().split('\n');
    expect(lines[0]).toBe('activate: ok, Acme Studio, 1 activation(s) left');
    expect(lines[1]).toBe('validate: ok, Acme Studio, expires never, features [export, sync]');
    if (example.verifiesToken) {
      expect(lines[2]).toMatch(new RegExp(`^token: signature verified \\(key ${kid}\\), valid offline until \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$`));
      expect(lines).toHaveLength(3);
    } else {
      expect(lines).toHaveLength(2);
    }
    // The activation is counted on the license, for this device.
    const activations = await t.prisma.activation.findMany({ where: { licenseId: license.id } });
    expect(activations.map((activation) => [activation.deviceId, activation.deactivatedAt])).toEqual([[device, null]]);

    // Run again on the same device: the same seat, not a second one.
    expect((await run({ LICENSE_KEY: key, DEVICE_ID: device })).stdout).toContain('activate: ok, Acme Studio, 1 activation(s) left');
    expect(await t.prisma.activation.count({ where: { licenseId: license.id } })).toBe(1);

    // Refusals exit with status 1 and print the errorCode.
    expect(await run({ LICENSE_KEY: 'ACME-AAAA-AAAA-AAAA-AAAA', DEVICE_ID: device })).toMatchObject({ status: 1, stdout: 'activate: refused LicenseNotFound: License key not found.\n' });
    // A key of another product is refused by the server at activation (the example sends PRODUCT), before any seat is
    // taken: no activation row, the seat count unchanged.
    const other = await t.seedProduct(tenantId, `Other App ${example.name}`);
    const { key: otherKey, license: otherLicense } = await t.seedLicense(tenantId, other.id, { maxActivations: 1 });
    expect(await run({ LICENSE_KEY: otherKey, DEVICE_ID: device })).toMatchObject({
      status: 1,
      stdout: `activate: refused ProductMismatch: This license is for another product, not "${PRODUCT}": no seat was taken. Check that the key is the one for this application.\n`,
    });
    expect(await t.prisma.activation.count({ where: { licenseId: otherLicense.id } })).toBe(0);
    expect((await t.prisma.license.findUniqueOrThrow({ where: { id: otherLicense.id } })).currentActivations).toBe(0);
    // Without PRODUCT the same key is this application's to activate: the server checked the product, not the example.
    expect(await run({ LICENSE_KEY: otherKey, DEVICE_ID: device, PRODUCT: '' })).toMatchObject({ status: 0 });

    // No server to ask: exit status 2.
    expect(await run({ LICENSE_KEY: key, DEVICE_ID: device }, 'http://127.0.0.1:9')).toMatchObject({ status: 2 });

    if (example.verifiesToken) {
      // A token signed by the server but checked against another public key is refused.
      expect(await run({ LICENSE_KEY: key, DEVICE_ID: device }, forgedUrl)).toMatchObject({ status: 1, stdout: expect.stringMatching(/\ntoken: refused.*signature does not verify\n$/) });
    }
  });
});
