import path from 'node:path';
import { expect } from 'vitest';
import { itWith, needCommands } from './support/optional.js';
import { runCommand } from './support/sdk-toolchains.js';

/**
 * The Go SDK's own test suite (sdks/go: the conformance vectors, the transport against hostile local servers —
 * retries, 429 forever, timeouts, non-JSON and huge answers, hostile JWKS —, the client's flows, the fuzz tests'
 * seed corpora), run with `go vet` and `go test` from Debian's golang-go. The module has no dependencies: with
 * GOPROXY=off and GOTOOLCHAIN=local nothing is ever downloaded.
 */
const sdk = path.resolve('sdks/go');

const run = (command: string, args: string[]) => runCommand(command, args, { cwd: sdk, env: { GOFLAGS: '-mod=mod', GOPROXY: 'off', GOTOOLCHAIN: 'local' } });

itWith(needCommands('go'))(
  'the Go SDK passes go vet and its go test suite (vectors, hostile servers, flows, fuzz seeds)',
  async () => {
    const vet = await run('go', ['vet', './...']);
    expect(vet.code, vet.output).toBe(0);
    // -count=1: never a cached "ok" for a suite whose inputs (the vectors) live outside the module; -timeout: a hang
    // fails with go test's goroutine dump, before vitest's own limit.
    const test = await run('go', ['test', '-count=1', '-timeout', '240s', './...']);
    // On failure the assertion message is go test's whole output.
    expect(test.code, test.output).toBe(0);
    expect(test.output).toMatch(/^ok\s+github\.com\/keyforge\/keyforge\/sdks\/go\s/m);
  },
  300_000,
);
