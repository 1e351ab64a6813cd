import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'vitest';
import { itWith, type Need } from './support/optional.js';
import { PYTHON as python, runCommand } from './support/sdk-toolchains.js';

/**
 * The Python SDK's own test suite (sdks/python/tests: the conformance vectors, the transport against hostile local
 * servers, the client's protocol, the fuzz test, mypy --strict, a pip install into a fresh virtual environment), run
 * with pytest. It needs a Python 3 with Debian's python3-cryptography, python3-pytest, python3-hypothesis,
 * python3-mypy and python3-venv/python3-pip/python3-setuptools (test/support/sdk-toolchains.ts › PYTHON says which
 * interpreter).
 */
const sdk = path.resolve('sdks/python');

function needPython(): Need {
  const probe = spawnSync(python, ['-c', 'import cryptography, pytest, hypothesis, mypy, venv, ensurepip'], { encoding: 'utf8' });
  if (probe.error) return { what: 'Python 3', missing: `${python} cannot be run (${probe.error.message})` };
  return {
    what: 'Python 3 with cryptography, pytest, hypothesis, mypy, venv',
    missing: probe.status === 0 ? undefined : `${python}: ${probe.stderr.trim().split('\n').at(-1)} (apt-get install python3-cryptography python3-pytest python3-hypothesis python3-mypy python3-venv python3-pip python3-setuptools)`,
  };
}

itWith(needPython())(
  'the Python SDK passes its pytest suite (vectors, hostile servers, fuzz, mypy --strict, pip install)',
  async () => {
    const { code, output } = await runCommand(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests'], { cwd: sdk, env: { PYTHONDONTWRITEBYTECODE: '1' } }); // no __pycache__ left in the repository
    // On failure the assertion message is pytest's whole output.
    expect(code, output).toBe(0);
    expect(output).toMatch(/\d+ passed/);
  },
  480_000,
);
