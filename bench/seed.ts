// Migrates the bench database and seeds one tenant, product and licenses (one hot, 200 more) through the service functions.
// Run by bench/run.ts as a child process (a fresh module graph per attempt, and no Prisma in the load
// generator's process). Env: BENCH_DB_URL, SERVER_SECRET, BENCH_KEY_PREFIX (default BENCH). Prints `BENCH_SEED {"key":…}` on success.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ServerSecrets } from '../server/src/crypto/secrets.js';
import { openDatabase } from '../server/src/db/database.js';
import { applyMigrations } from '../server/src/db/migrate.js';
import { createLicense } from '../server/src/services/licenses/management.js';
import { createProduct } from '../server/src/services/products.js';
import { NO_META, operatorIn, systemActor } from '../server/src/services/auth/actor.js';
import { createTenant } from '../server/src/services/tenants.js';

const url = process.env.BENCH_DB_URL!;
/** Installations of the hot license that the device scenario validates as (bench/run.ts uses the same names). */
const BENCH_DEVICES = 1000;
await applyMigrations({ kind: 'pg', url });

const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-bench-seed-')); // unused with PostgreSQL, but required
const db = await openDatabase({ databaseUrl: url, dataDir });
try {
  const ctx = { db, secrets: new ServerSecrets(process.env.SERVER_SECRET!), now: new Date(), actor: systemActor(null), meta: NO_META };
  const tenant = await createTenant(ctx, { name: 'Bench Corp', keyPrefix: process.env.BENCH_KEY_PREFIX ?? 'BENCH' });
  const product = await createProduct(operatorIn(ctx, tenant.id), { name: 'Bench Studio' });
  // Enough seats that activate never runs out; a realistic small payload for the offline token.
  const { key, license } = await createLicense(operatorIn(ctx, tenant.id), {
    productId: product.id,
    maxActivations: 1_000_000,
    offlineGraceDays: 7,
    features: ['pro', 'export', 'cloud-sync'],
    customFields: { plan: 'team' },
  });
  // The device scenario (validate with requireActivation) rotates over these installations of `key`.
  await db.prisma.activation.createMany({
    data: Array.from({ length: BENCH_DEVICES }, (_, i) => ({ tenantId: tenant.id, licenseId: license.id, deviceId: `bench-seat-${i}`, createdAt: ctx.now, lastSeenAt: ctx.now })),
  });
  // The activate scenario spreads over these (one installation per license at a time); hotkey uses `key` alone.
  const keys: string[] = [];
  for (let i = 0; i < 200; i++) keys.push((await createLicense(operatorIn(ctx, tenant.id), { productId: product.id, maxActivations: 100_000, offlineGraceDays: 7, features: ['pro'] })).key);
  process.stdout.write(`BENCH_SEED ${JSON.stringify({ key, keys, licenseId: license.id, devices: BENCH_DEVICES })}\n`);
} finally {
  await db.close();
  rmSync(dataDir, { recursive: true, force: true });
}
