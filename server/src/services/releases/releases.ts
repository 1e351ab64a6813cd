import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import semver from 'semver';
import { AppError } from '../../domain/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import { diffChanges, recordAudit } from '../audit/audit-log.js';
import { auditActor, requireAdmin, requireMember } from '../auth/actor.js';
import type { ServiceContext, TokenSigner } from '../context.js';
import { cappedCount, countUpTo, isUuid, keyset, toPage, type PageArgs } from '../listing.js';
import { isUniqueViolation, parseInput } from '../validation.js';
import { emitEvent } from '../webhooks/events.js';
import { RELEASE_CHANNELS, VersionSchema, parseArtifactMeta, versionOrder, type ArtifactStatement, type ReleaseChannel, type ReleaseStatus } from './model.js';
import { ArtifactTooLargeError, type ArtifactStore } from './storage.js';

type Tx = Prisma.TransactionClient;

/** The most files one release holds (platforms × architectures × formats, with room to spare). */
export const MAX_ARTIFACTS_PER_RELEASE = 100;

/** What the staff side (GraphQL, the upload route, the CLI) is given besides the caller: the store and the signer. */
export interface ReleaseStaffContext extends ServiceContext {
  store: ArtifactStore;
  signer: TokenSigner;
  /** The `iss` of offline tokens (PUBLIC_URL), also the artifact signatures'. */
  issuer: string;
  maxUploadBytes: number;
}

const FeatureList = z.array(z.string().trim().min(1).max(100)).max(100);

export const CreateReleaseSchema = z.object({
  productId: z.string().trim(),
  version: VersionSchema,
  channel: z.enum(RELEASE_CHANNELS).default('stable'),
  notes: z.string().max(100_000).nullish(),
  requiredFeatures: FeatureList.optional(),
  requiresMaintenance: z.boolean().optional(),
});

/** Everything but the version (fixed once created: artifact signatures name it) may change. */
export const UpdateReleaseSchema = z.object({
  channel: z.enum(RELEASE_CHANNELS).optional(),
  notes: z.string().max(100_000).nullish(),
  requiredFeatures: FeatureList.optional(),
  requiresMaintenance: z.boolean().optional(),
});

export const ARTIFACT_SELECT = {
  id: true,
  tenantId: true,
  releaseId: true,
  filename: true,
  platform: true,
  arch: true,
  filetype: true,
  size: true,
  sha256: true,
  sha512: true,
  storageKey: true,
  signature: true,
  downloadCount: true,
  createdAt: true,
} as const satisfies Prisma.ReleaseArtifactSelect;

export const RELEASE_INCLUDE = { artifacts: { select: ARTIFACT_SELECT, orderBy: [{ platform: 'asc' }, { arch: 'asc' }, { filename: 'asc' }] } } as const satisfies Prisma.ReleaseInclude;
export type ReleaseWithArtifacts = Prisma.ReleaseGetPayload<{ include: typeof RELEASE_INCLUDE }>;

const releaseNotFound = () => new AppError('NotFound', 'Release not found.', { fields: { releaseId: 'not found' } });
const artifactNotFound = () => new AppError('NotFound', 'Artifact not found.', { fields: { artifactId: 'not found' } });

/** Newest first by semantic version (prereleases before their release), ties by creation. */
export const bySemverDescending = (a: { version: string }, b: { version: string }) => semver.rcompare(a.version, b.version);

/** A release of the tenant (another company's id answers NotFound, exactly like one that does not exist). */
async function tenantRelease(db: Tx | ServiceContext['db']['prisma'], tenantId: string, releaseId: string) {
  if (!isUuid(releaseId)) throw releaseNotFound();
  const release = await db.release.findFirst({ where: { id: releaseId, tenantId }, include: { ...RELEASE_INCLUDE, product: { select: { id: true, name: true } } } });
  if (!release) throw releaseNotFound();
  return release;
}

