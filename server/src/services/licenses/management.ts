import { z } from 'zod';
import semver from 'semver';
import { generateLicenseKey, licenseKeyHint } from '../../crypto/license-key.js';
import { KEY_DIGEST_VERSION } from '../../crypto/secrets.js';
import { AppError } from '../../domain/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import { diffChanges, recordAudit } from '../audit/audit-log.js';
import { auditActor, requireAdmin, requireMember, requireOperator } from '../auth/actor.js';
import type { ServiceContext } from '../context.js';
import { activationData, emitEvent, licenseData } from '../webhooks/events.js';
import { releaseSeat } from './activations.js';
import { licenseKeyDigest } from './license-record.js';
import { expiringSql, expiringWhere, LICENSE_STATUSES, statusSql, statusWhere } from './predicates.js';
import { cappedCount, COUNT_CAP, countUpTo, createdAtIdWhere, isUuid, keyset, searchMatches, toPage, type PageArgs } from '../listing.js';
import { isUniqueViolation, parseInput, StorableDate } from '../validation.js';

const version = z
  .string()
  .trim()
  .refine((value) => semver.valid(value, { loose: true }) ?? semver.coerce(value), 'must be a semantic version such as 1.4.2');
const days = z.number().int().min(0).max(3650);

const LicenseAttributesObject = z
  .object({
    maxActivations: z.number().int().min(1).max(1_000_000),
    expiresAt: StorableDate.nullable().optional(),
    isTrial: z.boolean().optional(),
    nodeLocked: z.boolean().optional(),
    offlineGraceDays: days.nullable().optional(),
    gracePeriodDays: days.nullable().optional(),
    features: z.array(z.string().trim().min(1).max(100)).max(100).optional(),
    customFields: z.record(z.string().min(1).max(100), z.string().max(2000)).nullable().optional(),
    minVersion: version.nullable().optional(),
    maxVersion: version.nullable().optional(),
    maintenanceExpiresAt: StorableDate.nullable().optional(),
    customerEmail: z.email().nullable().optional(),
    /** Concurrent floating sessions allowed; null: none. */
    floatingSeats: z.number().int().min(1).max(1_000_000).nullable().optional(),
  });
// Zod runs this object check even when a version failed its own check: an unparsable one is reported there, not here.
const versionsInOrder = (license: { minVersion?: string | null; maxVersion?: string | null }) => {
  const min = license.minVersion ? semver.coerce(license.minVersion) : null;
  const max = license.maxVersion ? semver.coerce(license.maxVersion) : null;
  return !min || !max || !semver.gt(min, max);
};
const VERSION_ORDER = 'minVersion must not be greater than maxVersion';

/** Every attribute of a license a vendor sets. */
export const LicenseAttributesSchema = LicenseAttributesObject.refine(versionsInOrder, { message: VERSION_ORDER, path: ['minVersion'] });
const LICENSE_ATTRIBUTES = Object.keys(LicenseAttributesObject.shape) as (keyof typeof LicenseAttributesObject.shape)[];
/** Attributes as callers send them: any may be absent or null, customFields any JSON (the schema decides what is allowed). */
type AttributesIn = z.input<typeof LicenseAttributesObject>;
export type LicenseInput = { [K in keyof AttributesIn]?: (K extends 'customFields' ? unknown : AttributesIn[K]) | null };

// Licenses as vendors manage them (GraphQL, the operator CLI): create, change, revoke, list, free a seat. The
// public protocol on the same licenses is activations.ts (activate/deactivate) and validate.ts.


/** How a license appears in the activity log: its key hint and product, never the key. */
export const licenseEntity = (license: { keyHint: string }, productName: string) => `${license.keyHint} (${productName})`;
const jsonValues = (values: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v]));

/** How the CSV import (import.ts) creates a license; a license created by hand uses none of it. */
export interface CreateLicenseOptions {
  /** A key the vendor issued before (well-formed, normalised): stored as its digest like a generated one; Conflict when a license has it. */
  key?: string;
  /** More details for the activity entry (the import's file line and notes). */
  auditDetails?: Record<string, unknown>;
  /** Runs inside the creating transaction (the import marks its row there, so a crash cannot create a row twice). */
  inTransaction?: (tx: Prisma.TransactionClient, license: { id: string; keyHint: string }, key: string) => Promise<void>;
}

