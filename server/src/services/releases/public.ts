import semver from 'semver';
import { AppError } from '../../domain/errors.js';
import type { LicensingContext } from '../context.js';
import { DEVICE_NOT_ACTIVATED, touchActiveDevice } from '../licenses/activations.js';
import { findLicenseByKey, findLicenseRecordById, type LicenseRecord } from '../licenses/license-record.js';
import { LICENSE_NOT_FOUND, checkEntitlement, productMismatch, rejected, type Rejection } from '../licenses/rules.js';
import { isUuid } from '../listing.js';
import { checkDownloadToken, downloadToken } from './download-links.js';
import { channelsUpTo, normalizeVersion, type ReleaseChannel } from './model.js';
import { ARTIFACT_SELECT } from './releases.js';
import type { ArtifactStore } from './storage.js';

/**
 * The public release API (`/api/v1/releases…`, `/api/v1/artifacts/…`): the license key is the credential, as for
 * validate, and a license sees only what it may download. Every call is charged to the license and its tenant like
 * validate; a license validate would refuse answers the same rejection (HTTP 200, `isValid: false`).
 */
export interface ReleaseLicensingContext extends LicensingContext {
  store: ArtifactStore;
  /** The server's public origin: file-store download links point here. */
  publicUrl: string;
  downloadLinkSeconds: number;
}

export interface LicenseQuery {
  licenseKey: string;
  /** The product's id or exact name (a bundle license: the bundle's or one of its members'). */
  product: string;
  /** When given, the license must hold an active activation for this device. */
  deviceId?: string;
}

export type Reason = 'NoNewerRelease' | 'MaintenanceExpired' | 'FeatureMissing';

type ReleaseRow = Awaited<ReturnType<typeof publishedReleasePage>>[number];
type ArtifactRow = ReleaseRow['artifacts'][number];

/** The license of the key, checked as validate checks it, and the id of the product asked for; or the rejection. */
async function entitledLicense(ctx: LicensingContext, query: LicenseQuery): Promise<{ license: LicenseRecord; productId: string } | Rejection> {
  const license = await findLicenseByKey(ctx.db.sql, ctx.secrets, query.licenseKey, ctx.now, ctx.licenseCache);
  if (!license) return LICENSE_NOT_FOUND;
  await ctx.chargeTenant(license.tenantId, license.id);
  const productId = await productOf(ctx, license, query.product);
  if (!productId) return productMismatch(license, isUuid(query.product) ? `id ${query.product}` : query.product)!;
  const refused = checkEntitlement(license, ctx.now, null);
  if (refused) return refused;
  if (query.deviceId !== undefined && !(await touchActiveDevice(ctx, license, query.deviceId))) return DEVICE_NOT_ACTIVATED;
  return { license, productId };
}

/** The id of the product `wanted` names (id or name) when it is the license's product or a member of its bundle; else null. */
async function productOf(ctx: LicensingContext, license: LicenseRecord, wanted: string): Promise<string | null> {
  if (wanted === license.productId || wanted === license.productName) return license.productId;
  if (!license.bundleProducts?.length) return null;
  // PostgreSQL writes ids in lower case; a member may be named by its id in either case.
  const id = isUuid(wanted) ? wanted.toLowerCase() : null;
  const [, ...members] = await licenseProducts(ctx, license);
  return members.find((member) => (id ? member.id === id : member.name === wanted))?.id ?? null;
}

/**
 * The products whose releases a license may download: its own and, for a bundle, each member it grants (by name).
 * The members are read now rather than from the license record, which holds their names only.
 */
export async function licenseProducts(ctx: Pick<LicensingContext, 'db'>, license: LicenseRecord): Promise<{ id: string; name: string }[]> {
  const own = { id: license.productId, name: license.productName };
  if (!license.bundleProducts?.length) return [own];
  const members = await ctx.db.sql.query<{ id: string; name: string }>(
    'SELECT p.id, p.name FROM bundle_items b JOIN products p ON p.id = b.product_id WHERE b.bundle_id = $1 AND p.tenant_id = $2 ORDER BY p.name',
    [license.productId, license.tenantId],
  );
  return [own, ...members];
}

const isRejection = (value: object): value is Rejection => 'errorCode' in value;