/** Locks the release row for the rest of `tx` (publish, yank, delete and an upload's commit exclude each other). */
async function lockRelease(tx: Tx, tenantId: string, releaseId: string) {
  if (!isUuid(releaseId)) throw releaseNotFound();
  const rows = await tx.$queryRaw<{ status: string }[]>`SELECT status::text FROM releases WHERE id = ${releaseId}::uuid AND tenant_id = ${tenantId}::uuid FOR UPDATE`;
  if (!rows.length) throw releaseNotFound();
  return rows[0].status;
}

const auditName = (release: { version: string; product: { name: string } }) => `${release.product.name} ${release.version}`;

/** The webhook payload of a release (never a storage key). */
export function releaseData(release: ReleaseWithArtifacts & { product: { id: string; name: string } }) {
  return {
    releaseId: release.id,
    productId: release.productId,
    productName: release.product.name,
    version: release.version,
    channel: release.channel,
    status: release.status,
    publishedAt: release.publishedAt?.toISOString() ?? null,
    artifacts: release.artifacts.map((artifact) => ({ artifactId: artifact.id, filename: artifact.filename, platform: artifact.platform, arch: artifact.arch, size: Number(artifact.size), sha256: artifact.sha256 })),
  };
}

export interface ReleaseListFilter extends PageArgs {
  channel?: ReleaseChannel | null;
  status?: ReleaseStatus | null;
}

/** A page's cursor: the `versionOrder` key of its row (unique per product). */
const Cursor = z.tuple([z.string().regex(/^[0-9a-f]{2,512}$/)]);

/**
 * The releases of a product, newest version first (any role), a keyset page along (product_id, version_order) in
 * either direction (`keyset`), optionally of one channel and one status. Another company's product: NotFound.
 */
export async function listProductReleases(ctx: ServiceContext, productId: string, filter: ReleaseListFilter = {}) {
  const tenantId = requireMember(ctx);
  if (!isUuid(productId) || !(await ctx.db.prisma.product.findFirst({ where: { id: productId, tenantId }, select: { id: true } }))) {
    throw new AppError('NotFound', 'Product not found.', { fields: { productId: 'not found' } });
  }
  const page = keyset(filter, Cursor);
  const where = { tenantId, productId, ...(filter.channel && { channel: filter.channel }), ...(filter.status && { status: filter.status }) };
  const past = page.cursor ? { versionOrder: page.backward ? { gt: page.cursor[0] } : { lt: page.cursor[0] } } : {};
  const conditions = [
    Prisma.sql`tenant_id = ${tenantId}::uuid AND product_id = ${productId}::uuid`,
    ...(filter.channel ? [Prisma.sql`channel = ${filter.channel}::release_channel`] : []),
    ...(filter.status ? [Prisma.sql`status = ${filter.status}::release_status`] : []),
  ];
  const [rows, count] = await Promise.all([
    ctx.db.prisma.release.findMany({ where: { ...where, ...past }, include: RELEASE_INCLUDE, orderBy: { versionOrder: page.order }, take: page.size + 1 }),
    cappedCount(countUpTo(ctx.db, Prisma.sql`releases`, Prisma.join(conditions, ' AND '))),
  ]);
  return toPage(rows, page, count, (row) => [row.versionOrder]);
}

/** One release of the caller's tenant (any role). */
export async function getRelease(ctx: ServiceContext, releaseId: string) {
  return tenantRelease(ctx.db.prisma, requireMember(ctx), releaseId);
}

