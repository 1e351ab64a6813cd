// The SDK conformance scenarios (sdks/conformance/scenarios.json, protocol in sdks/conformance/README.md): the real
// server on a real port, a control server doing the staff side, and every SDK's runner driven through every
// scenario — each must print exactly the expected steps. A language whose runner is not written yet, or whose
// toolchain is missing, is skipped (under KEYFORGE_TEST_STRICT=1 it fails).
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { NO_META, systemActor } from '../server/src/services/auth/actor.js';
import { revokeLicense, updateLicense } from '../server/src/services/licenses/management.js';
import { setMeterQuota } from '../server/src/services/metering/management.js';
import { createRelease, listProductReleases, publishRelease, yankRelease } from '../server/src/services/releases/releases.js';
import { updateProduct } from '../server/src/services/products.js';
import { TestClock, startTestApp, type TestApp } from './support/harness.js';
import { itWith, needCommands, runs, type Need } from './support/optional.js';
import { PYTHON } from './support/sdk-toolchains.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const RUNNER_TIMEOUT_MS = 60_000;

interface Scenario {
  name: string;
  license: {
    product: string;
    maxActivations: number;
    offlineGraceDays: number;
    floatingSeats?: number;
    features?: string[];
    quota?: { event: string; period: 'day' | 'month' | 'year' | 'lifetime'; limit: number };
    /** The run gets a company of its own (with the product): what it publishes is seen by its runner alone. */
    ownTenant?: boolean;
    /** The scenario runs a second time with a license created with this imported key (a run's number after it, each key being unique). */
    importedKey?: string;
  };
  inputs: Record<string, unknown>;
  expect: unknown[];
}
const { scenarios } = JSON.parse(readFileSync(path.join(ROOT, 'sdks/conformance/scenarios.json'), 'utf8')) as { scenarios: Scenario[] };

interface Language {
  name: string;
  /** The runner's source: absent means the SDK's runner is not written yet. */
  source: string;
  toolchain: string[];
  /** Builds the runner once (in `dir`, a temporary folder); returns the command line of a scenario. */
  prepare(dir: string): Promise<(scenario: string) => { command: string; args: string[]; env?: Record<string, string> }>;
}

const run = promisify(execFile);
/** Runs a build step; its output is shown when it fails. */
async function build(command: string, args: string[], options: { cwd: string; env?: Record<string, string> }) {
  try {
    await run(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, timeout: 240_000, maxBuffer: 16 << 20 });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed:\n${stdout}\n${stderr}`);
  }
}

const LANGUAGES: Language[] = [
  {
    name: 'TypeScript',
    source: 'sdks/conformance/runner.ts',
    toolchain: [],
    prepare: async () => (scenario) => ({ command: process.execPath, args: ['--import', 'tsx', 'sdks/conformance/runner.ts', scenario] }),
  },
  {
    name: 'Go',
    source: 'sdks/go/cmd/conformance/main.go',
    toolchain: ['go'],
    async prepare(dir) {
      const binary = path.join(dir, 'conformance');
      // Standard library only: nothing to download (GOTOOLCHAIN=local: never fetch another Go either).
      await build('go', ['build', '-o', binary, './cmd/conformance'], { cwd: path.join(ROOT, 'sdks/go'), env: { GOTOOLCHAIN: 'local', GOPROXY: 'off' } });
      return (scenario) => ({ command: binary, args: [scenario] });
    },
  },
  {
    name: 'Python',
    source: 'sdks/python/tests/conformance_runner.py',
    toolchain: [PYTHON],
    prepare: async () => (scenario) => ({ command: PYTHON, args: ['sdks/python/tests/conformance_runner.py', scenario], env: { PYTHONPATH: path.join(ROOT, 'sdks/python/src'), PYTHONDONTWRITEBYTECODE: '1' } }),
  },
  {
    name: '.NET',
    source: 'sdks/dotnet/build.sh',
    toolchain: ['mono', 'mcs'],
    async prepare() {
      await build('bash', ['sdks/dotnet/build.sh'], { cwd: ROOT });
      const exe = path.join(ROOT, 'sdks/dotnet/build/ConformanceRunner.exe');
      if (!existsSync(exe)) throw new Error('sdks/dotnet/build.sh did not produce sdks/dotnet/build/ConformanceRunner.exe');
      return (scenario) => ({ command: 'mono', args: [exe, scenario] });
    },
  },
];

function need(language: Language): Need {
  const what = `the ${language.name} SDK's conformance runner`;
  if (!existsSync(path.join(ROOT, language.source))) return { what, missing: `${language.source} is not written yet` };
  if (!language.toolchain.length) return { what };
  const tools = needCommands(...language.toolchain);
  return { what, missing: tools.missing };
}