/** The first page of published releases: an update check or a short listing needs the first few. */
export const RELEASE_PAGE_SIZE = 25;
/** Each further page is this many times the one before, up to MAX_RELEASE_PAGE_SIZE. */
const RELEASE_PAGE_GROWTH = 4;
export const MAX_RELEASE_PAGE_SIZE = 1_600;

/** The size of page `index` (0 first): growing, so that a walk through many releases takes few statements. */
export const releasePageSize = (index: number) => Math.min(RELEASE_PAGE_SIZE * RELEASE_PAGE_GROWTH ** index, MAX_RELEASE_PAGE_SIZE);

/**
 * One page of the published releases of a product on `channel` (and the more stable ones), newest first, below
 * `below` (a version's sort key) when given: along the index on (product_id, version_order), with their artifacts.
 */
async function publishedReleasePage(ctx: Pick<LicensingContext, 'db'>, tenantId: string, productId: string, channel: ReleaseChannel, below: string | undefined, size: number) {
  return ctx.db.prisma.release.findMany({
    where: { tenantId, productId, status: 'published', channel: { in: channelsUpTo(channel) }, ...(below !== undefined && { versionOrder: { lt: below } }) },
    orderBy: { versionOrder: 'desc' },
    take: size,
    include: { artifacts: { select: ARTIFACT_SELECT, orderBy: [{ platform: 'asc' }, { arch: 'asc' }, { filename: 'asc' }] }, product: { select: { name: true } } },
  });
}

/** Pages of published releases already read, by tenant, product and channel: a listing of many licenses reads each page once. */
export type PublishedReleasesCache = Map<string, ReturnType<typeof publishedReleasePage>[]>;

/**
 * The published releases of a product on `channel` (and the more stable ones), newest first, read a page at a time as
 * the caller goes on: the newest release costs one page of RELEASE_PAGE_SIZE however many releases the product has,
 * and a walk through all of them (a platform only old releases have) one statement per growing page.
 */
async function* publishedReleases(ctx: Pick<LicensingContext, 'db'>, tenantId: string, productId: string, channel: ReleaseChannel, cache?: PublishedReleasesCache) {
  const key = `${tenantId}:${productId}:${channel}`;
  const pages = cache?.get(key) ?? [];
  cache?.set(key, pages);
  for (let index = 0; ; index++) {
    const below = index === 0 ? undefined : (await pages[index - 1]).at(-1)!.versionOrder;
    pages[index] ??= publishedReleasePage(ctx, tenantId, productId, channel, below, releasePageSize(index));
    const page = await pages[index];
    yield* page;
    if (page.length < releasePageSize(index)) return;
  }
}

/** Why the license may not download `release` (features first, then maintenance), or null when it may. */
export function releaseRefusal(license: Pick<LicenseRecord, 'features' | 'maintenanceExpiresAt'>, release: { requiredFeatures: string[]; requiresMaintenance: boolean; publishedAt: Date | null }): Exclude<Reason, 'NoNewerRelease'> | null {
  if (release.requiredFeatures.some((feature) => !license.features.includes(feature))) return 'FeatureMissing';
  if (release.requiresMaintenance && license.maintenanceExpiresAt && release.publishedAt && release.publishedAt > license.maintenanceExpiresAt) return 'MaintenanceExpired';
  return null;
}

const matches = (filter: { platform?: string; arch?: string }) => (artifact: ArtifactRow) =>
  (filter.platform === undefined || artifact.platform === filter.platform) && (filter.arch === undefined || artifact.arch === filter.arch);

/** A release as the public API shows it (docs/integrate/releases.md "Objects"), with only the artifacts that match. */
export function publicRelease(release: ReleaseRow, artifacts: ArtifactRow[] = release.artifacts) {
  return {
    id: release.id,
    product: release.productId,
    productName: release.product.name,
    version: release.version,
    channel: release.channel,
    status: 'published' as const,
    notes: release.notes,
    publishedAt: release.publishedAt!.toISOString(),
    artifacts: artifacts.map(publicArtifact),
  };
}

