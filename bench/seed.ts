// Migrates the bench database and seeds one tenant, product and licenses (one hot, 200 more) through the service functions.
// Run by bench/run.ts as a child process (a fresh module graph per attempt, and no Prisma in the load
// generator's process). Env: BENCH_DB_URL, SERVER_SECRET, BENCH_KEY_PREFIX (default BENCH). Prints `BENCH_SEED {"key":…}` on success.
import { randomUUID } from 'node:crypto';
import { applyMigrations } from '../server/src/db/migrate.js';
import { createApiKey } from '../server/src/services/auth/api-keys.js';
import { seedDatabase } from '../test/support/seed.js';

const url = process.env.BENCH_DB_URL!;
/** Installations of the hot license that the device scenario validates as (bench/run.ts uses the same names). */
const BENCH_DEVICES = 1000;
await applyMigrations({ kind: 'pg', url });

await seedDatabase(url, process.env.SERVER_SECRET!, async (seed, db) => {
  const now = new Date();
  const tenant = await seed.tenant({ name: 'Bench Corp', keyPrefix: process.env.BENCH_KEY_PREFIX ?? 'BENCH' });
  const product = await seed.product(tenant.id, 'Bench Studio');
  // Enough seats that activate never runs out; a realistic small payload for the offline token.
  const { key, license } = await seed.license(tenant.id, product.id, {
    maxActivations: 1_000_000,
    offlineGraceDays: 7,
    features: ['pro', 'export', 'cloud-sync'],
    customFields: { plan: 'team' },
  });
  // The device scenario (validate with requireActivation) rotates over these installations of `key`.
  await db.prisma.activation.createMany({
    data: Array.from({ length: BENCH_DEVICES }, (_, i) => ({ tenantId: tenant.id, licenseId: license.id, deviceId: `bench-seat-${i}`, createdAt: now, lastSeenAt: now })),
  });
  // The activate scenario spreads over these (one installation per license at a time); hotkey uses `key` alone.
  const keys: string[] = [];
  for (let i = 0; i < 200; i++) keys.push((await seed.license(tenant.id, product.id, { maxActivations: 100_000, offlineGraceDays: 7, features: ['pro'] })).key);
  // A CompanyAdmin API key for the release upload scenario (bench/upload.ts).
  // A key needs an owner: a CompanyAdmin user creates it, as in the console.
  const owner = await seed.user(tenant.id, { email: 'admin@bench.test' });
  const family = randomUUID(); // the owner's session, re-authenticated (creating a key asks for it)
  await db.prisma.sessionReauthentication.create({ data: { familyId: family, userId: owner.id, reauthenticatedAt: new Date() } });
  const ownerCtx = { ...seed.ctx(tenant.id), actor: { kind: 'user' as const, userId: owner.id, tenantId: tenant.id, role: 'CompanyAdmin' as const, email: owner.email, sessionFamilyId: family } };
  const adminKey = (await createApiKey(ownerCtx, { name: 'bench', role: 'CompanyAdmin' })).key;
  process.stdout.write(`BENCH_SEED ${JSON.stringify({ key, keys, licenseId: license.id, devices: BENCH_DEVICES, adminKey, productId: product.id, productName: product.name })}\n`);
});