/** Creates a draft release (CompanyAdmin). The version is unique per product. Audited (CreateRelease). */
export async function createRelease(ctx: ServiceContext, input: z.input<typeof CreateReleaseSchema>) {
  const { tenantId } = requireAdmin(ctx);
  const data = parseInput(CreateReleaseSchema, input);
  const product = isUuid(data.productId) ? await ctx.db.prisma.product.findFirst({ where: { id: data.productId, tenantId }, select: { id: true, name: true } }) : null;
  if (!product) throw new AppError('NotFound', 'Product not found.', { fields: { productId: 'not found' } });
  try {
    return await ctx.db.prisma.$transaction(async (tx) => {
      const release = await tx.release.create({
        data: {
          tenantId,
          productId: product.id,
          version: data.version,
          versionOrder: versionOrder(data.version),
          channel: data.channel,
          notes: data.notes ?? null,
          requiredFeatures: [...new Set(data.requiredFeatures ?? [])],
          requiresMaintenance: data.requiresMaintenance ?? false,
          createdAt: ctx.now,
        },
        include: RELEASE_INCLUDE,
      });
      const details = { productId: product.id, version: release.version, channel: release.channel, requiredFeatures: release.requiredFeatures, requiresMaintenance: release.requiresMaintenance };
      await recordAudit(tx, { tenantId, action: 'CreateRelease', entityType: 'Release', entityId: release.id, entity: `${product.name} ${release.version}`, details }, auditActor(ctx), ctx.now);
      return release;
    });
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new AppError('Conflict', `${product.name} already has a release ${data.version}.`, { fields: { version: 'A release of this product already has this version.' } });
    }
    throw error;
  }
}

/** Changes a release's channel, notes or requirements (CompanyAdmin; not once yanked). Audited (UpdateRelease). */
export async function updateRelease(ctx: ServiceContext, releaseId: string, input: z.input<typeof UpdateReleaseSchema>) {
  const { tenantId } = requireAdmin(ctx);
  const data = parseInput(UpdateReleaseSchema, input);
  return ctx.db.prisma.$transaction(async (tx) => {
    const status = await lockRelease(tx, tenantId, releaseId);
    if (status === 'yanked') throw new AppError('Conflict', 'A yanked release cannot be changed.');
    const before = await tenantRelease(tx, tenantId, releaseId);
    const changes = {
      ...(data.channel !== undefined && { channel: data.channel }),
      ...(data.notes !== undefined && { notes: data.notes }),
      ...(data.requiredFeatures !== undefined && { requiredFeatures: [...new Set(data.requiredFeatures)] }),
      ...(data.requiresMaintenance !== undefined && { requiresMaintenance: data.requiresMaintenance }),
    };
    // Measured against the row under its lock: the same edit sent twice at once (or again) is logged once.
    const diff = diffChanges({ channel: before.channel, notes: before.notes, requiredFeatures: before.requiredFeatures, requiresMaintenance: before.requiresMaintenance } as Record<string, unknown>, changes);
    if (!diff) return tx.release.findUniqueOrThrow({ where: { id: releaseId }, include: RELEASE_INCLUDE });
    const release = await tx.release.update({ where: { id: releaseId }, data: changes, include: RELEASE_INCLUDE });
    await recordAudit(tx, { tenantId, action: 'UpdateRelease', entityType: 'Release', entityId: release.id, entity: auditName(before), details: { changes: diff } }, auditActor(ctx), ctx.now);
    return release;
  });
}

/**
 * Publishes a draft (CompanyAdmin): from now on licenses that meet its requirements see it and may download its
 * artifacts. A release needs at least one artifact. Audited (PublishRelease); webhook `release.published`.
 */
export async function publishRelease(ctx: ServiceContext, releaseId: string) {
  const { tenantId } = requireAdmin(ctx);
  return ctx.db.prisma.$transaction(async (tx) => {
    const status = await lockRelease(tx, tenantId, releaseId);
    if (status !== 'draft') throw new AppError('Conflict', `Only a draft can be published; this release is ${status}.`);
    const draft = await tenantRelease(tx, tenantId, releaseId);
    if (!draft.artifacts.length) throw new AppError('Conflict', 'Upload at least one artifact before publishing the release.');
    await tx.release.update({ where: { id: releaseId }, data: { status: 'published', publishedAt: ctx.now } });
    const release = await tenantRelease(tx, tenantId, releaseId);
    await recordAudit(tx, { tenantId, action: 'PublishRelease', entityType: 'Release', entityId: release.id, entity: auditName(release), details: { artifacts: release.artifacts.length } }, auditActor(ctx), ctx.now);
    await emitEvent(tx, tenantId, 'release.published', releaseData(release), ctx.now);
    return release;
  });
}

/**
 * Withdraws a published release for good (CompanyAdmin): no longer listed, offered as an upgrade or downloadable;
 * links already handed out stop working. Its version stays taken. Audited (YankRelease); webhook `release.yanked`.
 */
