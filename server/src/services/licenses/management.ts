import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { canonicalLicenseKey, generateLicenseKey, isKeyforgeKey, LICENSE_KEY_FORMAT, licenseKeyHint } from '../../crypto/license-key.js';
import { KEY_DIGEST_VERSION } from '../../crypto/secrets.js';
import type { Database } from '../../db/database.js';
import { AppError } from '../../domain/errors.js';
import { Prisma, type Activation, type License, type Plan } from '../../generated/prisma/client.js';
import { diffChanges, lockTenantAudit, recordAudit, recordAudits, type AuditEvent } from '../audit/audit-log.js';
import { auditActor, requireAdmin, requireMember, requireOperator } from '../auth/actor.js';
import type { ServiceContext } from '../context.js';
import { activationData, emitEvent, emitEvents, licenseData } from '../webhooks/events.js';
import { releaseSeat } from './activations.js';
import { canonicalKeyDigest, licenseEntity, licenseKeyDigest } from './license-record.js';
import { findTenantPlan, planForNewLicense, planLicenseValues, planQuotas } from '../plans.js';
import { expiringSql, expiringWhere, LICENSE_STATUSES, statusRangesSql, statusSql, statusWhere } from './predicates.js';
import { CreatedAtIdCursor, cappedCount, COUNT_CAP, countUpTo, createdAtIdWhere, DEFAULT_PAGE_SIZE, isUuid, keyset, SEARCH_COUNT_CAP, searchMatches, toPage, type Count, type Keyset, type PageArgs } from '../listing.js';
import { isUniqueViolation, parseInput } from '../validation.js';
import { LICENSE_ATTRIBUTES, LicenseAttributesObject, LicenseAttributesSchema, VERSION_ORDER, versionsInOrder, type LicenseInput } from './attributes.js';

export { LicenseAttributesSchema, type LicenseInput } from './attributes.js';

// Licenses as vendors manage them (GraphQL, the operator CLI): create, change, revoke, list, free a seat. The
// public protocol on the same licenses is activations.ts (activate/deactivate) and validate.ts.

const jsonValues = (values: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v]));

/**
 * The refusal of a provided key that a license has or had, in this company or another: one message whatever the
 * reason, so that it never tells a company that a key exists elsewhere.
 */
export const KEY_UNUSABLE = 'This key cannot be used; generate a new one.';

/** A product that does not take imported keys (`allowImportedKeys`) refuses a key in another format with this. */
export const IMPORTED_KEY_REFUSED = 'is not in Keyforge\'s key format, and this product does not accept imported keys (turn on "Accept imported keys" in its settings)';

const keyRefused = (message: string) => new AppError('InvalidRequest', `Invalid input: key: ${message}`, { fields: { key: message } });

/**
 * A vendor-supplied key for a license of `product`, in its canonical form (`canonicalLicenseKey`). A product with
 * `allowImportedKeys` takes any key of that form; another one only a Keyforge key with the company's prefix.
 * InvalidRequest (field `key`) otherwise, never with the key in the message.
 */
export function vendorSuppliedKey(product: { allowImportedKeys: boolean }, keyPrefix: string, input: string): string {
  const key = canonicalLicenseKey(input);
  if (!key) throw keyRefused(LICENSE_KEY_FORMAT);
  if (product.allowImportedKeys) return key;
  if (!isKeyforgeKey(key)) throw keyRefused(IMPORTED_KEY_REFUSED);
  if (!key.startsWith(`${keyPrefix}-`)) throw keyRefused(`must start with your key prefix ${keyPrefix}- (or turn on "Accept imported keys" for the product)`);
  return key;
}

/** How a license is created with a vendor-supplied key (GraphQL `createLicense`'s `key`, the CSV import, importers). */
export interface CreateLicenseOptions {
  /**
   * A key the vendor issued before, as given (any format `canonicalLicenseKey` accepts; one not in Keyforge's format
   * only for a product with `allowImportedKeys`, else InvalidRequest): stored in its canonical form as its digest,
   * like a generated one; Conflict (KEY_UNUSABLE) when any license of the installation has or had it.
   */
  key?: string;
  /** More details for the activity entry (the import's file line and notes). */
  auditDetails?: Record<string, unknown>;
  /** Runs inside the creating transaction (the import marks its row there, so a crash cannot create a row twice). */
  inTransaction?: (tx: Prisma.TransactionClient, license: { id: string; keyHint: string }, key: string) => Promise<void>;
}

/** A plan's fields a caller gave alongside it: the given ones (null included) override the plan's, omitted ones do not. */
const given = (input: Record<string, unknown>) => Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));

/**
 * Creates a license of one of the caller's products (CompanyAdmin) and returns its plaintext key: the only time
 * it exists outside the customer's hands. Audited (CreateLicense, with the attributes and key hint, never the key).
 *
 * With `planId`, the license is created from that plan (services/plans.ts): the plan's values are copied onto it,
 * its expiry and maintenance end computed from the plan's periods from now, the plan's usage quotas set on it, and
 * it keeps the plan's id. A field given alongside the plan (null included: `expiresAt: null` sells it perpetual)
 * overrides the plan's value. `productId` may then be omitted; given, it must be the plan's product.
 */
export async function createLicense(ctx: ServiceContext, input: LicenseInput & { productId?: string | null; planId?: string | null }, options: CreateLicenseOptions = {}) {
  const prepared = await prepareLicense(ctx, input);
  const { plan, tenantId } = prepared;
  const supplied = options.key === undefined ? undefined : vendorSuppliedKey(prepared.product, prepared.keyPrefix, options.key);
  // A digest collision is astronomically unlikely (78 bits), but retrying costs nothing.
  for (let attempt = 0; ; attempt++) {
    const key = supplied ?? generateLicenseKey(prepared.keyPrefix);
    try {
      const license = await ctx.db.prisma.$transaction(async (tx) => {
        // A key any license of the installation has or had (live, or retired by a reissue) is never issued again: the
        // database refuses it too (license_key_digests), this says so before anything is written.
        if (supplied && (await tx.licenseKeyDigest.findUnique({ where: { keyDigest: canonicalKeyDigest(ctx.secrets, key) }, select: { keyDigest: true } }))) {
          throw new AppError('Conflict', KEY_UNUSABLE);
        }
        const created = await insertLicense(tx, ctx, prepared, key, options.auditDetails);
        await options.inTransaction?.(tx, created, key);
        return created;
      });
      return { key, license: await findTenantLicense(ctx, tenantId, license.id) };
    } catch (error) {
      // A generated key that collided is drawn again; a supplied one is refused.
      const refusal = licenseWriteRefusal(error, Boolean(plan));
      if (refusal && (!isUniqueViolation(error) || supplied)) throw refusal;
      if (!isUniqueViolation(error) || attempt >= 2) throw error;
    }
  }
}

