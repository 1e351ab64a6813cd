import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Node loads graphql's CommonJS build for the libraries; make Vite resolve the same file for our
  // sources (it would pick index.mjs), or graphql sees two copies of itself.
  resolve: { alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }] },
  test: {
    projects: [
      // Server suites: real PostgreSQL, one database per file cloned from a migrated template.
      { extends: true, test: { name: 'server', include: ['test/**/*.test.ts'], globalSetup: ['test/support/global-setup.ts'] } },
      // Console component/unit tests (jsdom): console/vitest.config.ts.
      'console/vitest.config.ts',
    ],
    // Generous: the CLI tests spawn many processes and share two cores with the fuzz and fault suites.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // Browser and process polls wait for a condition, not a time: under a full run's load a refetch can take seconds.
    expect: { poll: { timeout: 15_000 } },
    pool: 'forks',
    // Two cores, but most suites spend their time waiting on child processes, leases and PostgreSQL: a third file
    // in parallel keeps the cores busy and the whole run under 30 minutes.
    maxWorkers: 3,
  },
});
