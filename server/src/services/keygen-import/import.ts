import { randomUUID } from 'node:crypto';
import { sha256 } from '../../crypto/secrets.js';
import { AppError } from '../../domain/errors.js';
import { releaseSeat } from '../licenses/activations.js';
import { canonicalKeyDigest } from '../licenses/license-record.js';
import { reinstateLicense, suspendLicense } from '../licenses/lifecycle.js';
import { insertLicenses, KEY_UNUSABLE, licenseWriteRefusal, moveLicenseToPlan, productForNewLicense, newLicenseAttributes, preparedLicense, revokeLicense, updateLicense, vendorSuppliedKey, type PreparedLicense } from '../licenses/management.js';
import { createPlan, planForNewLicense, updatePlan } from '../plans.js';
import { createProduct, updateProduct } from '../products.js';
import { recordAudit } from '../audit/audit-log.js';
import { auditActor, requireAdmin } from '../auth/actor.js';
import type { ServiceContext } from '../context.js';
import { isUniqueViolation } from '../validation.js';
import { text, type KeygenResource } from './documents.js';
import { customFields, licenseOf, Notes, planOf, reportUnmapped, type ImportNote, type PlannedLicense, type PlannedPlan } from './mapping.js';
import type { KeygenAccount } from './source.js';

// Imports a Keygen account read by source.ts into one company: products, plans (policies), features
// (entitlements), licenses with their keys and activations (machines). Everything is checked and mapped before the
// first write. Licenses are written in batches, each batch in one transaction with the licenses' activations and
// their rows in keygen_import_mappings, so a crash leaves no half-imported license and a re-run skips what is done; a
// product or plan created just before a crash is found again by its name. A re-run applies what changed on the
// Keygen side since the last run (the digest of the mapped values differs) and leaves the rest alone.

export interface ImportCounts {
  created: number;
  changed: number;
  unchanged: number;
  skipped: number;
}
const counts = (): ImportCounts => ({ created: 0, changed: 0, unchanged: 0, skipped: 0 });

export interface ImportProblem {
  type: string;
  keygenId: string;
  message: string;
}

export interface KeygenImportReport {
  dryRun: boolean;
  read: { pages: number; products: number; policies: number; entitlements: number; users: number; licenses: number; machines: number };
  products: ImportCounts;
  plans: ImportCounts;
  features: ImportCounts;
  licenses: ImportCounts;
  activations: ImportCounts;
  /** What was not (or not exactly) carried over, counted per attribute. */
  notes: ImportNote[];
  /** Objects not imported, each with its reason (the first MAX_PROBLEMS; problemCount counts all). */
  problems: ImportProblem[];
  problemCount: number;
}

export const MAX_PROBLEMS = 1000;

export interface KeygenImportProgress {
  phase: 'products' | 'plans' | 'licenses' | 'machines';
  done: number;
  total: number;
}

export interface KeygenImportOptions {
  dryRun?: boolean;
  onProgress?: (progress: KeygenImportProgress) => void;
}

type Kind = 'product' | 'policy' | 'entitlement' | 'license' | 'machine';
interface Mapping {
  keyforgeId: string;
  digest: string;
}