/**
 * How the database's refusal of a new license is told: its product (or plan) deleted meanwhile, which its foreign key
 * refuses, or its key taken (a unique violation). Null for any other error.
 */
export function licenseWriteRefusal(error: unknown, hasPlan: boolean): AppError | null {
  if ((error as { code?: string }).code === 'P2003') return hasPlan ? new AppError('NotFound', 'Plan not found.', { fields: { planId: 'not found' } }) : new AppError('NotFound', 'Product not found.');
  if (isUniqueViolation(error)) return new AppError('Conflict', KEY_UNUSABLE);
  return null;
}

/** The product a new license of a company may be of (null: none, or not that company's). */
export async function productForNewLicense(ctx: ServiceContext, tenantId: string, productId: string) {
  return isUuid(productId) ? ctx.db.prisma.product.findFirst({ where: { id: productId, tenantId }, select: { id: true, name: true, allowImportedKeys: true } }) : null;
}

/** A license checked and computed, ready to be written (createLicense; payments/apply.ts inside its own transaction). */
export type PreparedLicense = Awaited<ReturnType<typeof prepareLicense>>;

/** Authorizes and validates a new license (its plan's values applied), reading what it needs; writes nothing. */
export async function prepareLicense(ctx: ServiceContext, input: LicenseInput & { productId?: string | null; planId?: string | null }) {
  const { tenantId } = requireAdmin(ctx);
  const { productId: productIdIn, planId, ...rest } = input;
  const plan = planId === undefined || planId === null ? null : await planForNewLicense(ctx, tenantId, String(planId));
  const productId = productIdIn ?? plan?.productId;
  if (typeof productId !== 'string') throw new AppError('InvalidRequest', 'Invalid input: productId: is required (or a planId)', { fields: { productId: 'is required (or a planId)' } });
  const attributes = newLicenseAttributes(ctx, plan, rest);
  const tenant = await ctx.db.prisma.tenant.findUnique({ where: { id: tenantId }, select: { keyPrefix: true } });
  const product = await productForNewLicense(ctx, tenantId, productId);
  if (!tenant || !product) throw new AppError('NotFound', 'Product not found.');
  return preparedLicense({ tenantId, keyPrefix: tenant.keyPrefix, product, plan }, attributes);
}

/** A new license's attributes, checked: the plan's values (as of now) under the given ones. Reads nothing. */
export function newLicenseAttributes(ctx: Pick<ServiceContext, 'now'>, plan: Plan | null, input: LicenseInput) {
  return parseInput(LicenseAttributesSchema, plan ? { ...planLicenseValues(plan, ctx.now), ...given(input) } : input);
}

/**
 * A license prepared from what prepareLicense reads (the company's key prefix, its product, its plan from
 * planForNewLicense) and its checked attributes: a bulk path reads those once for many licenses.
 */
export function preparedLicense(
  read: { tenantId: string; keyPrefix: string; product: { id: string; name: string; allowImportedKeys: boolean }; plan: (Plan & { product: { name: string } }) | null },
  attributes: ReturnType<typeof newLicenseAttributes>,
) {
  const { plan, product } = read;
  if (plan && plan.productId !== product.id) {
    const message = `is a plan of ${plan.product.name}, not of ${product.name}`;
    throw new AppError('InvalidRequest', `Invalid input: planId: ${message}`, { fields: { planId: message } });
  }
  return { ...read, attributes, quotas: plan ? planQuotas(plan) : [] };
}

/** The row of a prepared license with `key` (canonical); `columns` set more of it (an import's status and seats in use). */
function newLicenseRow(ctx: ServiceContext, prepared: PreparedLicense, key: string, columns: Partial<Prisma.LicenseCreateManyInput> = {}) {
  const { tenantId, product, plan, attributes } = prepared;
  const customFields = attributes.customFields ?? undefined;
  return {
    ...attributes,
    customFields: customFields === null ? undefined : customFields,
    tenantId,
    productId: product.id,
    planId: plan?.id ?? null,
    keyDigest: canonicalKeyDigest(ctx.secrets, key),
    keyDigestVersion: KEY_DIGEST_VERSION,
    keyHint: licenseKeyHint(key),
    createdAt: ctx.now,
    ...columns,
  } satisfies Prisma.LicenseCreateManyInput;
}

/**
 * The locks new licenses take, in the order every writer takes them. Their products and plans first
 * (lockLicenseParents). Then the activity log's lock (lockTenantAudit), before the rows: their triggers update the
 * company's tallies, which a license change holding that lock updates too.
 */
async function lockForNewLicenses(tx: Prisma.TransactionClient, tenantId: string, prepared: readonly PreparedLicense[]) {
  await lockLicenseParents(tx, prepared);
  await lockTenantAudit(tx, tenantId);
}

/**
 * The products and plans licenses are about to reference (new licenses, a license moved to another plan), in the mode
 * their foreign keys take anyway (FOR KEY SHARE), before the activity log's lock: a product or plan edit holds its
 * row, then waits for that lock. A transaction that takes the lock early (a payment event) takes these first.
 */
export async function lockLicenseParents(tx: Prisma.TransactionClient, prepared: readonly { product: { id: string }; plan: { id: string } | null }[]) {
  const productIds = [...new Set(prepared.map((license) => license.product.id))];
  const planIds = [...new Set(prepared.flatMap((license) => (license.plan ? [license.plan.id] : [])))];
  await tx.$executeRaw`SELECT 1 FROM products WHERE id = ANY(${productIds}::uuid[]) ORDER BY id FOR KEY SHARE`;
  if (planIds.length) await tx.$executeRaw`SELECT 1 FROM plans WHERE id = ANY(${planIds}::uuid[]) ORDER BY id FOR KEY SHARE`;
}