export async function yankRelease(ctx: ServiceContext, releaseId: string) {
  const { tenantId } = requireAdmin(ctx);
  return ctx.db.prisma.$transaction(async (tx) => {
    const status = await lockRelease(tx, tenantId, releaseId);
    if (status !== 'published') throw new AppError('Conflict', status === 'draft' ? 'A draft is not published: delete it instead.' : 'The release is already yanked.');
    await tx.release.update({ where: { id: releaseId }, data: { status: 'yanked', yankedAt: ctx.now } });
    const release = await tenantRelease(tx, tenantId, releaseId);
    await recordAudit(tx, { tenantId, action: 'YankRelease', entityType: 'Release', entityId: release.id, entity: auditName(release) }, auditActor(ctx), ctx.now);
    await emitEvent(tx, tenantId, 'release.yanked', releaseData(release), ctx.now);
    return release;
  });
}

/** Deletes a draft and its artifacts' files (CompanyAdmin; a published or yanked release stays). Audited (DeleteRelease). */
export async function deleteRelease(ctx: ServiceContext & { store: ArtifactStore }, releaseId: string) {
  const { tenantId } = requireAdmin(ctx);
  const release = await ctx.db.prisma.$transaction(async (tx) => {
    const status = await lockRelease(tx, tenantId, releaseId);
    if (status !== 'draft') throw new AppError('Conflict', `Only a draft can be deleted; this release is ${status}${status === 'published' ? ' (yank it instead)' : ''}.`);
    const found = await tenantRelease(tx, tenantId, releaseId);
    await tx.release.delete({ where: { id: releaseId } });
    await recordAudit(tx, { tenantId, action: 'DeleteRelease', entityType: 'Release', entityId: found.id, entity: auditName(found), details: { artifacts: found.artifacts.map((a) => a.filename) } }, auditActor(ctx), ctx.now);
    return found;
  });
  // After the commit: a file outliving its row is harmless (unreachable), a row outliving its file is not.
  await Promise.all(release.artifacts.map((artifact) => ctx.store.delete(artifact.storageKey)));
  return release;
}

/** Deletes an artifact of a draft release and its file (CompanyAdmin). Audited (DeleteArtifact). */
export async function deleteArtifact(ctx: ServiceContext & { store: ArtifactStore }, artifactId: string) {
  const { tenantId } = requireAdmin(ctx);
  if (!isUuid(artifactId)) throw artifactNotFound();
  const artifact = await ctx.db.prisma.$transaction(async (tx) => {
    const found = await tx.releaseArtifact.findFirst({ where: { id: artifactId, tenantId }, select: { ...ARTIFACT_SELECT, release: { select: { version: true, product: { select: { name: true } } } } } });
    if (!found) throw artifactNotFound();
    const status = await lockRelease(tx, tenantId, found.releaseId);
    if (status !== 'draft') throw new AppError('Conflict', 'Artifacts of a published or yanked release cannot be deleted (customers may hold their signatures).');
    await tx.releaseArtifact.delete({ where: { id: artifactId } });
    await recordAudit(tx, { tenantId, action: 'DeleteArtifact', entityType: 'Release', entityId: found.releaseId, entity: auditName(found.release), details: { filename: found.filename } }, auditActor(ctx), ctx.now);
    return found;
  });
  await ctx.store.delete(artifact.storageKey);
  return artifact;
}

/**
 * Streams an artifact into a draft release (CompanyAdmin). The body goes through the store's hashing stream into a
 * temporary object (bounded memory, at most `maxUploadBytes`); it becomes an artifact only when it arrived whole,
 * its SHA-256 equals the expected one (when given), the file name is not taken and the release is still a draft.
 * Any failure discards the temporary object: no row, no file. Signed with the current signing key
 * (docs/integrate/releases.md "Verifying an artifact"). Audited (UploadArtifact).
 */