const digestOf = (value: unknown) => sha256(JSON.stringify(value));
const byId = (resources: Map<string, KeygenResource>) => [...resources.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/** Imports (or with dryRun, only reports) a Keygen account into the caller's company (CompanyAdmin). Audited (ImportKeygenAccount). */
export async function importKeygenAccount(ctx: ServiceContext, account: KeygenAccount, options: KeygenImportOptions = {}): Promise<KeygenImportReport> {
  const { tenantId } = requireAdmin(ctx);
  const dryRun = options.dryRun ?? false;
  const prisma = ctx.db.prisma;
  const notes = new Notes();
  const { resources } = account;
  const report: KeygenImportReport = {
    dryRun,
    read: {
      pages: account.pages,
      products: resources.products.size,
      policies: resources.policies.size,
      entitlements: resources.entitlements.size,
      users: resources.users.size,
      licenses: resources.licenses.size,
      machines: resources.machines.size,
    },
    products: counts(),
    plans: counts(),
    features: counts(),
    licenses: counts(),
    activations: counts(),
    notes: [],
    problems: [],
    problemCount: 0,
  };
  const problem = (type: string, keygenId: string, message: string) => {
    report.problemCount += 1;
    if (report.problems.length < MAX_PROBLEMS) report.problems.push({ type, keygenId, message });
  };

  const mapped = new Map<string, Mapping>();
  for (const row of await prisma.keygenImportMapping.findMany({ where: { tenantId }, select: { kind: true, keygenId: true, keyforgeId: true, digest: true } })) {
    mapped.set(`${row.kind}:${row.keygenId}`, row);
  }
  const mappingOf = (kind: Kind, keygenId: string) => mapped.get(`${kind}:${keygenId}`);
  const remember = async (kind: Kind, keygenId: string, keyforgeId: string, digest: string) => {
    await prisma.keygenImportMapping.upsert({
      where: { tenantId_kind_keygenId: { tenantId, kind, keygenId } },
      create: { tenantId, kind, keygenId, keyforgeId, digest, updatedAt: ctx.now },
      update: { keyforgeId, digest, updatedAt: ctx.now },
    });
    mapped.set(`${kind}:${keygenId}`, { keyforgeId, digest });
  };

  // Everything is mapped, and every value the mapping reads checked, before the first write: a malformed document
  // stops the import here with nothing written.
  const productNames = new Map<string, string>();
  for (const product of byId(resources.products)) {
    reportUnmapped(product, notes);
    productNames.set(product.id, (text(product, 'name', 'products', { max: 1000 }) ?? '').trim().slice(0, 200) || `Keygen product ${product.id}`);
  }
  const entitlementCodes = new Map<string, string>();
  for (const entitlement of byId(resources.entitlements)) {
    reportUnmapped(entitlement, notes);
    if (customFields(entitlement, 'entitlements', notes)) notes.add('entitlements', 'metadata', 'a feature has no metadata: not imported', entitlement.id);
    entitlementCodes.set(entitlement.id, (text(entitlement, 'code', 'entitlements') ?? text(entitlement, 'name', 'entitlements') ?? '').trim());
  }
  const plans = new Map<string, PlannedPlan>();
  for (const policy of byId(resources.policies)) {
    const planned = planOf(account, policy, notes);
    if ('error' in planned) {
      report.plans.skipped += 1;
      problem('policies', policy.id, `not imported: ${planned.error}`);
      continue;
    }
    plans.set(policy.id, planned);
  }
  const machinesOf = new Map<string, KeygenResource[]>();
  for (const machine of byId(resources.machines)) {
    const licenseId = machine.related.license;
    if (!licenseId || !resources.licenses.has(licenseId)) {
      report.activations.skipped += 1;
      problem('machines', machine.id, `not imported: its license ${licenseId ?? '(none)'} is not in the documents`);
      continue;
    }
    if (!machinesOf.has(licenseId)) machinesOf.set(licenseId, []);
    machinesOf.get(licenseId)!.push(machine);
  }
  const licenses = byId(resources.licenses);
  const plannedLicenses: PlannedLicense[] = [];
  for (const license of licenses) {
    const planned = licenseOf(account, license, machinesOf.get(license.id) ?? [], plans, notes);
    if ('error' in planned) {
      report.licenses.skipped += 1;
      report.activations.skipped += machinesOf.get(license.id)?.length ?? 0;
      problem('licenses', license.id, `not imported: ${planned.error}`);
      continue;
    }
    plannedLicenses.push(planned);
  }

  // Products. A product of the same name that no other Keygen product took is the same product (a re-run after a
  // crash between its creation and its mapping finds it so).
  const productIds = new Map<string, string | null>();
  const existingProducts = await prisma.product.findMany({ where: { tenantId }, select: { id: true, name: true, allowImportedKeys: true } });
  const takenProducts = new Set([...mapped.entries()].filter(([key]) => key.startsWith('product:')).map(([, row]) => row.keyforgeId));
  const products = byId(resources.products);
  for (const [index, product] of products.entries()) {
    options.onProgress?.({ phase: 'products', done: index, total: products.length });
    let name = productNames.get(product.id)!;
    const mapping = mappingOf('product', product.id);
    const current = mapping && existingProducts.find((candidate) => candidate.id === mapping.keyforgeId);
    if (current) {
      productIds.set(product.id, current.id);
      const digest = digestOf({ name });
      if (digest === mapping.digest) {
        report.products.unchanged += 1;
        continue;
      }
      report.products.changed += 1;
      if (dryRun) continue;
      if (current.name !== name && existingProducts.some((other) => other.name === name)) name = `${name} (${product.id.slice(0, 8)})`;
      await updateProduct(ctx, current.id, { name, allowImportedKeys: true });
      await remember('product', product.id, current.id, digest);
      continue;
    }
    const digest = digestOf({ name });
    let same = existingProducts.find((candidate) => candidate.name === name);
    if (same && takenProducts.has(same.id)) {
      name = `${name} (${product.id.slice(0, 8)})`;
      same = existingProducts.find((candidate) => candidate.name === name);
    }
    if (same) {
      notes.add('products', 'name', 'a product of this name existed: its plans and licenses are added to it', product.id);
      report.products.unchanged += 1;
      productIds.set(product.id, same.id);
    } else {
      report.products.created += 1;
      productIds.set(product.id, null);
      if (dryRun) continue;
    }
    if (dryRun) continue;
    // Keygen's keys are of another format: the product takes them (a product of the same name is set so too).
    if (same && !same.allowImportedKeys) {
      notes.add('products', 'name', 'the existing product of this name now accepts imported keys', product.id);
      await updateProduct(ctx, same.id, { allowImportedKeys: true });
    }
    const id = same?.id ?? (await createProduct(ctx, { name, allowImportedKeys: true })).id;
    if (!same) existingProducts.push({ id, name, allowImportedKeys: true });
    takenProducts.add(id);
    productIds.set(product.id, id);
    await remember('product', product.id, id, digest);
  }

  // Features: entitlement codes (a feature is a name on a plan or license, nothing to create); counted by code.
  for (const [entitlementId, code] of entitlementCodes) {
    const entitlement = { id: entitlementId };
    const mapping = mappingOf('entitlement', entitlement.id);
    if (!code || code.length > 100) {
      report.features.skipped += 1;
      continue;
    }
    if (mapping?.keyforgeId === code) report.features.unchanged += 1;
    else if (mapping) report.features.changed += 1;
    else report.features.created += 1;
    if (!dryRun && mapping?.keyforgeId !== code) await remember('entitlement', entitlement.id, code, digestOf({ code }));
  }

  // Plans.
  const planIds = new Map<string, string | null>();
  // The plans a policy is already mapped to: a plan of the same name that is one of them belongs to another policy.
  const mappedPlans = new Set([...mapped].filter(([key]) => key.startsWith('policy:')).map(([, row]) => row.keyforgeId));
  for (const [index, [policyId, planned]] of [...plans.entries()].entries()) {
    const policy = resources.policies.get(policyId)!;
    options.onProgress?.({ phase: 'plans', done: index, total: plans.size });
    const productId = productIds.get(planned.productKeygenId) ?? null;
    const digest = digestOf(planned.input);
    const mapping = mappingOf('policy', policy.id);
    const current = mapping && (await prisma.plan.findFirst({ where: { id: mapping.keyforgeId, tenantId }, select: { id: true, name: true } }));
    if (current) {
      planIds.set(policy.id, current.id);
      if (digest === mapping.digest) {
        report.plans.unchanged += 1;
        continue;
      }
      report.plans.changed += 1;
      if (!dryRun) {
        const { name, ...rest } = planned.input;
        const clash = name !== current.name && (await prisma.plan.findFirst({ where: { productId: productId ?? undefined, name, tenantId }, select: { id: true } }));
        await updatePlan(ctx, current.id, { ...rest, name: clash ? current.name : name });
        await remember('policy', policy.id, current.id, digest);
      }
      continue;
    }
    if (productId === null) {
      report.plans.created += 1;
      planIds.set(policy.id, null);
      continue;
    }
    let same = await prisma.plan.findFirst({ where: { tenantId, productId, name: planned.input.name }, select: { id: true } });
    if (same && mappedPlans.has(same.id)) {
      planned.input.name = `${planned.input.name.slice(0, 189)} (${policy.id.slice(0, 8)})`;
      same = await prisma.plan.findFirst({ where: { tenantId, productId, name: planned.input.name }, select: { id: true } });
    }
    if (same) {
      report.plans.unchanged += 1;
      notes.add('policies', 'name', 'a plan of this name existed: it was updated to the policy', policy.id);
    } else report.plans.created += 1;
    if (dryRun) {
      planIds.set(policy.id, same?.id ?? null);
      continue;
    }
    const id = same ? (await updatePlan(ctx, same.id, planned.input)).id : (await createPlan(ctx, { ...planned.input, productId })).id;
    planIds.set(policy.id, id);
    await remember('policy', policy.id, id, digest);
    mappedPlans.add(id);
  }

  // Licenses with their machines, in batches: each batch one transaction, so a license commits with its activations
  // and its mapping row or not at all. The license rows of the mapped ones, read in pages.
  const existingLicenses = new Map<string, ExistingLicense>();
  const mappedLicenseIds = plannedLicenses.flatMap((planned) => mappingOf('license', planned.keygenId)?.keyforgeId ?? []);
  for (let at = 0; at < mappedLicenseIds.length; at += 1000) {
    const rows = await prisma.license.findMany({ where: { tenantId, id: { in: mappedLicenseIds.slice(at, at + 1000) } }, select: { id: true, status: true, planId: true, productId: true } });
    for (const row of rows) existingLicenses.set(row.id, row);
  }
  const existingOf = (planned: PlannedLicense) => {
    const mapping = mappingOf('license', planned.keygenId);
    return mapping ? existingLicenses.get(mapping.keyforgeId) : undefined;
  };
  // Keys any other license of the installation has or had (read in batches, outside any transaction): reported, in a
  // dry run too.
  const keyDigests = new Map<PlannedLicense, string>();
  const keyTaken = new Set<string>();
  const fresh = plannedLicenses.filter((planned) => !existingOf(planned));
  for (const planned of fresh) keyDigests.set(planned, canonicalKeyDigest(ctx.secrets, planned.key));
  for (let at = 0; at < fresh.length; at += 1000) {
    const digests = fresh.slice(at, at + 1000).map((planned) => keyDigests.get(planned)!);
    for (const row of await prisma.licenseKeyDigest.findMany({ where: { keyDigest: { in: digests } }, select: { keyDigest: true } })) keyTaken.add(row.keyDigest);
  }
  const keysSeen = new Set<string>();
  const keyRefused = (planned: PlannedLicense) => {
    problem('licenses', planned.keygenId, `not imported: ${KEY_UNUSABLE.replace('; generate a new one.', '')} (another license of this installation has or had this key)`);
    report.licenses.skipped += 1;
    report.activations.skipped += planned.activations.length;
  };
  const refused = (planned: PlannedLicense, error: AppError) => {
    if (error.message === KEY_UNUSABLE) return keyRefused(planned);
    report.licenses.skipped += 1;
    report.activations.skipped += planned.activations.length;
    problem('licenses', planned.keygenId, `not imported: ${error.message}`);
  };

  // What createLicense reads for a license (the company's key prefix, the product, the plan), read once per plan.
  const keyPrefix = dryRun ? '' : (await prisma.tenant.findUniqueOrThrow({ where: { id: tenantId }, select: { keyPrefix: true } })).keyPrefix;
  const targets = new Map<string, Promise<Target>>();
  const targetOf = (productId: string, planId: string | null) => {
    const key = `${productId}:${planId}`;
    if (!targets.has(key)) targets.set(key, readTarget(ctx, tenantId, keyPrefix, productId, planId));
    return targets.get(key)!;
  };
  const pending: NewImported[] = [];
  let pendingMachines = 0;
  const written = (items: NewImported[]) => {
    report.licenses.created += items.length;
    report.activations.created += items.reduce((sum, item) => sum + item.planned.activations.length, 0);
  };
  const flush = async () => {
    const batch = pending.splice(0);
    pendingMachines = 0;
    if (!batch.length) return;
    try {
      await writeImported(ctx, tenantId, batch);
      written(batch);
      return;
    } catch (error) {
      if (!refusalOf(error, null)) throw error;
    }
    // A license the database refuses (its key taken, its product deleted meanwhile) rolls its batch back: each is
    // then written alone, so that only it is reported.
    for (const item of batch) {
      try {
        await writeImported(ctx, tenantId, [item]);
        written([item]);
      } catch (error) {
        const refusal = refusalOf(error, item);
        if (!refusal) throw error;
        refused(item.planned, refusal);
      }
    }
  };

  for (const [index, planned] of plannedLicenses.entries()) {
    if (index % 100 === 0) options.onProgress?.({ phase: 'licenses', done: index, total: plannedLicenses.length });
    const planId = planIds.get(planned.policyKeygenId) ?? null;
    const productKeygenId = plans.get(planned.policyKeygenId)!.productKeygenId;
    const productId = productIds.get(productKeygenId) ?? null;
    const licenseDigest = licenseDigestOf(planned);
    const mapping = mappingOf('license', planned.keygenId);
    const existing = existingOf(planned);

    if (!existing) {
      const digest = keyDigests.get(planned)!;
      if (keyTaken.has(digest) || keysSeen.has(digest)) {
        keyRefused(planned);
        continue;
      }
      keysSeen.add(digest);
      if (dryRun) {
        report.licenses.created += 1;
        report.activations.created += planned.activations.length;
        continue;
      }
      try {
        pending.push({ planned, ...prepareImported(ctx, await targetOf(productId!, planId), planned), digest, licenseDigest });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        refused(planned, error);
        continue;
      }
      pendingMachines += planned.activations.length;
      if (pending.length >= BATCH_LICENSES || pendingMachines >= BATCH_ACTIVATIONS) await flush();
      continue;
    }

    // Imported before: apply what changed on the Keygen side. A license moved to a policy of another product keeps
    // its product and plan (Keygen refuses such a move; a document may still say it).
    const otherProduct = productId !== null && productId !== existing.productId;
    if (otherProduct) notes.add('licenses', 'policy', 'moved to a policy of another product: the license keeps its product and plan', planned.keygenId);
    const moved = !otherProduct && planId !== existing.planId;
    const machineChanges = planned.activations.filter((activation) => mappingOf('machine', activation.keygenId)?.digest !== digestOf(activation));
    // A mapping written before the digest held the policy: the license's plan says whether it moved.
    const licenseChanged = licenseDigest !== mapping!.digest && (mapping!.digest !== legacyLicenseDigestOf(planned) || moved);
    if (!licenseChanged && !machineChanges.length) {
      report.licenses.unchanged += 1;
      report.activations.unchanged += planned.activations.length;
      continue;
    }
    if (licenseChanged) report.licenses.changed += 1;
    else report.licenses.unchanged += 1;
    for (const activation of planned.activations) {
      if (!mappingOf('machine', activation.keygenId)) report.activations.created += 1;
      else if (machineChanges.includes(activation)) report.activations.changed += 1;
      else report.activations.unchanged += 1;
    }
    if (dryRun) continue;
    try {
      if (licenseChanged) await applyLicenseChanges(ctx, existing, planned, moved ? planId : null, notes);
      await applyMachineChanges(ctx, tenantId, existing.id, machineChanges, mappingOf);
      await remember('license', planned.keygenId, existing.id, licenseDigest);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      problem('licenses', planned.keygenId, `changes not applied: ${error.message}`);
    }
  }
  await flush();

  // Machines deleted on the Keygen side (an account read whole): their activations are deactivated, freeing the seat.
  // In batches of GONE_BATCH, each one transaction (a run killed mid-way leaves whole batches done, the rest mapped for
  // the next run); the seats are released in license order, so that two batches never wait on each other's rows.
  const gone = [...mapped.entries()].filter(([key]) => key.startsWith('machine:') && !resources.machines.has(key.slice('machine:'.length)));
  report.activations.changed += gone.length;
  for (let start = 0; !dryRun && start < gone.length; start += GONE_BATCH) {
    options.onProgress?.({ phase: 'machines', done: start, total: gone.length });
    const batch = gone.slice(start, start + GONE_BATCH);
    await prisma.$transaction(async (tx) => {
      const activations = await tx.activation.findMany({ where: { id: { in: batch.map(([, row]) => row.keyforgeId) }, tenantId }, select: { id: true, licenseId: true }, orderBy: [{ licenseId: 'asc' }, { id: 'asc' }] });
      for (const activation of activations) await releaseSeat(tx, activation, ctx.now);
      await tx.keygenImportMapping.deleteMany({ where: { tenantId, kind: 'machine', keygenId: { in: batch.map(([key]) => key.slice('machine:'.length)) } } });
    }, BATCH_TRANSACTION);
  }

  report.notes = notes.list();
  if (!dryRun) {
    const details = {
      read: report.read,
      ...Object.fromEntries((['products', 'plans', 'features', 'licenses', 'activations'] as const).map((part) => [part, report[part]])),
      notes: report.notes.length,
      problems: report.problemCount,
    };
    await prisma.$transaction((tx) =>
      recordAudit(tx, { tenantId, action: 'ImportKeygenAccount', entityType: 'Import', entity: `Keygen account (${report.read.licenses} licenses)`, details }, auditActor(ctx), ctx.now),
    );
  }
  return report;
}

/** Licenses written in one transaction at most (fewer when their machines reach BATCH_ACTIVATIONS). */
const BATCH_LICENSES = 100;
const BATCH_ACTIVATIONS = 2_000;
const BATCH_TRANSACTION = { maxWait: 20_000, timeout: 120_000 } as const;
/** Machines deleted on the Keygen side whose activations one transaction deactivates. */
const GONE_BATCH = 200;
/** Rows one INSERT writes at most: under PostgreSQL's 65,535 bound parameters at 9 columns a row. */
const ROWS_PER_STATEMENT = 5_000;

/** What the import compares to see whether a license changed on the Keygen side: its values, status and policy. */
const licenseDigestOf = (planned: PlannedLicense) => digestOf({ status: planned.status, ...planned.input, policy: planned.policyKeygenId });
/** The digest of mappings written before it held the policy: such a license is unchanged while its plan is its policy's. */
const legacyLicenseDigestOf = (planned: PlannedLicense) => digestOf({ status: planned.status, ...planned.input });

interface ExistingLicense {
  id: string;
  status: string;
  planId: string | null;
  productId: string;
}

/** What createLicense reads for the licenses of one product and plan, or the plan's refusal (not found, archived). */
interface Target {
  read: Parameters<typeof preparedLicense>[0] | null;
  planError: AppError | null;
}

async function readTarget(ctx: ServiceContext, tenantId: string, keyPrefix: string, productId: string, planId: string | null): Promise<Target> {
  let plan: Awaited<ReturnType<typeof planForNewLicense>> | null = null;
  if (planId) {
    try {
      plan = await planForNewLicense(ctx, tenantId, planId);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return { read: null, planError: error };
    }
  }
  const product = await productForNewLicense(ctx, tenantId, productId);
  return { read: product && { tenantId, keyPrefix, product, plan }, planError: null };
}

interface NewImported {
  planned: PlannedLicense;
  prepared: PreparedLicense;
  key: string;
  /** The key's digest (for the checks before and inside the batch's transaction). */
  digest: string;
  licenseDigest: string;
}

/** A license checked as createLicense checks it, in its order (plan, attributes, product, key); writes nothing. */
function prepareImported(ctx: ServiceContext, target: Target, planned: PlannedLicense) {
  if (target.planError) throw target.planError;
  const attributes = newLicenseAttributes(ctx, target.read?.plan ?? null, planned.input);
  if (!target.read) throw new AppError('NotFound', 'Product not found.');
  const prepared = preparedLicense(target.read, attributes);
  return { prepared, key: vendorSuppliedKey(prepared.product, prepared.keyPrefix, planned.key) };
}

/** Why the database refused a license (its key taken, its product or plan deleted meanwhile), as createLicense says it; null for another error. */
function refusalOf(error: unknown, item: NewImported | null): AppError | null {
  return error instanceof AppError ? error : licenseWriteRefusal(error, Boolean(item?.prepared.plan));
}

/**
 * Writes licenses with their activations and mapping rows in one transaction, in a few statements whatever their
 * number: insertLicenses writes the rows (with the Keygen status and the seats in use), events and activity entries
 * as createLicense does.
 */
async function writeImported(ctx: ServiceContext, tenantId: string, batch: NewImported[]) {
  await ctx.db.prisma.$transaction(async (tx) => {
    // A key any license of the installation has or had: checked before the batch (keyTaken), again for one written meanwhile.
    if (await tx.licenseKeyDigest.findFirst({ where: { keyDigest: { in: batch.map((item) => item.digest) } }, select: { keyDigest: true } })) throw new AppError('Conflict', KEY_UNUSABLE);
    const ids = batch.map(() => randomUUID());
    const status = (planned: PlannedLicense) =>
      planned.status === 'suspended' ? { status: 'suspended' as const, suspendedAt: ctx.now } : planned.status === 'revoked' ? { status: 'revoked' as const, revokedAt: ctx.now } : {};
    await insertLicenses(
      tx,
      ctx,
      tenantId,
      batch.map(({ planned, prepared, key }, index) => ({
        prepared,
        key,
        auditDetails: { importedFrom: 'Keygen', keygenId: planned.keygenId, ...(planned.status !== 'active' && { status: planned.status }) },
        columns: { id: ids[index], ...status(planned), currentActivations: planned.activations.length },
      })),
    );
    const activations = batch.flatMap(({ planned }, index) => planned.activations.map((activation) => ({ activation, licenseId: ids[index], id: randomUUID() })));
    const mappings = [
      ...batch.map(({ planned, licenseDigest }, index) => ({ tenantId, kind: 'license', keygenId: planned.keygenId, keyforgeId: ids[index], digest: licenseDigest, updatedAt: ctx.now })),
      ...activations.map(({ id, activation }) => ({ tenantId, kind: 'machine', keygenId: activation.keygenId, keyforgeId: id, digest: digestOf(activation), updatedAt: ctx.now })),
    ];
    // In statements of at most ROWS_PER_STATEMENT rows (one license may have tens of thousands of machines).
    for (let at = 0; at < activations.length; at += ROWS_PER_STATEMENT) {
      await tx.activation.createMany({
        data: activations
          .slice(at, at + ROWS_PER_STATEMENT)
          .map(({ id, licenseId, activation: { deviceId, deviceName, platform, ip, createdAt, lastSeenAt } }) => ({ id, tenantId, licenseId, deviceId, deviceName, platform, ip, createdAt, lastSeenAt })),
      });
    }
    for (let at = 0; at < mappings.length; at += ROWS_PER_STATEMENT) await tx.keygenImportMapping.createMany({ data: mappings.slice(at, at + ROWS_PER_STATEMENT) });
  }, BATCH_TRANSACTION);
}

/** A mapped license's attributes, plan and status made what the Keygen side now says (each through the service that audits it). */
async function applyLicenseChanges(ctx: ServiceContext, existing: { id: string; status: string }, planned: PlannedLicense, planId: string | null, notes: Notes) {
  const { customFields: fields, ...rest } = planned.input;
  await updateLicense(ctx, existing.id, { ...rest, customFields: fields });
  if (planId) await moveLicenseToPlan(ctx, existing.id, planId);
  if (existing.status === planned.status) return;
  if (existing.status === 'revoked') notes.add('licenses', 'status', 'revoked in Keyforge: a revocation is final, the license stays revoked', planned.keygenId);
  else if (planned.status === 'revoked') await revokeLicense(ctx, existing.id);
  else if (planned.status === 'suspended') await suspendLicense(ctx, { id: existing.id });
  else await reinstateLicense(ctx, { id: existing.id });
}

/** New machines of a mapped license become activations; changed ones update theirs (one transaction). */
async function applyMachineChanges(ctx: ServiceContext, tenantId: string, licenseId: string, changes: PlannedLicense['activations'], mappingOf: (kind: Kind, id: string) => Mapping | undefined) {
  if (!changes.length) return;
  await ctx.db.prisma.$transaction(async (tx) => {
    let added = 0;
    for (const activation of changes) {
      const { keygenId, ...fields } = activation;
      const known = mappingOf('machine', keygenId);
      const current = known && (await tx.activation.findFirst({ where: { id: known.keyforgeId, tenantId, licenseId }, select: { id: true } }));
      const id = current ? current.id : randomUUID();
      if (current) await tx.activation.update({ where: { id }, data: { deviceName: fields.deviceName, platform: fields.platform, ip: fields.ip, lastSeenAt: fields.lastSeenAt } });
      else {
        await tx.activation.create({ data: { id, tenantId, licenseId, ...fields } });
        added += 1;
      }
      const digest = digestOf(activation);
      await tx.keygenImportMapping.upsert({
        where: { tenantId_kind_keygenId: { tenantId, kind: 'machine', keygenId } },
        create: { tenantId, kind: 'machine', keygenId, keyforgeId: id, digest, updatedAt: ctx.now },
        update: { keyforgeId: id, digest, updatedAt: ctx.now },
      });
    }
    if (added) await tx.license.update({ where: { id: licenseId }, data: { currentActivations: { increment: added } } });
  });
}
