import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { itWith, type Need } from './support/optional.js';

/**
 * The Python SDK's own test suite (sdks/python/tests: the conformance vectors, the transport against hostile local
 * servers, the client's protocol, the fuzz test, mypy --strict, a pip install into a fresh virtual environment), run
 * with pytest. It needs a Python 3 with Debian's python3-cryptography, python3-pytest, python3-hypothesis,
 * python3-mypy and python3-venv/python3-pip/python3-setuptools: KEYFORGE_PYTHON when set, else Debian's
 * /usr/bin/python3 (where apt installs those), else python3 on PATH.
 */
const sdk = path.resolve('sdks/python');
const python = process.env.KEYFORGE_PYTHON || (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');

function needPython(): Need {
  const probe = spawnSync(python, ['-c', 'import cryptography, pytest, hypothesis, mypy, venv, ensurepip'], { encoding: 'utf8' });
  if (probe.error) return { what: 'Python 3', missing: `${python} cannot be run (${probe.error.message})` };
  return {
    what: 'Python 3 with cryptography, pytest, hypothesis, mypy, venv',
    missing: probe.status === 0 ? undefined : `${python}: ${probe.stderr.trim().split('\n').at(-1)} (apt-get install python3-cryptography python3-pytest python3-hypothesis python3-mypy python3-venv python3-pip python3-setuptools)`,
  };
}

function run(command: string, args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    // PYTHONDONTWRITEBYTECODE: the run leaves no __pycache__ in the repository.
    const child = spawn(command, args, { cwd, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

itWith(needPython())(
  'the Python SDK passes its pytest suite (vectors, hostile servers, fuzz, mypy --strict, pip install)',
  async () => {
    const { code, output } = await run(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests'], sdk);
    // On failure the assertion message is pytest's whole output.
    expect(code, output).toBe(0);
    expect(output).toMatch(/\d+ passed/);
  },
  480_000,
);
