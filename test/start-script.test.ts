import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitUntil } from './support/wait.js';

// `pnpm start` as a person runs it: the repository's start script and its build step, in a scratch workspace whose
// console and server "builds" print twenty lines each and whose built server is a stand-in that, like the real one,
// stops on SIGINT with exit code 0. Ctrl-C is SIGINT to the whole process group, as a terminal sends it.

const ROOT = path.resolve(import.meta.dirname, '..');
const dir = mkdtempSync(path.join(tmpdir(), 'kf-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NOISY_BUILD = (output: string) => `
  for (let i = 1; i <= 20; i += 1) console.log('build output line ' + i);
  require('node:fs').mkdirSync('dist', { recursive: true });
  ${output}
`;
// Its handler is in place before it says it runs, as the real server's is (main.ts): a Ctrl-C right after the line
// must not find the default action.
const STAND_IN_SERVER = `
  process.on('SIGINT', () => { console.log('stopped'); process.exit(0); });
  console.log('Keyforge is running.');
  setInterval(() => {}, 1000);
`;

function workspace() {
  const { scripts } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'start-check', private: true, type: 'module', scripts: { start: scripts.start } }));
  writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), 'packages:\n  - console\n  - server\n');
  mkdirSync(path.join(dir, 'server/scripts'), { recursive: true });
  for (const file of ['start.mjs', 'build-if-changed.mjs']) cpSync(path.join(ROOT, 'server/scripts', file), path.join(dir, 'server/scripts', file));
  for (const [name, output] of [['console', "require('node:fs').writeFileSync('dist/index.html', '')"], ['server', `require('node:fs').writeFileSync('dist/main.js', ${JSON.stringify(STAND_IN_SERVER)})`]]) {
    mkdirSync(path.join(dir, name, 'src'), { recursive: true });
    writeFileSync(path.join(dir, name, 'src/index.ts'), 'export {};\n');
    writeFileSync(path.join(dir, name, 'build.cjs'), NOISY_BUILD(output));
    writeFileSync(path.join(dir, name, 'package.json'), JSON.stringify({ name: `start-check-${name}`, private: true, scripts: { build: 'node build.cjs' } }));
  }
}

/** Runs `pnpm start` in its own process group until `ready` shows, then Ctrl-C; answers its exit code and output. */
async function startThenInterrupt(): Promise<{ code: number | null; output: string }> {
  const child = spawn('pnpm', ['start'], { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CI: '' } });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    await waitUntil(() => output.includes('Keyforge is running.'), { timeout: 60_000, what: 'the server' });
    process.kill(-child.pid!, 'SIGINT');
    return { code: await exited, output };
  } finally {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

describe('pnpm start', () => {
  it('first start: a progress line per build instead of its output, then the server; Ctrl-C ends it with exit 0 and no ELIFECYCLE', async () => {
    workspace();
    const first = await startThenInterrupt();
    expect(first.output).toMatch(/building console… done in \d+ s\n/);
    expect(first.output).toMatch(/building server… done in \d+ s\n/);
    expect(first.output).not.toContain('build output line');
    expect(first.output.indexOf('building server…')).toBeLessThan(first.output.indexOf('Keyforge is running.'));
    expect(first.output).toContain('stopped');
    expect(first.output).not.toMatch(/ELIFECYCLE|Command failed/);
    expect(first.code).toBe(0);

    // A later start builds nothing and says nothing about it.
    const second = await startThenInterrupt();
    expect(second.output).not.toContain('building');
    expect(second.output).not.toMatch(/ELIFECYCLE|Command failed/);
    expect(second.code).toBe(0);
  }, 180_000);

  it('a failing build shows its output and stops before the server', async () => {
    writeFileSync(path.join(dir, 'console/build.cjs'), "console.log('vite: something is wrong in App.tsx'); process.exit(1);");
    writeFileSync(path.join(dir, 'console/src/index.ts'), 'export const changed = 1;\n');
    const child = spawn('pnpm', ['start'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CI: '' } });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(output).toContain('building console… failed');
    expect(output).toContain('vite: something is wrong in App.tsx');
    expect(output).not.toContain('Keyforge is running.');
    expect(code).not.toBe(0);
  }, 120_000);

  it('concurrent callers build once: the others wait for it and find the output current; a lock left by a dead process is taken over', async () => {
    // A build that takes a while and counts its runs.
    writeFileSync(path.join(dir, 'console/build.cjs'), "const fs = require('node:fs'); fs.mkdirSync('dist', { recursive: true }); fs.appendFileSync('../builds.txt', 'console\\n'); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);");
    writeFileSync(path.join(dir, 'console/src/index.ts'), 'export const changed = 2;\n');
    const build = () =>
      new Promise<{ code: number | null; output: string }>((resolve) => {
        const child = spawn(process.execPath, ['server/scripts/build-if-changed.mjs', 'console'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout!.on('data', (chunk) => (output += chunk));
        child.stderr!.on('data', (chunk) => (output += chunk));
        child.on('exit', (code) => resolve({ code, output }));
      });
    const runs = await Promise.all([build(), build(), build()]);
    expect(runs.map((run) => run.code)).toEqual([0, 0, 0]);
    expect(readFileSync(path.join(dir, 'builds.txt'), 'utf8')).toBe('console\n');
    expect(runs.filter((run) => run.output.includes('building console…'))).toHaveLength(1);
    const lock = path.join(dir, 'node_modules/.cache/keyforge/build-console.lock');
    expect(existsSync(lock)).toBe(false);

    // A build killed while holding the lock: the next caller takes it over instead of waiting.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
    writeFileSync(lock, dead);
    writeFileSync(path.join(dir, 'console/src/index.ts'), 'export const changed = 3;\n');
    const after = await build();
    expect(after.code).toBe(0);
    expect(readFileSync(path.join(dir, 'builds.txt'), 'utf8')).toBe('console\nconsole\n');
    expect(existsSync(lock)).toBe(false);
  }, 120_000);
});
