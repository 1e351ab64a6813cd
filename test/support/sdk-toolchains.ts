import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * The native SDKs' toolchains, as the SDK tests (test/sdk-*.test.ts) and the conformance harness run them.
 * Python: KEYFORGE_PYTHON when set, else Debian's /usr/bin/python3 (where apt installs python3-cryptography and the
 * test packages), else python3 on PATH — so a version manager's python3 earlier on PATH is not picked by chance.
 */
export const PYTHON = process.env.KEYFORGE_PYTHON || (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');

/** Runs a command to its end; its exit code and its stdout and stderr interleaved (for an assertion's message). */
export function runCommand(command: string, args: string[], options: { cwd: string; env?: Record<string, string> }): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}