// ---------------------------------------------------------------------------------------------------------------
// The server, the seeded tenant, and the control server.

let t: TestApp;
let control: Server;
let controlUrl: string;
let tenantId: string;
let staffToken: string;
const productIds: Record<string, string> = {};

interface Run {
  licenseId: string;
  tenantId: string;
  productId: string;
  /** A CompanyAdmin's access token of the run's company (ownTenant runs). */
  staffToken?: string;
  clockOffsetSeconds: number;
  /** The replaying proxy's recorded answer to the first POST /api/v1/validate. */
  replayed?: { status: number; headers: Record<string, string>; body: Buffer };
}
const runsById = new Map<string, Run>();
let runCount = 0;

const ctx = (tenant = tenantId) => ({ db: t.deps.db, secrets: t.deps.secrets, now: new Date(), actor: systemActor(tenant), meta: NO_META });

async function seats(licenseId: string) {
  const now = new Date();
  const [activeActivations, activeFloatingSessions] = await Promise.all([
    t.prisma.activation.count({ where: { licenseId, deactivatedAt: null } }),
    t.prisma.floatingSession.count({ where: { licenseId, endedAt: null, leaseExpiresAt: { gt: now } } }),
  ]);
  return { activeActivations, activeFloatingSessions };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** A staff GraphQL mutation: its data, or the code of its first error. */
async function staff(query: string, variables: Record<string, unknown>): Promise<{ data?: Record<string, any>; error?: string }> {
  const { data, errors } = await t.gql(query, variables, { token: staffToken });
  if (errors?.length) return { error: errors[0].extensions?.code ?? 'InternalError' };
  return { data };
}

const ACTIONS: Record<string, (run: Run, body: Record<string, unknown>) => Promise<Record<string, unknown>>> = {
  async revoke(run) {
    await revokeLicense(ctx(run.tenantId), run.licenseId);
    return { revoked: true };
  },
  async setFeatures(run, body) {
    if (!Array.isArray(body.features)) throw new Error('setFeatures needs features');
    await updateLicense(ctx(run.tenantId), run.licenseId, { features: body.features as string[] });
    return { features: body.features };
  },
  async advanceClock(run, body) {
    if (typeof body.seconds !== 'number' || !Number.isInteger(body.seconds) || body.seconds < 0) throw new Error('advanceClock needs whole seconds');
    run.clockOffsetSeconds += body.seconds;
    return { now: Math.floor(Date.now() / 1000) + run.clockOffsetSeconds };
  },
  seats: (run) => seats(run.licenseId),
  async airGappedRespond(run, body) {
    const answer = await staff('mutation($input: ActivateOfflineInput!) { activateOffline(input: $input) { licenseFile } }', { input: { licenseId: run.licenseId, request: body.request } });
    if (answer.error) throw new Error(`activateOffline: ${answer.error}`);
    return { response: answer.data!.activateOffline.licenseFile };
  },
  /** A release of the run's product with one artifact (`content`, UTF-8), published. */
  async publishRelease(run, body) {
    const release = await createRelease(ctx(run.tenantId), {
      productId: run.productId,
      version: String(body.version),
      requiredFeatures: body.requiredFeatures as string[] | undefined,
      requiresMaintenance: body.requiresMaintenance === true,
    });
    // The staff upload route, as a build pipeline sends the file (the artifact's description in the query).
    const query = new URLSearchParams({ filename: String(body.filename), platform: String(body.platform), arch: String(body.arch) });
    const upload = await fetch(`${t.baseUrl}/api/releases/${release.id}/artifacts?${query}`, { method: 'PUT', headers: { authorization: `Bearer ${run.staffToken}` }, body: Buffer.from(String(body.content)) });
    if (upload.status !== 201) throw new Error(`upload: HTTP ${upload.status} ${await upload.text()}`);
    await publishRelease(ctx(run.tenantId), release.id);
    return { releaseId: release.id };
  },
  async yankRelease(run, body) {
    const release = (await listProductReleases(ctx(run.tenantId), run.productId, { first: 100 })).nodes.find((candidate) => candidate.version === body.version);
    if (!release) throw new Error(`no release ${String(body.version)}`);
    await yankRelease(ctx(run.tenantId), release.id);
    return { yanked: true };
  },
  /** The license's maintenance ended yesterday: releases published since, that require maintenance, are not its. */
  async lapseMaintenance(run) {
    await updateLicense(ctx(run.tenantId), run.licenseId, { maintenanceExpiresAt: new Date(Date.now() - 86_400_000).toISOString() });
    return { lapsed: true };
  },
  async airGappedDeactivate(run, body) {
    const answer = await staff('mutation($input: DeactivateOfflineInput!) { deactivateOffline(input: $input) { activationId } }', { input: { licenseId: run.licenseId, proof: body.proof } });
    return answer.error ? { deactivated: false, error: answer.error } : { deactivated: true };
  },
};

/** `{control}/replay/<path>`: the server, except that a run's later validates get its first validate's answer. */
async function replay(run: Run, req: IncomingMessage, res: ServerResponse, upstreamPath: string) {
  const body = await readBody(req);
  const isValidate = req.method === 'POST' && upstreamPath.split('?')[0] === '/api/v1/validate';
  if (isValidate && run.replayed) {
    res.writeHead(run.replayed.status, run.replayed.headers);
    res.end(run.replayed.body);
    return;
  }
  const headers: Record<string, string> = {};
  for (const name of ['content-type', 'authorization', 'accept']) if (typeof req.headers[name] === 'string') headers[name] = req.headers[name];
  const upstream = await fetch(`${t.baseUrl}${upstreamPath}`, { method: req.method, headers, body: req.method === 'GET' || req.method === 'HEAD' ? undefined : new Uint8Array(body) });
  const answer = { status: upstream.status, headers: { 'content-type': upstream.headers.get('content-type') ?? 'application/json' }, body: Buffer.from(await upstream.arrayBuffer()) };
  if (isValidate) run.replayed = answer;
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
}

/** `{control}/tamper/<path>`: the server, except that a file (an answer that is not JSON) arrives with its last byte changed. */
async function tamper(req: IncomingMessage, res: ServerResponse, upstreamPath: string) {
  const body = await readBody(req);
  const headers: Record<string, string> = {};
  for (const name of ['content-type', 'authorization', 'accept', 'range']) if (typeof req.headers[name] === 'string') headers[name] = req.headers[name];
  const upstream = await fetch(`${t.baseUrl}${upstreamPath}`, { method: req.method, headers, body: req.method === 'GET' || req.method === 'HEAD' ? undefined : new Uint8Array(body) });
  const type = upstream.headers.get('content-type') ?? 'application/json';
  const answer = Buffer.from(await upstream.arrayBuffer());
  if (!type.includes('json') && answer.length) answer[answer.length - 1] ^= 0xff;
  const kept: Record<string, string> = { 'content-type': type };
  const range = upstream.headers.get('content-range');
  if (range) kept['content-range'] = range;
  res.writeHead(upstream.status, kept);
  res.end(answer);
}

async function handleControl(req: IncomingMessage, res: ServerResponse) {
  const match = /^\/run\/([^/]+)(\/.*)$/.exec(req.url ?? '');
  const run = match && runsById.get(match[1]);
  if (!match || !run) return send(res, 404, { error: 'NotFound', message: `no run at ${req.url}` });
  const rest = match[2];
  if (rest.startsWith('/replay/')) return replay(run, req, res, rest.slice('/replay'.length));
  if (rest.startsWith('/tamper/')) return tamper(req, res, rest.slice('/tamper'.length));
  const action = ACTIONS[rest.slice(1)];
  if (req.method !== 'POST' || !action) return send(res, 404, { error: 'NotFound', message: `no control action ${req.method} ${rest}` });
  let body: Record<string, unknown>;
  try {
    body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as Record<string, unknown>;
  } catch {
    return send(res, 400, { error: 'InvalidRequest', message: 'the body must be JSON' });
  }
  return send(res, 200, await action(run, body));
}

/** A fresh license for one run of a scenario (one language's runner, one scenario); with `imported`, of the scenario's importedKey. */
async function newRun(scenario: Scenario, imported = false) {
  const { license: spec } = scenario;
  const id = String(++runCount);
  let runTenant = tenantId;
  let productId = productIds[spec.product];
  let runStaffToken: string | undefined;
  if (spec.ownTenant) {
    runTenant = (await t.seedTenant({ name: `Conformance run ${id}`, keyPrefix: `RUN${id}` })).id;
    productId = (await t.seedProduct(runTenant, spec.product)).id;
    const email = `run${id}@conformance.test`;
    await t.seedUser(runTenant, { email });
    runStaffToken = (await t.login(email)).token;
  }
  const attributes = {
    maxActivations: spec.maxActivations,
    offlineGraceDays: spec.offlineGraceDays,
    ...(spec.floatingSeats ? { floatingSeats: spec.floatingSeats } : {}),
    ...(spec.features ? { features: spec.features } : {}),
  };
  const { key, license } = await t.seedLicense(runTenant, productId, attributes, imported ? { key: `${spec.importedKey}-${id}` } : undefined);
  if (imported) expect(key).toBe(`${spec.importedKey}-${id}`);
  if (spec.quota) await setMeterQuota(ctx(runTenant), license.id, spec.quota);
  runsById.set(id, { licenseId: license.id, tenantId: runTenant, productId, staffToken: runStaffToken, clockOffsetSeconds: 0 });
  return { id, key, licenseId: license.id };
}

/** Spawns a runner with the run's input on stdin; its steps, or an error carrying its output. */
function runRunner(line: { command: string; args: string[]; env?: Record<string, string> }, input: Record<string, unknown>): Promise<{ steps: unknown[]; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(line.command, line.args, { cwd: ROOT, env: { ...process.env, ...line.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUNNER_TIMEOUT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const lines = stdout.trim().split('\n').filter(Boolean);
      if (code !== 0 || lines.length !== 1) {
        return reject(new Error(`${line.command} ${line.args.join(' ')} exited with ${signal ?? code} and printed ${lines.length} lines (exactly one expected).\nstdout:\n${stdout}\nstderr:\n${stderr}`));
      }
      try {
        const parsed = JSON.parse(lines[0]) as { steps?: unknown };
        if (!Array.isArray(parsed.steps)) throw new Error('no steps array');
        resolve({ steps: parsed.steps, stderr });
      } catch (error) {
        reject(new Error(`${line.command} printed no {"steps":[…]} line (${(error as Error).message}):\n${stdout}\nstderr:\n${stderr}`));
      }
    });
    child.stdin.end(JSON.stringify(input));
  });
}

