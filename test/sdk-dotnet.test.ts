import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'vitest';
import { itWith, type Need } from './support/optional.js';
import { runCommand } from './support/sdk-toolchains.js';

/**
 * The .NET SDK's own tests (sdks/dotnet/tests: every conformance vector, hostile servers, the private file store, a
 * fuzz run), built with Mono's compiler by sdks/dotnet/build.sh and run on Mono. Needs Debian's mono-mcs,
 * mono-runtime, libmono-system-net-http4.0-cil and libsodium23 (Ed25519 and AES-GCM come from libsodium).
 */
const sdk = path.resolve('sdks/dotnet');

function needMono(): Need {
  const missing = ['mcs', 'mono'].filter((name) => spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status !== 0);
  if (missing.length) return { what: 'Mono', missing: `${missing.join(', ')} not on PATH (apt-get install mono-mcs mono-runtime libmono-system-net-http4.0-cil libsodium23)` };
  const sodium = spawnSync('sh', ['-c', 'ldconfig -p | grep -q "libsodium.so.23"']);
  return { what: 'Mono and libsodium', missing: sodium.status === 0 ? undefined : 'libsodium.so.23 not installed (apt-get install libsodium23)' };
}

itWith(needMono())(
  'the .NET SDK builds without warnings and passes its tests on Mono (vectors, hostile servers, file modes, fuzz)',
  async () => {
    const build = await runCommand('bash', ['build.sh'], { cwd: sdk });
    expect(build.code, build.output).toBe(0);
    const tests = await runCommand('mono', ['build/Keyforge.Tests.exe'], { cwd: sdk });
    expect(tests.code, tests.output).toBe(0);
    expect(tests.output).toMatch(/^\d+ passed, 0 failed$/m);
  },
  300_000,
);
