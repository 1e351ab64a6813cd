import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { currentServerSecrets, ServerSecrets } from '../../server/src/crypto/secrets.js';
import { openDatabase, type Database } from '../../server/src/db/database.js';
import type { Prisma } from '../../server/src/generated/prisma/client.js';
import { NO_META, systemActor } from '../../server/src/services/auth/actor.js';
import { createLicense, type CreateLicenseOptions, type LicenseInput } from '../../server/src/services/licenses/management.js';
import { createProduct } from '../../server/src/services/products.js';
import { createTenant } from '../../server/src/services/tenants.js';
import { createUser } from '../../server/src/services/users.js';

/**
 * The one way tests and benchmarks seed tenants, products, licenses and users: through the service functions, as
 * the operator (the system actor, as the CLI does), so a seeded row is what the product itself would write. The
 * harness's `seedTenant`/`seedProduct`/`seedLicense`/`seedUser`/`seedBasic` (test/support/harness.ts), the
 * two-tenant suites (test/support/tenants.ts), the fault tests' fleets, the embedded-database (PGlite) runs (a
 * `Database` opened by the test itself) and the benchmarks (bench/*.ts) all call it; `seedLicensesInBulk` below is
 * the one shortcut past the services, for thousands of rows or values the API refuses.
 */
export interface SeedTarget {
  db: Database;
  secrets: ServerSecrets;
  /** The clock the rows are written at (a test's clock, or the wall clock). */
  now: () => Date;
}

export const SEED_PASSWORD = 'correct horse battery';

export function seeder({ db, secrets, now }: SeedTarget) {
  /** A service context acting as the system (what the operator CLI does), in `tenantId` when given. */
  const ctx = (tenantId: string | null = null, label?: string) => ({ db, secrets, now: now(), actor: systemActor(tenantId, label), meta: NO_META });
  const tenant = (input: { name?: string; keyPrefix?: string; subscriptionEndsAt?: Date | null } = {}) =>
    createTenant(ctx(), { name: input.name ?? 'Acme Corp', keyPrefix: input.keyPrefix ?? 'ACME', subscriptionEndsAt: input.subscriptionEndsAt });
  const product = (tenantId: string, name = 'Acme Studio', bundleOf?: string[]) => createProduct(ctx(tenantId), { name, bundleOf });
  const license = (tenantId: string, productId: string, attributes: Partial<LicenseInput> = {}, options?: CreateLicenseOptions) => createLicense(ctx(tenantId), { productId, maxActivations: 5, ...attributes }, options);
  return {
    ctx,
    tenant,
    product,
    license,
    /** A user created directly, as the operator CLI does (members otherwise join by invitation). */
    user: (tenantId: string, input: { email: string; password?: string; role?: 'CompanyAdmin' | 'ReadOnly'; name?: string }) =>
      createUser(ctx(tenantId, 'system (cli)'), { email: input.email, password: input.password ?? SEED_PASSWORD, role: input.role ?? 'CompanyAdmin', name: input.name }),
    /** One tenant, one product, one license: the common starting point. */
    async basic(attributes: Partial<LicenseInput> = {}) {
      const created = await tenant();
      const made = await product(created.id);
      const { key, license: seeded } = await license(created.id, made.id, attributes);
      return { tenant: created, product: made, key, license: seeded };
    },
  };
}

export type Seeder = ReturnType<typeof seeder>;

/**
 * Seeds a database the caller does not otherwise hold open (a private cluster, a bench database): opens it with a
 * small pool, runs `seed`, and closes it again so no pooled connection of this process outlives the seeding (a fault
 * test then stops PostgreSQL under the server alone).
 */
export async function seedDatabase<T>(databaseUrl: string, serverSecret: string, seed: (seed: Seeder, db: Database) => Promise<T>, { now = () => new Date() } = {}): Promise<T> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'kf-seed-')); // unused with PostgreSQL, but required
  const db = await openDatabase({ databaseUrl, dataDir, poolSize: 2 });
  // The activity log is keyed with the process's secrets (recordAudit): the seeded database's own for the seed, and
  // whatever this process used before (a test app's) afterwards.
  let previous: ServerSecrets | undefined;
  try {
    previous = currentServerSecrets();
  } catch {
    previous = undefined;
  }
  const secrets = new ServerSecrets(serverSecret).useForProcess();
  try {
    return await seed(seeder({ db, secrets, now }), db);
  } finally {
    previous?.useForProcess();
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * `count` licenses of a product in one statement: ~0.1 s for thousands, where the service takes milliseconds each.
 * Random key digests (no plaintext key: these licenses are for jobs and lists, not for clients); `row(index)` sets
 * the rest (expiry, customer, status...). Returns nothing: read back what the test needs.
 */
export async function seedLicensesInBulk(
  prisma: Database['prisma'],
  { tenantId, productId, count, hintPrefix = 'BULK' }: { tenantId: string; productId: string; count: number; hintPrefix?: string },
  row: (index: number) => Partial<Prisma.LicenseCreateManyInput> = () => ({}),
) {
  await prisma.license.createMany({
    data: Array.from({ length: count }, (_, index) => ({
      tenantId,
      productId,
      keyDigest: randomBytes(32).toString('hex'),
      keyHint: `${hintPrefix}-…-${String(index).padStart(5, '0')}`,
      maxActivations: 1,
      ...row(index),
    })),
  });
}
