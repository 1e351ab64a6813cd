// Runs `prisma generate` offline: the CLI only needs the (stubbed) schema engine path to exist. It writes the client
// and, with the `prisma-pothos-types` generator of @pothos/plugin-prisma (a server dependency, hence its bin on PATH),
// the model types and datamodel the GraphQL builder reads.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const result = spawnSync('pnpm', ['exec', 'prisma', 'generate', '--config', 'prisma/prisma.config.ts'], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    PATH: [path.join(root, 'server/node_modules/.bin'), process.env.PATH].join(path.delimiter),
    PRISMA_SCHEMA_ENGINE_BINARY: path.join(root, 'prisma/schema-engine-stub.sh'),
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    CHECKPOINT_DISABLE: '1',
  },
});
process.exit(result.status ?? 1);
