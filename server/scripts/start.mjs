// `pnpm start`: one process that builds what changed (build-if-changed.mjs, a progress line per build) and then runs
// the built server in itself. The package script `exec`s it, so pnpm's child is this process: on Ctrl-C the server
// stops, exits 0, and pnpm reports success (with a shell between them, the shell dies of the SIGINT and pnpm prints
// "ELIFECYCLE Command failed").
import { buildIfChanged } from './build-if-changed.mjs';

if (!buildIfChanged()) process.exit(1);
await import('../dist/main.js');