/** An artifact as the public API (and the staff upload's answer) shows it. */
export function publicArtifact(artifact: Pick<ArtifactRow, 'id' | 'filename' | 'platform' | 'arch' | 'filetype' | 'size' | 'sha256' | 'sha512' | 'signature'>) {
  return {
    id: artifact.id,
    filename: artifact.filename,
    platform: artifact.platform,
    arch: artifact.arch,
    filetype: artifact.filetype,
    size: Number(artifact.size),
    sha256: artifact.sha256,
    sha512: artifact.sha512,
    signature: artifact.signature,
  };
}

export interface ListQuery extends LicenseQuery {
  channel?: ReleaseChannel;
  platform?: string;
  arch?: string;
  limit?: number;
}

/** `GET /api/v1/releases`: the published releases this license may download, newest first. */
export async function listLicenseReleases(ctx: LicensingContext, query: ListQuery) {
  const entitled = await entitledLicense(ctx, query);
  if (isRejection(entitled)) return rejected(entitled);
  return { releases: await releasesForLicense(ctx, entitled.license, entitled.productId, query) };
}

/**
 * The published releases of `productId` (the license's product or a member of its bundle) that a license row may
 * download, newest first, with the artifacts matching the filter: the list behind `GET /api/v1/releases` and the
 * customer portal. The caller has already checked the license itself (checkEntitlement).
 */
export async function releasesForLicense(
  ctx: Pick<LicensingContext, 'db'>,
  license: LicenseRecord,
  productId: string,
  query: { channel?: ReleaseChannel; platform?: string; arch?: string; limit?: number; cache?: PublishedReleasesCache } = {},
) {
  const filter = matches(query);
  const releases = [];
  for await (const release of publishedReleases(ctx, license.tenantId, productId, query.channel ?? 'stable', query.cache)) {
    if (releaseRefusal(license, release)) continue;
    const artifacts = release.artifacts.filter(filter);
    if (!artifacts.length) continue;
    releases.push(publicRelease(release, artifacts));
    if (releases.length >= (query.limit ?? 20)) break;
  }
  return releases;
}

export interface UpgradeQuery extends LicenseQuery {
  version: string;
  channel?: ReleaseChannel;
  platform?: string;
  arch?: string;
}

/**
 * `GET /api/v1/releases/upgrade`: the newest release newer than `version` this license may install (with artifacts
 * for the platform and arch, when given). None: why — NoNewerRelease, or, when newer releases exist but none may be
 * installed, the reason of the newest of them (FeatureMissing before MaintenanceExpired), with that release.
 */
export async function checkForUpgrade(ctx: LicensingContext, query: UpgradeQuery) {
  const current = normalizeVersion(query.version);
  if (!current) throw new AppError('InvalidRequest', 'version must be a semantic version such as 1.4.0 or 2.0.0-beta.1.', { fields: { version: 'not a semantic version' } });
  const entitled = await entitledLicense(ctx, query);
  if (isRejection(entitled)) return rejected(entitled);
  const { license, productId } = entitled;
  const filter = matches(query);
  let blocked: { release: ReturnType<typeof publicRelease>; reason: Exclude<Reason, 'NoNewerRelease'> } | null = null;
  for await (const release of publishedReleases(ctx, license.tenantId, productId, query.channel ?? 'stable')) {
    if (!semver.gt(release.version, current)) break;
    const artifacts = release.artifacts.filter(filter);
    if (!artifacts.length) continue;
    const reason = releaseRefusal(license, release);
    if (!reason) return { available: true as const, release: publicRelease(release, artifacts) };
    blocked ??= { release: publicRelease(release, artifacts), reason };
  }
  if (blocked) return { available: false as const, reason: blocked.reason, release: blocked.release };
  return { available: false as const, reason: 'NoNewerRelease' as const, release: null };
}

/**
 * `GET /api/v1/artifacts/{id}/download`: a short-lived link to an artifact this license may download (a presigned
 * URL of the object store, or, with the file store, this server's link carrying a signed token bound to the license
 * and the artifact), counted as a download of the artifact and its release. An artifact of another company or
 * product, of a draft or a yanked release: NotFound; one the license may not download: Forbidden.
 */
export async function artifactDownloadLink(ctx: ReleaseLicensingContext, query: LicenseQuery & { artifactId: string }) {
  const entitled = await entitledLicense(ctx, query);
  if (isRejection(entitled)) return rejected(entitled);
  return licenseDownloadLink(ctx, entitled.license, [entitled.productId], query.artifactId);
}

