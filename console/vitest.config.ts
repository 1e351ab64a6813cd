import react from '@vitejs/plugin-react';
import { defineProject } from 'vitest/config';

/** Component and unit tests of the console (jsdom); the root `pnpm test` runs them as project "console". */
export default defineProject({
  plugins: [react()],
  test: {
    name: 'console',
    root: import.meta.dirname,
    environment: 'jsdom',
    include: ['src/**/*.test.{ts,tsx}'],
    setupFiles: ['./src/test/setup.ts'],
    css: false,
    // jsdom renders of whole tables and dialogs take seconds when the two cores are busy with the server suites.
    testTimeout: 20_000,
  },
});