/** The CreateLicense activity entry of a license just written. */
function licenseCreatedAudit(prepared: PreparedLicense, created: License, auditDetails?: Record<string, unknown>): AuditEvent {
  const { tenantId, product, plan, attributes, quotas } = prepared;
  const fromPlan = plan ? { planId: plan.id, planName: plan.name, ...(quotas.length ? { quotas } : {}) } : {};
  const details = { productId: product.id, productName: product.name, ...fromPlan, keyHint: created.keyHint, ...jsonValues(attributes), ...auditDetails };
  return { tenantId, action: 'CreateLicense', entityType: 'License', entityId: created.id, entity: licenseEntity(created, product.name), details };
}

/** Writes a prepared license with `key` (canonical) in the caller's transaction: the row, its quotas, the license.created event and the activity entry. */
export async function insertLicense(tx: Prisma.TransactionClient, ctx: ServiceContext, prepared: PreparedLicense, key: string, auditDetails?: Record<string, unknown>) {
  await lockForNewLicenses(tx, prepared.tenantId, [prepared]);
  const created = await tx.license.create({ data: newLicenseRow(ctx, prepared, key) });
  const { quotas, tenantId } = prepared;
  if (quotas.length) await tx.meterQuota.createMany({ data: quotas.map((quota) => ({ licenseId: created.id, ...quota })) });
  await emitEvent(tx, tenantId, 'license.created', licenseData(created), ctx.now);
  await recordAudit(tx, licenseCreatedAudit(prepared, created, auditDetails), auditActor(ctx), ctx.now);
  return created;
}

/** One license of insertLicenses: `columns` set more of its row (an import's status and seats in use). */
export interface NewLicense {
  prepared: PreparedLicense;
  /** Canonical; its digest checked free by the caller (the database refuses a taken one: the whole batch rolls back). */
  key: string;
  auditDetails?: Record<string, unknown>;
  columns?: Pick<Prisma.LicenseCreateManyInput, 'id' | 'status' | 'suspendedAt' | 'revokedAt' | 'currentActivations'>;
}

/**
 * Writes many prepared licenses of one company as insertLicense writes one, in a few statements in the caller's
 * transaction (an importer's batch): the rows, their quotas, their license.created events and activity entries (in
 * the order given). Returns the rows in that order.
 */
export async function insertLicenses(tx: Prisma.TransactionClient, ctx: ServiceContext, tenantId: string, licenses: readonly NewLicense[]) {
  if (!licenses.length) return [];
  if (licenses.some((license) => license.prepared.tenantId !== tenantId)) throw new Error('insertLicenses: every license is of one company');
  await lockForNewLicenses(tx, tenantId, licenses.map((license) => license.prepared));
  const rows = licenses.map((license) => newLicenseRow(ctx, license.prepared, license.key, { ...license.columns, id: license.columns?.id ?? randomUUID() }));
  const written = new Map((await tx.license.createManyAndReturn({ data: rows })).map((row) => [row.id, row]));
  const created = rows.map((row) => written.get(row.id!)!);
  const quotas = licenses.flatMap((license, index) => license.prepared.quotas.map((quota) => ({ licenseId: created[index].id, ...quota })));
  if (quotas.length) await tx.meterQuota.createMany({ data: quotas });
  await emitEvents(tx, tenantId, 'license.created', created.map((row) => ({ data: licenseData(row) })), ctx.now);
  await recordAudits(tx, tenantId, licenses.map((license, index) => licenseCreatedAudit(license.prepared, created[index], license.auditDetails)), auditActor(ctx), ctx.now);
  return created;
}

/** The license of a plaintext key, in any tenant (operator CLI only); NotFound when no license has it. */
export async function findByKey(ctx: ServiceContext, licenseKey: string) {
  requireOperator(ctx);
  const digest = licenseKeyDigest(ctx.secrets, licenseKey);
  const license = digest ? await ctx.db.prisma.license.findUnique({ where: { keyDigest: digest } }) : null;
  if (!license) throw new AppError('NotFound', 'License not found.');
  return license;
}

/** Activations `license:show` lists (newest first); a license may have tens of thousands. */
const SHOWN_ACTIVATIONS = 100;

/** A license with its product, tenant, the newest SHOWN_ACTIVATIONS activations and how many there are in all. */
export async function showLicenseByKey(ctx: ServiceContext, licenseKey: string) {
  const license = await findByKey(ctx, licenseKey);
  const { _count, ...shown } = await ctx.db.prisma.license.findUniqueOrThrow({
    where: { id: license.id },
    omit: { keyDigest: true, keyDigestVersion: true, customerEmailLocal: true, customerEmailDomain: true },
    include: {
      product: { select: { id: true, name: true, isBundle: true } },
      tenant: { select: { id: true, name: true, keyPrefix: true } },
      activations: { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], take: SHOWN_ACTIVATIONS },
      _count: { select: { activations: true } },
    },
  });
  return { ...shown, activationCount: _count.activations };
}

// ─── Management API (tenant-scoped: another tenant's license answers NotFound) ──────────────────────

/** Columns the API never shows: the key digest, and the email's parts the search reads (generated columns). */
const HIDDEN_COLUMNS = ['keyDigest', 'keyDigestVersion', 'customerEmailLocal', 'customerEmailDomain'] as const;
type ShownColumn = Exclude<Prisma.LicenseScalarFieldEnum, (typeof HIDDEN_COLUMNS)[number]>;
/** The columns the API shows of a license: all but HIDDEN_COLUMNS (the GraphQL License type selects these). */
export const LICENSE_COLUMNS = Object.fromEntries(
  Object.values(Prisma.LicenseScalarFieldEnum)
    .filter((column) => !(HIDDEN_COLUMNS as readonly string[]).includes(column))
    .map((column) => [column, true]),
) as { [K in ShownColumn]: true };

/** What the API shows of a license: never the key digest. */
const LICENSE_VIEW = { select: { ...LICENSE_COLUMNS, product: { select: { id: true, name: true, isBundle: true } } } } satisfies Prisma.LicenseDefaultArgs;

/**
 * Relations a caller wants loaded with the license rows, in the same query: the GraphQL layer passes what the
 * request selects (docs/integrate/management-api.md "Loading relations"), so a page of licenses and their relations is one
 * query per relation, not one per license.
 */
export interface LicenseQuery {
  select?: Prisma.LicenseSelect;
}

