#!/bin/sh
# Prisma's CLI wants a native schema engine it cannot download offline. `prisma generate` does not need
# it; migrations go through prisma/db.ts (schema-engine-wasm). Exit 1 so a migrate command fails loudly.
echo "prisma: the native schema engine is not available here; use pnpm db:migrate / db:migration / db:status" >&2
exit 1