/** What a download link needs besides the database: the store, where this server's links point, how long they last. */
export type DownloadLinkContext = Pick<ReleaseLicensingContext, 'db' | 'secrets' | 'now' | 'store' | 'publicUrl' | 'downloadLinkSeconds'>;

/**
 * A short-lived link to an artifact of one of `productIds` (the license's product or members of its bundle) that a
 * license row may download, counted as a download (the rules of artifactDownloadLink; the caller has already checked
 * the license itself, as checkEntitlement does).
 */
export async function licenseDownloadLink(ctx: DownloadLinkContext, license: LicenseRecord, productIds: readonly string[], artifactId: string) {
  const notFound = new AppError('NotFound', 'Artifact not found (or not published for this product).', { fields: { artifactId: 'not found' } });
  if (!isUuid(artifactId)) throw notFound;
  const artifact = await ctx.db.prisma.releaseArtifact.findFirst({
    where: { id: artifactId, tenantId: license.tenantId, release: { productId: { in: [...productIds] }, status: 'published' } },
    select: { id: true, filename: true, storageKey: true, releaseId: true, release: { select: { requiredFeatures: true, requiresMaintenance: true, publishedAt: true } } },
  });
  if (!artifact) throw notFound;
  const refusal = releaseRefusal(license, artifact.release);
  if (refusal) {
    throw new AppError('Forbidden', refusal === 'FeatureMissing' ? 'This license lacks a feature the release requires (FeatureMissing).' : 'The release was published after this license\'s maintenance ended (MaintenanceExpired).', { fields: { reason: refusal } });
  }
  const expiresAt = new Date(ctx.now.getTime() + ctx.downloadLinkSeconds * 1000);
  const presigned = await ctx.store.presignedGetUrl(artifact.storageKey, { expiresInSeconds: ctx.downloadLinkSeconds, filename: artifact.filename });
  const url = presigned ?? `${ctx.publicUrl}/api/v1/artifacts/${artifact.id}/file?token=${downloadToken(ctx.secrets, artifact.id, license.id, expiresAt)}`;
  await ctx.db.prisma.$transaction([
    ctx.db.prisma.releaseArtifact.update({ where: { id: artifact.id }, data: { downloadCount: { increment: 1 } }, select: { id: true } }),
    ctx.db.prisma.release.update({ where: { id: artifact.releaseId }, data: { downloadCount: { increment: 1 } }, select: { id: true } }),
  ]);
  return { url, expiresAt: expiresAt.toISOString() };
}

/**
 * The file behind a file-store download link: the token must be genuine for this artifact and unexpired, the
 * release still published, and the license still one validate accepts (a link stops working when its license is
 * revoked or suspended, or its release yanked). Expired or forged: Forbidden; gone: NotFound.
 */
export async function openDownload(ctx: ReleaseLicensingContext, artifactId: string, token: string) {
  if (!isUuid(artifactId)) throw new AppError('NotFound', 'Artifact not found.');
  const check = checkDownloadToken(ctx.secrets, artifactId, token, ctx.now);
  if (!check.ok) {
    throw new AppError('Forbidden', check.reason === 'expired' ? 'This download link has expired: ask for a new one (GET /api/v1/artifacts/{id}/download).' : 'This download link is not valid.');
  }
  const artifact = await ctx.db.prisma.releaseArtifact.findFirst({
    where: { id: artifactId, release: { status: 'published' } },
    select: { id: true, tenantId: true, filename: true, size: true, sha256: true, storageKey: true, release: { select: { requiredFeatures: true, requiresMaintenance: true, publishedAt: true } } },
  });
  if (!artifact) throw new AppError('NotFound', 'Artifact not found: the release is no longer published.');
  const license = await findLicenseRecordById(ctx.db.sql, artifact.tenantId, check.licenseId);
  if (!license || checkEntitlement(license, ctx.now, null) || releaseRefusal(license, artifact.release)) {
    throw new AppError('Forbidden', 'The license of this download link may no longer download the artifact.');
  }
  return { filename: artifact.filename, size: Number(artifact.size), sha256: artifact.sha256, body: await ctx.store.get(artifact.storageKey) };
}