/** LICENSE_VIEW with the caller's relations besides (the rows are typed as the view; the relations ride along). */
const licenseView = (query: LicenseQuery = {}) => (query.select ? { select: { ...LICENSE_VIEW.select, ...query.select } } : LICENSE_VIEW) as typeof LICENSE_VIEW;

export async function findTenantLicense(ctx: Pick<ServiceContext, 'db'>, tenantId: string, id: string, query?: LicenseQuery) {
  const license = isUuid(id) ? await ctx.db.prisma.license.findFirst({ where: { id, tenantId }, ...licenseView(query) }) : null;
  if (!license) throw new AppError('NotFound', 'License not found.');
  return license;
}

/** A license with its product; its activations are paged by `listLicenseActivations` (a license may have 20,000). */
export async function getLicense(ctx: ServiceContext, id: string, query?: LicenseQuery) {
  return findTenantLicense(ctx, requireMember(ctx), id, query);
}

export const LicenseFilterSchema = z.object({
  productId: z.string().trim().nullish(),
  /** Licenses created from this plan. */
  planId: z.string().trim().nullish(),
  status: z.enum(LICENSE_STATUSES).nullish(),
  /** Active licenses with now < expiresAt ≤ now + N days. */
  expiringWithinDays: z.number().int().min(1).max(3650).nullish(),
  /** Part of the customer email or of the key hint (case-insensitive), or a whole key. */
  search: z.string().trim().max(200).nullish(),
});
export type LicenseFilter = z.input<typeof LicenseFilterSchema>;

export function licenseWhere(ctx: ServiceContext, tenantId: string, filter: z.output<typeof LicenseFilterSchema>): Prisma.LicenseWhereInput {
  const { now } = ctx;
  const and: Prisma.LicenseWhereInput[] = [{ tenantId }];
  if (filter.productId) and.push(isUuid(filter.productId) ? { productId: filter.productId } : { id: { in: [] } });
  if (filter.planId) and.push(isUuid(filter.planId) ? { planId: filter.planId } : { id: { in: [] } });
  if (filter.status) and.push(statusWhere(filter.status, now));
  if (filter.expiringWithinDays) and.push(expiringWhere(now, { to: filter.expiringWithinDays }));
  if (filter.search) {
    const text = filter.search.replaceAll('...', '…'); // "ACME-...-WZ3P" as typed finds the hint "ACME-…-WZ3P"
    const digest = licenseKeyDigest(ctx.secrets, filter.search);
    and.push({
      OR: [
        { customerEmail: { contains: text, mode: 'insensitive' } },
        { keyHint: { contains: text, mode: 'insensitive' } },
        ...(digest ? [{ keyDigest: digest }] : []),
      ],
    });
  }
  return { AND: and };
}

/**
 * A text search as SQL, in two forms. `branches`: a license matches when any holds; each is one condition that one
 * index answers (the domain btree, the trigram index of the local part or of the key hint, the key digest), so the
 * search's matches are a UNION ALL of index scans (`searchMatchesSql`) rather than one OR condition, which PostgreSQL
 * can only answer by a bitmap over every index or by scanning the rows another filter selects. `check`: the same
 * test on a row already read (the whole email and the key hint, no index can answer it), for walking the list's
 * order (`walkedSql`).
 */
interface SearchSql {
  branches: Prisma.Sql[];
  check: Prisma.Sql;
  /** The text as a LIKE pattern (`%text%`). */
  pattern: string;
}

/** The filter's conditions as SQL over `licenses`: all but the search (`and`), the same split into index ranges (`ranges`, see `statusRangesSql`), and the search. */
async function filterSql(ctx: ServiceContext, tenantId: string, filter: z.output<typeof LicenseFilterSchema>) {
  const base: Prisma.Sql[] = [Prisma.sql`tenant_id = ${tenantId}::uuid`];
  if (filter.productId) base.push(isUuid(filter.productId) ? Prisma.sql`product_id = ${filter.productId}::uuid` : Prisma.sql`false`);
  if (filter.planId) base.push(isUuid(filter.planId) ? Prisma.sql`plan_id = ${filter.planId}::uuid` : Prisma.sql`false`);
  if (filter.expiringWithinDays) base.push(expiringSql(ctx.now, { to: filter.expiringWithinDays }));
  const and = filter.status ? [...base, statusSql(filter.status, ctx.now)] : base;
  const ranges = filter.status ? statusRangesSql(filter.status, ctx.now).map((range) => Prisma.join([...base, range], ' AND ')) : [Prisma.join(base, ' AND ')];
  if (!filter.search) return { and, ranges, search: null };
  // As Prisma's `contains` (insensitive): the text literally, anywhere in the email or the key hint.
  const text = filter.search.replaceAll('...', '…');
  const pattern = `%${likeLiteral(text)}%`;
  const digest = licenseKeyDigest(ctx.secrets, filter.search);
  const branches = await emailContains(ctx.db, tenantId, text);
  branches.push(Prisma.sql`key_hint ILIKE ${pattern}`);
  if (digest) branches.push(Prisma.sql`key_digest = ${digest}`);
  // ILIKE '%text%' in a UTF-8 database is lower(value) LIKE lower('%text%'): strpos finds the same rows, at about half
  // the cost per row of a walk.
  const check = Prisma.sql`(strpos(lower(customer_email), lower(${text})) > 0 OR strpos(lower(key_hint), lower(${text})) > 0${digest ? Prisma.sql` OR key_digest = ${digest}` : Prisma.empty})`;
  const search: SearchSql = { branches, check, pattern };
  return { and, ranges, search };
}

/** The same filter as `licenseWhere`, as SQL over `licenses` (the bulk actions' selection). */
export async function licenseConditions(ctx: ServiceContext, tenantId: string, filter: z.output<typeof LicenseFilterSchema>): Promise<Prisma.Sql> {
  const { and, search } = await filterSql(ctx, tenantId, filter);
  if (search) and.push(Prisma.sql`(${Prisma.join(search.branches, ' OR ')})`);
  return Prisma.join(and, ' AND ');
}

/**
 * The (id, created_at) of the licenses matching the filter and the search, each once: one SELECT per branch of the
 * search, each with the filter's conditions, in a UNION ALL; a branch leaves out the rows of the branches before it
 * (`IS NOT TRUE`: a NULL email is no match), so nothing is counted twice and no step needs every row before it
 * answers (a UNION would: the LIMIT of a count or a page then stops the scans early). The domain branch comes first:
 * its btree is read index-only, in the list's order.
 */