beforeAll(async () => {
  // The server on the wall clock: runners are separate processes on the machine's clock.
  const clock = new TestClock();
  clock.now = () => new Date();
  t = await startTestApp({ clock });
  const admin = await t.setupAdmin();
  staffToken = admin.token;
  tenantId = admin.user.tenantId;
  for (const name of ['Acme Studio', 'Other App']) productIds[name] = (await t.seedProduct(tenantId, name)).id;
  // Imported keys (a scenario's importedKey) are licenses of Acme Studio too.
  await updateProduct(ctx(), productIds['Acme Studio'], { allowImportedKeys: true });
  control = createServer((req, res) => {
    handleControl(req, res).catch((error: Error) => {
      if (!res.headersSent) send(res, 500, { error: 'InternalError', message: error.message });
      else res.destroy(error);
    });
  });
  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
  controlUrl = `http://127.0.0.1:${(control.address() as AddressInfo).port}`;
});

afterAll(async () => {
  if (control) await new Promise((resolve) => control.close(resolve));
  await t?.close();
});

for (const language of LANGUAGES) {
  const requirement = need(language);
  describe(`${language.name} SDK`, () => {
    const it = itWith(requirement);
    let commandFor: Awaited<ReturnType<Language['prepare']>> | undefined;
    let buildDir = '';
    beforeAll(async () => {
      if (!runs(requirement) || requirement.missing) return;
      buildDir = mkdtempSync(path.join(tmpdir(), 'kf-conformance-build-'));
      commandFor = await language.prepare(buildDir);
    }, 300_000);
    afterAll(() => {
      if (buildDir) rmSync(buildDir, { recursive: true, force: true });
    });

    const scenarioRuns = [...scenarios.map((scenario) => ({ scenario, imported: false })), ...scenarios.filter((scenario) => scenario.license.importedKey).map((scenario) => ({ scenario, imported: true }))];
    for (const { scenario, imported } of scenarioRuns) {
      it(`scenario ${scenario.name}${imported ? ' with an imported key' : ''}`, async () => {
        const { id, key, licenseId } = await newRun(scenario, imported);
        const storeDir = mkdtempSync(path.join(tmpdir(), 'kf-conformance-store-'));
        try {
          const input = { scenario: scenario.name, server: t.baseUrl, issuer: t.config.publicUrl, product: 'Acme Studio', control: `${controlUrl}/run/${id}`, storeDir, licenseKey: key, ...scenario.inputs };
          const { steps, stderr } = await runRunner(commandFor!(scenario.name), input);
          expect(steps, `${language.name} runner, scenario ${scenario.name}${stderr ? `; its stderr:\n${stderr}` : ''}`).toEqual(scenario.expect);
          if (scenario.name === 'wrong-product') {
            // No seat of any kind was ever taken, not even for a moment.
            expect(await t.prisma.activation.count({ where: { licenseId } })).toBe(0);
            expect(await t.prisma.floatingSession.count({ where: { licenseId } })).toBe(0);
            expect((await t.prisma.license.findUniqueOrThrow({ where: { id: licenseId } })).currentActivations).toBe(0);
          }
        } finally {
          rmSync(storeDir, { recursive: true, force: true });
        }
      }, 120_000);
    }
  });
}
