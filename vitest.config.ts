import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * The suites that take minutes, longest first (measured in full runs). A fresh clone has no timing cache, and vitest
 * would start the largest files first; these are short files that run long (fuzzers, processes, leases) and, started
 * last, would leave one worker running alone at the end of the run.
 */
const LONG_SUITES = [
  // The fuzzers keep a core busy each; the fault suites mostly wait out leases. Alternated, two cores do both.
  'fuzz-graphql-mutations.test.ts',
  'fault-worker.test.ts',
  'fuzz-graphql-mutations-second-half.test.ts',
  'fault-bulk-job.test.ts',
  'fuzz-graphql-queries.test.ts',
  'cli.test.ts',
  'fuzz-rest.test.ts',
  'fuzz-portal.test.ts',
  'console.e2e.test.ts',
  'deployment.test.ts',
  'security-sign-in.test.ts',
  'email-expiry.test.ts',
  'embedded.e2e.test.ts',
  'fault-database.test.ts',
];
class LongestFirst extends BaseSequencer {
  async sort(files: TestSpecification[]) {
    const rank = (file: TestSpecification) => {
      const index = LONG_SUITES.findIndex((name) => file.moduleId.endsWith(`/test/${name}`));
      return index === -1 ? LONG_SUITES.length : index;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b)); // stable: the rest keep vitest's order
  }
}

export default defineConfig({
  // Node loads graphql's CommonJS build for the libraries; make Vite resolve the same file for our
  // sources (it would pick index.mjs), or graphql sees two copies of itself.
  resolve: { alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }] },
  test: {
    projects: [
      // Server suites: real PostgreSQL, one database per file cloned from a migrated template.
      // Not isolated: a worker process runs file after file on one module graph. Loading the server's modules anew
      // for each file cost a quarter of the suite's CPU; every file starts and closes its own apps and databases.
      { extends: true, test: { name: 'server', include: ['test/**/*.test.ts'], globalSetup: ['test/support/global-setup.ts'], isolate: false } },
      // Console component/unit tests (jsdom): console/vitest.config.ts.
      'console/vitest.config.ts',
    ],
    // Generous: the CLI tests spawn many processes and share two cores with the fuzz and fault suites.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // Browser and process polls wait for a condition, not a time: under a full run's load a refetch can take seconds.
    expect: { poll: { timeout: 15_000 } },
    pool: 'forks',
    sequence: { sequencer: LongestFirst },
    // Two cores, but most suites spend their time waiting on child processes, leases and PostgreSQL: a third file
    // in parallel keeps the cores busy and the whole run under 30 minutes.
    maxWorkers: 3,
  },
});