export async function uploadArtifact(
  ctx: ReleaseStaffContext,
  releaseId: string,
  input: { filename?: string; platform?: string; arch?: string; filetype?: string; sha256?: string },
  body: NodeJS.ReadableStream,
) {
  const { tenantId } = requireAdmin(ctx);
  const meta = parseArtifactMeta(input);
  const release = await tenantRelease(ctx.db.prisma, tenantId, releaseId);
  // Checked before the bytes are read (and again under the lock at the end).
  if (release.status !== 'draft') throw new AppError('Conflict', `Only a draft release accepts uploads; this release is ${release.status}. Create a new version instead.`);
  if (release.artifacts.some((artifact) => artifact.filename === meta.filename)) throw duplicateFilename(meta.filename);
  if (release.artifacts.length >= MAX_ARTIFACTS_PER_RELEASE) throw new AppError('Conflict', `A release holds at most ${MAX_ARTIFACTS_PER_RELEASE} artifacts.`);
  const artifactId = randomUUID();
  const storageKey = `${tenantId}/${release.id}/${artifactId}`;
  let stored: Awaited<ReturnType<ArtifactStore['put']>>;
  try {
    stored = await ctx.store.put(storageKey, body, { maxBytes: ctx.maxUploadBytes });
  } catch (error) {
    if (error instanceof ArtifactTooLargeError) throw new AppError('InvalidRequest', `The artifact is larger than the ${Math.floor(ctx.maxUploadBytes / 1024 / 1024)} MiB limit (RELEASES_MAX_UPLOAD_MB).`);
    throw error;
  }
  let committed = false;
  try {
    if (stored.size === 0) throw new AppError('InvalidRequest', 'The upload is empty.', { fields: { body: 'empty' } });
    if (meta.sha256 && meta.sha256 !== stored.sha256) {
      throw new AppError('InvalidRequest', `Checksum mismatch: the upload's SHA-256 is ${stored.sha256}, not the expected ${meta.sha256}. Nothing was stored.`, { fields: { sha256: `The file that arrived has SHA-256 ${stored.sha256}, not this one.` } });
    }
    const statement: ArtifactStatement = {
      typ: 'keyforge.artifact',
      iss: ctx.issuer,
      product: release.productId,
      productName: release.product.name,
      release: release.id,
      version: release.version,
      artifact: artifactId,
      filename: meta.filename,
      platform: meta.platform,
      arch: meta.arch,
      size: stored.size,
      sha256: stored.sha256,
      sha512: stored.sha512,
      iat: Math.floor(ctx.now.getTime() / 1000),
    };
    const signature = await ctx.signer.signPayload(statement);
    const artifact = await ctx.db.prisma.$transaction(async (tx) => {
      const status = await lockRelease(tx, tenantId, release.id);
      if (status !== 'draft') throw new AppError('Conflict', `The release was ${status} while the file was uploading; nothing was stored.`);
      const created = await tx.releaseArtifact.create({
        data: { id: artifactId, tenantId, releaseId: release.id, filename: meta.filename, platform: meta.platform, arch: meta.arch, filetype: meta.filetype, size: BigInt(stored.size), sha256: stored.sha256, sha512: stored.sha512, storageKey, signature, createdAt: ctx.now },
        select: ARTIFACT_SELECT,
      });
      await recordAudit(tx, { tenantId, action: 'UploadArtifact', entityType: 'Release', entityId: release.id, entity: auditName(release), details: { filename: meta.filename, platform: meta.platform, arch: meta.arch, size: stored.size, sha256: stored.sha256 } }, auditActor(ctx), ctx.now);
      // The file becomes visible inside the transaction: if the commit of the row fails afterwards, the catch removes it.
      await stored.commit();
      committed = true;
      return created;
    });
    return artifact;
  } catch (error) {
    if (committed) await ctx.store.delete(storageKey).catch(() => undefined);
    else await stored.discard().catch(() => undefined);
    if (isUniqueViolation(error)) throw duplicateFilename(meta.filename);
    throw error;
  }
}

const duplicateFilename = (filename: string) =>
  new AppError('Conflict', `The release already has an artifact named "${filename}": delete it first to replace it.`, { fields: { filename: 'taken' } });