/**
 * Creates a license of one of the caller's products (CompanyAdmin) and returns its plaintext key: the only time
 * it exists outside the customer's hands. Audited (CreateLicense, with the attributes and key hint, never the key).
 */
export async function createLicense(ctx: ServiceContext, input: LicenseInput & { productId: string }, options: CreateLicenseOptions = {}) {
  const { tenantId } = requireAdmin(ctx);
  const { productId, ...rest } = input;
  const attributes = parseInput(LicenseAttributesSchema, rest);
  const tenant = await ctx.db.prisma.tenant.findUnique({ where: { id: tenantId }, select: { keyPrefix: true } });
  const product = isUuid(productId) ? await ctx.db.prisma.product.findFirst({ where: { id: productId, tenantId }, select: { id: true, name: true } }) : null;
  if (!tenant || !product) throw new AppError('NotFound', 'Product not found.');
  const customFields = attributes.customFields ?? undefined;
  // A digest collision is astronomically unlikely (78 bits), but retrying costs nothing.
  for (let attempt = 0; ; attempt++) {
    const key = options.key ?? generateLicenseKey(tenant.keyPrefix);
    try {
      const license = await ctx.db.prisma.$transaction(async (tx) => {
        // A key retired by a reissue still answers for its license during the overlap (services/licenses/reissue.ts).
        if (options.key && (await tx.retiredLicenseKey.findUnique({ where: { keyDigest: ctx.secrets.digest(key) }, select: { keyDigest: true } }))) {
          throw new AppError('Conflict', 'A license with this key exists already.');
        }
        const created = await tx.license.create({
          data: {
            ...attributes,
            customFields: customFields === null ? undefined : customFields,
            tenantId,
            productId,
            keyDigest: ctx.secrets.digest(key),
            keyDigestVersion: KEY_DIGEST_VERSION,
            keyHint: licenseKeyHint(key),
            createdAt: ctx.now,
          },
        });
        const details = { productId: product.id, productName: product.name, keyHint: created.keyHint, ...jsonValues(attributes), ...options.auditDetails };
        await emitEvent(tx, tenantId, 'license.created', licenseData(created), ctx.now);
        await recordAudit(tx, { tenantId, action: 'CreateLicense', entityType: 'License', entityId: created.id, entity: licenseEntity(created, product.name), details }, auditActor(ctx), ctx.now);
        await options.inTransaction?.(tx, created, key);
        return created;
      });
      return { key, license: await findTenantLicense(ctx, tenantId, license.id) };
    } catch (error) {
      // The product deleted meanwhile: its foreign key refuses the license.
      if ((error as { code?: string }).code === 'P2003') throw new AppError('NotFound', 'Product not found.');
      if (isUniqueViolation(error) && options.key) throw new AppError('Conflict', 'A license with this key exists already.');
      if (!isUniqueViolation(error) || attempt >= 2) throw error;
    }
  }
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
    omit: { keyDigest: true, keyDigestVersion: true },
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

/** What the API shows of a license: never the key digest. */
const LICENSE_VIEW = {
  omit: { keyDigest: true, keyDigestVersion: true },
  include: { product: { select: { id: true, name: true, isBundle: true } } },
} satisfies Prisma.LicenseDefaultArgs;

export async function findTenantLicense(ctx: Pick<ServiceContext, 'db'>, tenantId: string, id: string) {
  const license = isUuid(id) ? await ctx.db.prisma.license.findFirst({ where: { id, tenantId }, ...LICENSE_VIEW }) : null;
  if (!license) throw new AppError('NotFound', 'License not found.');
  return license;
}

/** A license with its product; its activations are paged by `listLicenseActivations` (a license may have 20,000). */
export async function getLicense(ctx: ServiceContext, id: string) {
  return findTenantLicense(ctx, requireMember(ctx), id);
}

export const LicenseFilterSchema = z.object({
  productId: z.string().trim().nullish(),
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

/** The same filter as `licenseWhere`, as SQL over `licenses` (for the counts and the search page). */
export function licenseConditions(ctx: ServiceContext, tenantId: string, filter: z.output<typeof LicenseFilterSchema>): Prisma.Sql {
  const and: Prisma.Sql[] = [Prisma.sql`tenant_id = ${tenantId}::uuid`];
  if (filter.productId) and.push(isUuid(filter.productId) ? Prisma.sql`product_id = ${filter.productId}::uuid` : Prisma.sql`false`);
  if (filter.status) and.push(statusSql(filter.status, ctx.now));
  if (filter.expiringWithinDays) and.push(expiringSql(ctx.now, { to: filter.expiringWithinDays }));
  if (filter.search) {
    // As Prisma's `contains` (insensitive) writes it; the trigram indexes serve both ILIKEs.
    const text = filter.search.replaceAll('...', '…');
    const digest = licenseKeyDigest(ctx.secrets, filter.search);
    const byKey = digest ? Prisma.sql` OR key_digest = ${digest}` : Prisma.empty;
    and.push(Prisma.sql`(customer_email ILIKE ('%' || ${text} || '%') OR key_hint ILIKE ('%' || ${text} || '%')${byKey})`);
  }
  return Prisma.join(and, ' AND ');
}

const LicenseCursor = z.tuple([z.iso.datetime(), z.guid()]);

/**
 * Newest first (createdAt, then id); a cursor is a row's (createdAt, id). `first`/`after` walk the index from the
 * cursor toward older rows, `last`/`before` toward newer ones (see `keyset`); the filter applies either way.
 */
export async function listLicenses(ctx: ServiceContext, filterInput: LicenseFilter = {}, pageArgs: PageArgs = {}) {
  const tenantId = requireMember(ctx);
  const filter = parseInput(LicenseFilterSchema, filterInput);
  const page = keyset(pageArgs, LicenseCursor);
  const where = licenseWhere(ctx, tenantId, filter);
  const conditions = licenseConditions(ctx, tenantId, filter);
  const cursorOf = (row: { createdAt: Date; id: string }) => [row.createdAt.toISOString(), row.id];
  const walk = () =>
    ctx.db.prisma.license.findMany({
      where: { AND: [where, createdAtIdWhere(page)] },
      orderBy: [{ createdAt: page.order }, { id: page.order }],
      take: page.size + 1,
      ...LICENSE_VIEW,
    });
  if (!filter.search) {
    const [rows, totalCount] = await Promise.all([walk(), cappedCount(countUpTo(ctx.db, Prisma.sql`licenses`, conditions), COUNT_CAP)]);
    return toPage(rows, page, totalCount, cursorOf);
  }
  const cursorSql = page.cursor ? Prisma.sql`WHERE (created_at, id) ${page.sqlCmp} (${page.cursor[0]}::timestamptz, ${page.cursor[1]}::uuid)` : Prisma.empty;
  const { count, keys } = await searchMatches<string>(
    ctx.db,
    Prisma.sql`SELECT id, created_at FROM licenses WHERE ${conditions}`,
    Prisma.sql`SELECT id::text FROM counted ${cursorSql} ORDER BY created_at ${page.sqlOrder}, id ${page.sqlOrder} LIMIT ${page.size + 1}`,
  );
  if (!keys) return toPage(await walk(), page, count, cursorOf);
  const found = await ctx.db.prisma.license.findMany({ where: { id: { in: keys } }, ...LICENSE_VIEW });
  const byId = new Map(found.map((row) => [row.id, row]));
  const rows = keys.flatMap((id) => byId.get(id) ?? []);
  return toPage(rows, page, count, cursorOf);
}

/**
 * Changes any attributes (absent: unchanged; null: cleared). Audited with a before/after diff of the
 * changed attributes; a change that changes nothing writes nothing.
 */
export async function updateLicense(ctx: ServiceContext, id: string, input: LicenseInput) {
  const admin = requireAdmin(ctx);
  const data = parseInput(LicenseAttributesObject.partial(), input);
  const license = await findTenantLicense(ctx, admin.tenantId, id);
  const minVersion = data.minVersion === undefined ? license.minVersion : data.minVersion;
  const maxVersion = data.maxVersion === undefined ? license.maxVersion : data.maxVersion;
  if (!versionsInOrder({ minVersion, maxVersion })) {
    throw new AppError('InvalidRequest', `Invalid input: minVersion: ${VERSION_ORDER}`, { fields: { minVersion: VERSION_ORDER } });
  }
  const before = Object.fromEntries(LICENSE_ATTRIBUTES.map((key) => [key, license[key]]));
  const changes = diffChanges(before, data);
  if (!changes) return license;
  const { customFields, ...rest } = data;
  await ctx.db.prisma.$transaction(async (tx) => {
    const updated = await tx.license.update({ where: { id: license.id }, data: { ...rest, customFields: customFields === null ? Prisma.DbNull : customFields } });
    await emitEvent(tx, admin.tenantId, 'license.updated', { ...licenseData(updated), changes }, ctx.now);
    const event = { tenantId: admin.tenantId, action: 'UpdateLicense', entityType: 'License', entityId: license.id, entity: licenseEntity(license, license.product.name), details: changes } as const;
    await recordAudit(tx, event, auditActor(ctx), ctx.now);
  });
  return findTenantLicense(ctx, admin.tenantId, license.id);
}

const ActivationCursor = z.tuple([z.iso.datetime(), z.guid()]);

/**
 * One page of the activations of a license the caller already holds (read within its tenant), active and
 * deactivated, newest first (createdAt, then id; a cursor is a row's pair; both directions, see `keyset`); the
 * count is capped at 10,000.
 */
export async function listLicenseActivations(ctx: ServiceContext, license: { id: string; tenantId: string }, pageArgs: PageArgs = {}) {
  if (requireMember(ctx) !== license.tenantId) throw new AppError('NotFound', 'License not found.');
  const page = keyset(pageArgs, ActivationCursor);
  const where: Prisma.ActivationWhereInput = { licenseId: license.id, tenantId: license.tenantId };
  const [rows, totalCount] = await Promise.all([
    ctx.db.prisma.activation.findMany({ where: { AND: [where, createdAtIdWhere(page)] }, orderBy: [{ createdAt: page.order }, { id: page.order }], take: page.size + 1 }),
    cappedCount(countUpTo(ctx.db, Prisma.sql`activations`, Prisma.sql`license_id = ${license.id}::uuid AND tenant_id = ${license.tenantId}::uuid`)),
  ]);
  return toPage(rows, page, totalCount, (row) => [row.createdAt.toISOString(), row.id]);
}

/** Revokes a license, active or suspended (idempotent: only the first revocation is audited). A revoked license never validates again. */
export async function revokeLicense(ctx: ServiceContext, id: string) {
  const { tenantId } = requireAdmin(ctx);
  const license = await findTenantLicense(ctx, tenantId, id);
  await ctx.db.prisma.$transaction(async (tx) => {
    const { count } = await tx.license.updateMany({ where: { id: license.id, tenantId, status: { not: 'revoked' } }, data: { status: 'revoked', revokedAt: ctx.now, suspendedAt: null } });
    if (!count) return;
    await emitEvent(tx, tenantId, 'license.revoked', { ...licenseData({ ...license, status: 'revoked' }), revokedAt: ctx.now.toISOString() }, ctx.now);
    await recordAudit(tx, { tenantId, action: 'RevokeLicense', entityType: 'License', entityId: license.id, entity: licenseEntity(license, license.product.name) }, auditActor(ctx), ctx.now);
  });
  return findTenantLicense(ctx, tenantId, id);
}

/** Frees one activation's seat (idempotent: only the first deactivation is audited). Returns its license. */
export async function deactivateActivation(ctx: ServiceContext, activationId: string) {
  const admin = requireAdmin(ctx);
  const activation = isUuid(activationId)
    ? await ctx.db.prisma.activation.findFirst({ where: { id: activationId, tenantId: admin.tenantId }, include: { license: { select: { keyHint: true } } } })
    : null;
  if (!activation) throw new AppError('NotFound', 'Activation not found.');
  await ctx.db.prisma.$transaction(async (tx) => {
    if (!(await releaseSeat(tx, activation, ctx.now))) return;
    await emitEvent(tx, admin.tenantId, 'activation.deactivated', activationData({ ...activation, deactivatedAt: ctx.now }), ctx.now);
    const device = activation.deviceName ?? activation.deviceId ?? activation.id;
    const details = { licenseId: activation.licenseId, deviceId: activation.deviceId, deviceName: activation.deviceName };
    await recordAudit(tx, { tenantId: admin.tenantId, action: 'DeactivateActivation', entityType: 'Activation', entityId: activation.id, entity: `${device} on ${activation.license.keyHint}`, details }, auditActor(ctx), ctx.now);
  });
  return findTenantLicense(ctx, admin.tenantId, activation.licenseId);
}
