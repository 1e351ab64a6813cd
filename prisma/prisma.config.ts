import path from 'node:path';
import { defineConfig } from 'prisma/config';

// The CLI is used only for `generate`; migrations run through prisma/db.ts (offline schema engine).
export default defineConfig({
  schema: path.join(import.meta.dirname, 'schema.prisma'),
  migrations: { path: path.join(import.meta.dirname, 'migrations') },
});
