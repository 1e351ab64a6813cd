import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitUntil } from './wait.js';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The command line of `pnpm cli` (package.json), run without pnpm's own start-up: the suite runs the CLI often. */
const CLI = ['--import', 'tsx', path.join(REPO_ROOT, 'server/src/cli.ts')];

/** Runs `pnpm cli …` synchronously and returns its exit code and output. */
export function runCli(args: string[], env: Record<string, string>) {
  // A cold tsx start on a loaded machine can take most of a minute.
  const result = spawnSync(process.execPath, [...CLI, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 120_000 });
  let json: any;
  try {
    json = JSON.parse(result.stdout);
  } catch {
    json = undefined;
  }
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, json };
}

/**
 * runCli without blocking this process: for a CLI run that talks to a server the test itself serves (spawnSync
 * would stop that server's event loop until the CLI gives up).
 */
export function runCliAsync(args: string[], env: Record<string, string>, input?: string): Promise<ReturnType<typeof runCli>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      let json: any;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ status, stdout, stderr, json });
    });
    child.stdin.end(input ?? '');
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Every process started here that may still run: `stopAllProcesses()` (in an afterEach/afterAll) ends them. */
const running = new Set<ChildProcess>();

function track(child: ChildProcess) {
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** SIGKILLs every process this module started that still runs, and waits for each to exit. */
export async function stopAllProcesses(): Promise<void> {
  await Promise.all([...running].map((child) => killAndWait(child, 'SIGKILL')));
}

function killAndWait(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill(signal);
  });
}

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  /** Sends `signal` (SIGTERM: a graceful stop) and resolves with the exit code once it exited. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `pnpm worker` (server/src/worker.ts) with `env` and resolves once it processes jobs. */
export async function startWorkerProcess(env: Record<string, string>, { timeout = 60_000 } = {}): Promise<WorkerProcess> {
  const child = track(spawn(process.execPath, ['--import', 'tsx', 'server/src/worker.ts'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const worker: WorkerProcess = { child, output: () => output, stop: (signal = 'SIGTERM') => killAndWait(child, signal) };
  try {
    await waitUntil(
      () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`worker exited with ${child.exitCode ?? child.signalCode}:\n${output}`);
        return output.includes('job worker started');
      },
      { timeout, interval: 50, what: 'the worker to start' },
    );
  } catch (error) {
    await worker.stop('SIGKILL');
    throw error;
  }
  return worker;
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts the real server (`tsx server/src/main.ts`) and waits until /readyz answers; on `env.PORT` when given (a restart in place), else a free port. LICENSE_CACHE is off unless `env` sets it. */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  // One process (tsx as a loader, not a wrapper), so signals reach the server itself.
  // The license cache is off unless `env` turns it on: a test that changes a license and validates at once must not
  // depend on the notification beating its request (test/license-cache.test.ts covers the cache).
  const child = track(spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], { env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LICENSE_CACHE: 'off', ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const url = `http://127.0.0.1:${port}`;
  try {
    // Generous: a loaded two-core machine; a healthy start takes seconds.
    await waitUntil(
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited with ${child.exitCode ?? child.signalCode}`);
        return (await fetch(`${url}/readyz`).catch(() => undefined))?.ok; // undefined: not listening yet
      },
      { timeout: 120_000, interval: 200, what: 'the server to become ready' },
    );
  } catch (error) {
    await killAndWait(child, 'SIGKILL');
    throw new Error(`${(error as Error).message}:\n${output}`);
  }
  return {
    url,
    child,
    output: () => output,
    stop: (signal = 'SIGTERM') => killAndWait(child, signal),
  };
}

export async function postJson(url: string, body: unknown) {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, json: (await response.json()) as any };
}