function searchMatchesSql(and: Prisma.Sql[], search: SearchSql): Prisma.Sql {
  const where = Prisma.join(and, ' AND ');
  return Prisma.join(
    search.branches.map((branch, i) => {
      const earlier = i === 0 ? Prisma.empty : Prisma.sql` AND (${Prisma.join(search.branches.slice(0, i), ' OR ')}) IS NOT TRUE`;
      return Prisma.sql`(SELECT id, created_at FROM licenses WHERE ${where} AND ${branch}${earlier})`;
    }),
    ' UNION ALL ',
  );
}

/** How many licenses match the filter and the search by the search's indexes (`searchMatchesSql`), counting at most `take` (for `cappedCount`). */
function countSearchUpTo(db: Database, and: Prisma.Sql[], search: SearchSql) {
  return async (take: number) => {
    const [row] = await db.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM (${searchMatchesSql(and, search)} LIMIT ${take}) AS matching`;
    return row.n;
  };
}

/**
 * A search most of a company's licenses match ("customer1": one in five of 500,000) is answered by walking the
 * list's order: the search's indexes would list every match (111,000 from the trigram index) before the first row.
 * Which it is, PostgreSQL's own estimate of the term's rows in the company says (`looksCommon`, a plan without
 * running it): up to SEARCH_WALK.commonRows, the search's indexes (`searchMatchesSql`) answer; past it the filter's
 * newest rows are read by the list's own index and tested with the search's `check` — first
 * SEARCH_WALK.probeFactor × (page size + 1) rows (`probeSearch`), which hold the page when one row in that many matches,
 * and the count walks on to the cap when that density says it takes at most SEARCH_WALK.maxRows rows. Should the walk
 * come short (the estimate was wrong), the indexes answer after all. A walk's LIMIT is on the filter's rows, never
 * on the matches, so its plan is the plain list's whatever PostgreSQL guesses of the search.
 */
export const SEARCH_WALK = {
  /** More estimated matches than this in the company: the walk is tried first. (Tests lower it to walk a small company.) */
  commonRows: 5_000,
  /** The probe reads this many times the page's rows (page size + 1). */
  probeFactor: 10,
  /** The most rows a count walks. */
  maxRows: 20_000,
};

/** Whether PostgreSQL expects more than SEARCH_WALK.commonRows of the tenant's licenses to have the text in the email's local part or the key hint. */
async function looksCommon(db: Database, tenantId: string, search: SearchSql): Promise<boolean> {
  const [row] = await db.prisma.$queryRaw<{ 'QUERY PLAN': string | [{ Plan: { 'Plan Rows': number } }] }[]>`
    EXPLAIN (FORMAT JSON) SELECT 1 FROM licenses WHERE tenant_id = ${tenantId}::uuid AND (customer_email_local ILIKE ${search.pattern} OR key_hint ILIKE ${search.pattern})`;
  const plan = row['QUERY PLAN'];
  const [{ Plan }] = typeof plan === 'string' ? (JSON.parse(plan) as Exclude<typeof plan, string>) : plan;
  return Plan['Plan Rows'] > SEARCH_WALK.commonRows;
}

/** The first `rows` licenses of the filter in the walk's order (from `page`'s cursor when given), with the columns `check` reads. */
function walkedSql(and: Prisma.Sql[], rows: number, page?: Keyset<readonly [string, string]>): Prisma.Sql {
  const order = page?.sqlOrder ?? Prisma.raw('DESC');
  const cursor = page?.cursor
    ? Prisma.sql` AND created_at ${Prisma.raw(page.backward ? '>=' : '<=')} ${page.cursor[0]}::timestamptz AND (created_at, id) ${page.sqlCmp} (${page.cursor[0]}::timestamptz, ${page.cursor[1]}::uuid)`
    : Prisma.empty;
  return Prisma.sql`SELECT id, created_at, customer_email, key_hint, key_digest FROM licenses WHERE ${Prisma.join(and, ' AND ')}${cursor}
    ORDER BY created_at ${order}, id ${order} LIMIT ${rows}`;
}

interface Probe {
  /** Rows of the filter read (fewer than asked: all of them from the cursor on). */
  scanned: number;
  /** Complete: the filter has no more rows from the cursor on. */
  complete: boolean;
  hits: number;
  /** The first page's worth of matches (size + 1), in the walk's order. */
  keys: string[];
}

const probeRows = (size: number) => SEARCH_WALK.probeFactor * (size + 1);

/** The search's matches among the filter's first `probeRows` rows from the page's cursor: how many, and the page's keys. */
async function probeSearch(db: Database, and: Prisma.Sql[], search: SearchSql, page: Keyset<readonly [string, string]>): Promise<Probe> {
  const rows = probeRows(page.size);
  const [row] = await db.prisma.$queryRaw<{ scanned: number; hits: number; keys: string[] | null }[]>`
    SELECT count(*)::int AS scanned, count(*) FILTER (WHERE hit)::int AS hits,
           (array_agg(id::text ORDER BY created_at ${page.sqlOrder}, id ${page.sqlOrder}) FILTER (WHERE hit))[1:${page.size + 1}] AS keys
      FROM (SELECT id, created_at, ${search.check} AS hit FROM (${walkedSql(and, rows, page)}) AS walked) AS probed`;
  return { scanned: row.scanned, complete: row.scanned < rows, hits: row.hits, keys: row.keys ?? [] };
}

/**
 * The search's matches among the filter's first `rows` rows (newest first), counted up to `take`: `more` when the
 * filter has rows past them (so fewer than `take` is an exact count only without `more`).
 */
async function walkCount(db: Database, and: Prisma.Sql[], search: SearchSql, rows: number, take: number) {
  const [row] = await db.prisma.$queryRaw<{ hits: number; more: boolean }[]>`
    SELECT count(*) FILTER (WHERE n <= ${rows})::int AS hits, count(*) FILTER (WHERE n > ${rows}) > 0 AS more
      FROM (SELECT n FROM (SELECT ${search.check} AS hit, row_number() OVER () AS n FROM (${walkedSql(and, rows + 1)}) AS walked) AS tested
             WHERE hit OR n > ${rows} LIMIT ${take}) AS counted`;
  return row;
}

/**
 * How many licenses match the filter and a search that `looksCommon`, up to `cap` (`Count`): walked in the list's
 * order when a probe of its newest rows (`probe`: the caller's, from the top, when it has one) says the cap is
 * reached within SEARCH_WALK.maxRows, else counted by the search's indexes.
 */
async function countCommonSearch(db: Database, and: Prisma.Sql[], search: SearchSql, cap: number, probe?: Probe): Promise<Count> {
  const take = cap + 1;
  const counted = (hits: number): Count => (hits > cap ? { totalCount: cap, totalCountCapped: true } : { totalCount: hits, totalCountCapped: false });
  const rows = probe?.scanned ?? probeRows(DEFAULT_PAGE_SIZE);
  const first = probe ? { hits: probe.hits, more: !probe.complete } : await walkCount(db, and, search, rows, take);
  if (first.hits >= take || !first.more) return counted(first.hits);
  if (first.hits > 0 && (take * rows) / first.hits <= SEARCH_WALK.maxRows) {
    const walked = await walkCount(db, and, search, SEARCH_WALK.maxRows, take);
    if (walked.hits >= take || !walked.more) return counted(walked.hits);
  }
  return cappedCount(countSearchUpTo(db, and, search), cap);
}

/**
 * How many licenses match the filter: exactly, or (with `cap`) up to `cap` and whether more do (`cappedCount`).
 * A text search is counted up to SEARCH_COUNT_CAP at most, as the list counts it: finding 10,000 matches of a
 * search one license in five matches costs a walk of 50,000 rows. The bulk actions' confirmation; the list counts
 * its own way (with its page).
 */
export async function countLicenses(ctx: ServiceContext, tenantId: string, filter: z.output<typeof LicenseFilterSchema>, cap?: number): Promise<Count> {
  const { and, ranges, search } = await filterSql(ctx, tenantId, filter);
  if (search && cap !== undefined) {
    const searchCap = Math.min(cap, SEARCH_COUNT_CAP);
    if (await looksCommon(ctx.db, tenantId, search)) return countCommonSearch(ctx.db, and, search, searchCap);
    return cappedCount(countSearchUpTo(ctx.db, and, search), searchCap);
  }
  const count = search ? countSearchUpTo(ctx.db, and, search) : countUpTo(ctx.db, Prisma.sql`licenses`, ranges);
  if (cap !== undefined) return cappedCount(count, cap);
  return { totalCount: await count(2 ** 31 - 1), totalCountCapped: false };
}

/** A LIKE pattern for `text` itself (as Prisma's `contains` escapes it): its wildcards and the escape character escaped. */
export const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The tenant's email domains matching a LIKE pattern (case-insensitive) that some license has, from the
 * license_email_domains tally (a few rows per domain). Read first, on its own: the search's query then names the
 * domains as a value the planner sees, and leaves out the domain branch when there are none (as a subquery the
 * list was unknown when planning, and an empty one could make PostgreSQL read every row another filter selects).
 */
async function domainsLike(db: Database, tenantId: string, pattern: string): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ domain: string }[]>`
    SELECT domain FROM license_email_domains WHERE tenant_id = ${tenantId}::uuid AND domain ILIKE ${pattern} GROUP BY domain HAVING sum(licenses) > 0`;
  return rows.map((row) => row.domain);
}

/**
 * The tenant's licenses whose customer email contains `text` (case-insensitive) — the same rows as
 * `customer_email ILIKE '%text%'` — as search branches, found by indexes that stay selective for a domain. The
 * email is local || '@' || domain, split at its last '@' (generated columns, migration license_email_parts). A text
 * without '@' is in one of the two parts: the local part by its trigram index, or the domain — the tenant's domains
 * containing it come from the license_email_domains tally, their licenses from the (tenant_id,
 * customer_email_domain, …) btree. A text "a@b" (split at its last '@') is either inside the local part, or a local
 * part ending with "a" followed by a domain starting with "b". One trigram index on the whole email read, for
 * "example42.test", the posting lists of trigrams every email has, across all tenants.
 */
async function emailContains(db: Database, tenantId: string, text: string): Promise<Prisma.Sql[]> {
  const inLocal = Prisma.sql`customer_email_local ILIKE ${`%${likeLiteral(text)}%`}`;
  const atDomains = async (pattern: string) => {
    const domains = await domainsLike(db, tenantId, pattern);
    return domains.length ? Prisma.sql`customer_email_domain = ANY (${domains}::text[])` : null;
  };
  const at = text.lastIndexOf('@');
  if (at < 0) {
    const byDomain = await atDomains(`%${likeLiteral(text)}%`);
    return byDomain ? [byDomain, inLocal] : [inLocal];
  }
  const [local, domain] = [text.slice(0, at), text.slice(at + 1)];
  const domainStarts = domain ? await atDomains(`${likeLiteral(domain)}%`) : Prisma.sql`customer_email_domain IS NOT NULL`;
  if (!local) return domainStarts ? [domainStarts, inLocal] : [inLocal];
  return domainStarts ? [inLocal, Prisma.sql`(customer_email_local ILIKE ${`%${likeLiteral(local)}`} AND ${domainStarts})`] : [inLocal];
}

/**
 * Newest first (createdAt, then id); a cursor is a row's (createdAt, id). `first`/`after` walk the index from the
 * cursor toward older rows, `last`/`before` toward newer ones (see `keyset`); the filter applies either way.
 */
export async function listLicenses(ctx: ServiceContext, filterInput: LicenseFilter = {}, pageArgs: PageArgs = {}, query?: LicenseQuery) {
  const tenantId = requireMember(ctx);
  const filter = parseInput(LicenseFilterSchema, filterInput);
  const page = keyset(pageArgs, CreatedAtIdCursor);
  const where = licenseWhere(ctx, tenantId, filter);
  const { and, ranges, search } = await filterSql(ctx, tenantId, filter);
  const cursorOf = (row: { createdAt: Date; id: string }) => [row.createdAt.toISOString(), row.id];
  const walk = () =>
    ctx.db.prisma.license.findMany({
      where: { AND: [where, createdAtIdWhere(page)] },
      orderBy: [{ createdAt: page.order }, { id: page.order }],
      take: page.size + 1,
      ...licenseView(query),
    });
  if (!search) {
    const [rows, totalCount] = await Promise.all([walk(), cappedCount(countUpTo(ctx.db, Prisma.sql`licenses`, ranges), COUNT_CAP)]);
    return toPage(rows, page, totalCount, cursorOf);
  }
  // A search most of the company's licenses match: its page from the list's newest rows (see SEARCH_WALK).
  if (await looksCommon(ctx.db, tenantId, search)) {
    const probe = await probeSearch(ctx.db, and, search, page);
    if (probe.hits > page.size || probe.complete) {
      const count = await countCommonSearch(ctx.db, and, search, SEARCH_COUNT_CAP, page.cursor ? undefined : probe);
      return toPage(await licensesByIds(ctx, probe.keys, query), page, count, cursorOf);
    }
  }
  const cursorSql = page.cursor ? Prisma.sql`WHERE (created_at, id) ${page.sqlCmp} (${page.cursor[0]}::timestamptz, ${page.cursor[1]}::uuid)` : Prisma.empty;
  const { count, keys } = await searchMatches<string>(
    ctx.db,
    searchMatchesSql(and, search),
    Prisma.sql`SELECT id::text FROM counted ${cursorSql} ORDER BY created_at ${page.sqlOrder}, id ${page.sqlOrder} LIMIT ${page.size + 1}`,
  );
  if (!keys) return toPage(await walk(), page, count, cursorOf);
  return toPage(await licensesByIds(ctx, keys, query), page, count, cursorOf);
}

/** The licenses of `ids` (a page's keys, found in the caller's tenant), in that order. */
async function licensesByIds(ctx: ServiceContext, ids: string[], query?: LicenseQuery) {
  const found = ids.length ? await ctx.db.prisma.license.findMany({ where: { id: { in: ids } }, ...licenseView(query) }) : [];
  const byId = new Map(found.map((row) => [row.id, row]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/**
 * Changes any attributes (absent: unchanged; null: cleared). Audited with a before/after diff of the
 * changed attributes; a change that changes nothing writes nothing.
 */
export async function updateLicense(ctx: ServiceContext, id: string, input: LicenseInput) {
  const admin = requireAdmin(ctx);
  const data = parseInput(LicenseAttributesObject.partial(), input);
  const license = await findTenantLicense(ctx, admin.tenantId, id);
  const changesTo = (stored: Pick<License, (typeof LICENSE_ATTRIBUTES)[number]>) => {
    const minVersion = data.minVersion === undefined ? stored.minVersion : data.minVersion;
    const maxVersion = data.maxVersion === undefined ? stored.maxVersion : data.maxVersion;
    if (!versionsInOrder({ minVersion, maxVersion })) {
      throw new AppError('InvalidRequest', `Invalid input: minVersion: ${VERSION_ORDER}`, { fields: { minVersion: VERSION_ORDER } });
    }
    return diffChanges(Object.fromEntries(LICENSE_ATTRIBUTES.map((key) => [key, stored[key]])), data);
  };
  if (!changesTo(license)) return license;
  await ctx.db.prisma.$transaction(async (tx) => {
    // Under the tenant's audit lock no other audited change of the license is under way: the change is measured
    // against the row as stored now, so the same edit sent twice at once is written, logged and emitted once.
    await lockTenantAudit(tx, admin.tenantId);
    const changes = changesTo(await tx.license.findUniqueOrThrow({ where: { id: license.id } }));
    if (changes) await writeLicenseUpdate(tx, ctx, license, data, changes);
  });
  return findTenantLicense(ctx, admin.tenantId, license.id);
}

/**
 * Moves a license to another plan of its product (the Keygen importer: a license moved to another policy). The
 * plan's values are not copied (the caller sets the attributes it wants). Audited as UpdateLicense (planId).
 */
export async function moveLicenseToPlan(ctx: ServiceContext, id: string, planId: string) {
  const admin = requireAdmin(ctx);
  const license = await findTenantLicense(ctx, admin.tenantId, id);
  const plan = await findTenantPlan(ctx, admin.tenantId, planId);
  if (plan.productId !== license.productId) {
    const message = `is a plan of ${plan.product.name}, not of ${license.product.name}`;
    throw new AppError('InvalidRequest', `Invalid input: planId: ${message}`, { fields: { planId: message } });
  }
  if (license.planId === plan.id) return license;
  await ctx.db.prisma.$transaction(async (tx) => {
    await lockLicenseParents(tx, [{ product: { id: plan.productId }, plan: { id: plan.id } }]); // before the log's lock, as a new license
    await writeLicenseUpdate(tx, ctx, license, { planId: plan.id }, { before: { planId: license.planId }, after: { planId: plan.id } });
  });
  return findTenantLicense(ctx, admin.tenantId, license.id);
}

/** Writes validated attribute changes of a license in the caller's transaction: the row, the license.updated event, the activity entry (UpdateLicense). */
export async function writeLicenseUpdate(
  tx: Prisma.TransactionClient,
  ctx: ServiceContext,
  license: { id: string; tenantId: string; keyHint: string; product: { name: string } },
  data: Partial<z.output<typeof LicenseAttributesObject>> & { planId?: string | null },
  changes: Record<string, unknown>,
) {
  const { customFields, ...rest } = data;
  await lockTenantAudit(tx, license.tenantId); // before the row: see lockTenantAudit
  const updated = await tx.license.update({ where: { id: license.id }, data: { ...rest, ...(customFields !== undefined && { customFields: customFields === null ? Prisma.DbNull : customFields }) } });
  await emitEvent(tx, license.tenantId, 'license.updated', { ...licenseData(updated), changes }, ctx.now);
  const event = { tenantId: license.tenantId, action: 'UpdateLicense', entityType: 'License', entityId: license.id, entity: licenseEntity(license, license.product.name), details: changes } as const;
  await recordAudit(tx, event, auditActor(ctx), ctx.now);
}

/**
 * One page of the activations of each of several licenses the caller already holds (read within its tenant), active
 * and deactivated, newest first (createdAt, then id; a cursor is a row's pair; both directions, see `keyset`); each
 * count is capped at 10,000. Two statements for any number of licenses (a page of licenses with their activations
 * must not cost one query per license), each walking one license's index range from its cursor: a LATERAL subquery
 * per license, which Prisma's nested `take` is not (it reads every activation of the licenses and slices them).
 */
export async function listLicenseActivations(ctx: ServiceContext, licenses: readonly { id: string; tenantId: string }[], pageArgs: PageArgs = {}) {
  const tenantId = requireMember(ctx);
  if (licenses.some((license) => license.tenantId !== tenantId)) throw new AppError('NotFound', 'License not found.');
  const page = keyset(pageArgs, CreatedAtIdCursor);
  const ids = licenses.map((license) => license.id);
  // The bound on created_at alone is what the (license_id, created_at) index range starts from (as createdAtIdWhere).
  const cursor = page.cursor
    ? Prisma.sql`AND created_at ${Prisma.raw(page.backward ? '>=' : '<=')} ${page.cursor[0]}::timestamptz AND (created_at, id) ${page.sqlCmp} (${page.cursor[0]}::timestamptz, ${page.cursor[1]}::uuid)`
    : Prisma.empty;
  const [rows, counts] = await Promise.all([
    ctx.db.prisma.$queryRaw<Activation[]>`
      SELECT a.id::text, a.tenant_id::text AS "tenantId", a.license_id::text AS "licenseId", a.device_id AS "deviceId", a.device_name AS "deviceName",
             a.version, a.user_email AS "userEmail", a.ip, a.created_at AS "createdAt", a.last_seen_at AS "lastSeenAt", a.deactivated_at AS "deactivatedAt",
             a.device_public_key AS "devicePublicKey"
      FROM unnest(${ids}::uuid[]) AS l(id)
      CROSS JOIN LATERAL (
        SELECT * FROM activations WHERE license_id = l.id AND tenant_id = ${tenantId}::uuid ${cursor}
        ORDER BY created_at ${page.sqlOrder}, id ${page.sqlOrder} LIMIT ${page.size + 1}
      ) AS a`,
    ctx.db.prisma.$queryRaw<{ licenseId: string; n: number }[]>`
      SELECT l.id::text AS "licenseId",
             (SELECT count(*)::int FROM (SELECT 1 FROM activations WHERE license_id = l.id AND tenant_id = ${tenantId}::uuid LIMIT ${COUNT_CAP + 1}) AS matching) AS n
      FROM unnest(${ids}::uuid[]) AS l(id)`,
  ]);
  const countOf = new Map(counts.map((row) => [row.licenseId, row.n]));
  return ids.map((id) => {
    const count = countOf.get(id) ?? 0;
    const capped = count > COUNT_CAP ? { totalCount: COUNT_CAP, totalCountCapped: true } : { totalCount: count, totalCountCapped: false };
    return toPage(rows.filter((row) => row.licenseId === id), page, capped, (row) => [row.createdAt.toISOString(), row.id]);
  });
}

/** Revokes a license, active or suspended (idempotent: only the first revocation is audited). A revoked license never validates again. */
export async function revokeLicense(ctx: ServiceContext, id: string) {
  const { tenantId } = requireAdmin(ctx);
  const license = await findTenantLicense(ctx, tenantId, id);
  await ctx.db.prisma.$transaction((tx) => writeRevocation(tx, ctx, license));
  return findTenantLicense(ctx, tenantId, id);
}

/** Revokes in the caller's transaction (the row, license.revoked, RevokeLicense); false when it was revoked already. */
export async function writeRevocation(tx: Prisma.TransactionClient, ctx: ServiceContext, license: Awaited<ReturnType<typeof findTenantLicense>>): Promise<boolean> {
  const { tenantId } = license;
  await lockTenantAudit(tx, tenantId); // before the row: see lockTenantAudit
  const { count } = await tx.license.updateMany({ where: { id: license.id, tenantId, status: { not: 'revoked' } }, data: { status: 'revoked', revokedAt: ctx.now, suspendedAt: null } });
  if (!count) return false;
  await emitEvent(tx, tenantId, 'license.revoked', { ...licenseData({ ...license, status: 'revoked' }), revokedAt: ctx.now.toISOString() }, ctx.now);
  await recordAudit(tx, { tenantId, action: 'RevokeLicense', entityType: 'License', entityId: license.id, entity: licenseEntity(license, license.product.name) }, auditActor(ctx), ctx.now);
  return true;
}

/** How the customer portal frees a device (services/portal/customer.ts): only activations it may, counted in the same transaction. */
export interface DeactivateOptions {
  /** Extra conditions on the activation (its license's customer): another activation answers NotFound. */
  licenseWhere?: Prisma.LicenseWhereInput;
  /** Runs in the transaction once the seat is released (not for one already free); a throw undoes the release. */
  inTransaction?: (tx: Prisma.TransactionClient, activation: Activation & { license: { keyHint: string; productId: string } }) => Promise<void>;
}

/** Frees one activation's seat (idempotent: only the first deactivation is audited). Returns its license. */
export async function deactivateActivation(ctx: ServiceContext, activationId: string, options: DeactivateOptions = {}) {
  const admin = requireAdmin(ctx);
  const activation = isUuid(activationId)
    ? await ctx.db.prisma.activation.findFirst({
        where: { id: activationId, tenantId: admin.tenantId, ...(options.licenseWhere && { license: options.licenseWhere }) },
        include: { license: { select: { keyHint: true, productId: true } } },
      })
    : null;
  if (!activation) throw new AppError('NotFound', 'Activation not found.');
  await ctx.db.prisma.$transaction(async (tx) => {
    await lockTenantAudit(tx, admin.tenantId); // before the license's row (the seat count): see lockTenantAudit
    if (!(await releaseSeat(tx, activation, ctx.now))) return;
    await options.inTransaction?.(tx, activation);
    await emitEvent(tx, admin.tenantId, 'activation.deactivated', activationData({ ...activation, deactivatedAt: ctx.now }), ctx.now);
    const device = activation.deviceName ?? activation.deviceId ?? activation.id;
    const details = { licenseId: activation.licenseId, deviceId: activation.deviceId, deviceName: activation.deviceName };
    await recordAudit(tx, { tenantId: admin.tenantId, action: 'DeactivateActivation', entityType: 'Activation', entityId: activation.id, entity: `${device} on ${activation.license.keyHint}`, details }, auditActor(ctx), ctx.now);
  });
  return findTenantLicense(ctx, admin.tenantId, activation.licenseId);
}
