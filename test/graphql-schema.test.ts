import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTROSPECTION_QUERY, SCHEMA_FILE, printSdl, sortedSdl, sortedSdlOfIntrospection } from '../server/src/graphql/print-schema.js';
import { startTestApp, type TestApp } from './support/harness.js';

const consoleDir = fileURLToPath(new URL('../console', import.meta.url));

describe('server/schema.graphql', () => {
  it('matches the schema the code builds', () => {
    const committed = readFileSync(SCHEMA_FILE, 'utf8');
    expect(committed, 'server/schema.graphql is out of date with server/src/graphql: run `pnpm schema:print` and commit the file').toBe(printSdl());
  });

  describe('and the schema a running server serves', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp();
    });
    afterAll(() => t.close());

    it('introspection of /api/graphql (with the server\'s plugins) gives the committed schema', async () => {
      const { token } = await t.setupAdmin();
      const response = await t.gql(INTROSPECTION_QUERY, {}, { token });
      expect(response.errors).toBeUndefined();
      // Introspection does not keep the order of definitions: both sides sorted.
      expect(sortedSdlOfIntrospection(response.data), 'the running server serves another schema than server/schema.graphql').toBe(sortedSdl(readFileSync(SCHEMA_FILE, 'utf8')));
    });
  });
});

describe('console/src/graphql-env.d.ts', () => {
  it('is what gql.tada generates from server/schema.graphql', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'kf-tada-'));
    try {
      const file = path.join(out, 'graphql-env.d.ts');
      // The console's own script and tsconfig plugin settings (schema ../server/schema.graphql), written elsewhere.
      const run = spawnSync('pnpm', ['exec', 'gql.tada', 'generate-output', '--output', file], { cwd: consoleDir, encoding: 'utf8', timeout: 120_000 });
      expect(run.status, run.stderr + run.stdout).toBe(0);
      expect(
        readFileSync(path.join(consoleDir, 'src', 'graphql-env.d.ts'), 'utf8'),
        'console/src/graphql-env.d.ts is out of date with server/schema.graphql: run `pnpm --filter ./console graphql:types` and commit the file',
      ).toBe(readFileSync(file, 'utf8'));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
