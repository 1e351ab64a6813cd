import { createRoute, z } from '@hono/zod-openapi';
import { contentDisposition } from '../../services/releases/s3-store.js';
import type { AppDeps } from '../../deps.js';
import { AppError } from '../../domain/errors.js';
import { publicRoute, type PublicCall } from '../../http/public-api.js';
import { RELEASE_CHANNELS } from '../../services/releases/model.js';
import { artifactDownloadLink, checkForUpgrade, listLicenseReleases, openDownload, type ReleaseLicensingContext } from '../../services/releases/public.js';
import { artifactStoreFor } from '../../services/releases/store.js';
import { licensingContext } from './context.js';
import { DeviceId, ErrorResponse, Rejection, commonErrors, json } from './schemas.js';

/** `Authorization: License <key>`: the credential of the release routes (GET requests carry no body). */
export const licenseKeyScheme = {
  type: 'apiKey' as const,
  in: 'header' as const,
  name: 'Authorization',
  description: 'The license key as `Authorization: License <key>` (the scheme Keygen uses). Never in the URL.',
};
const licenseSecurity = [{ LicenseKey: [] }];

/** The key of `Authorization: License <key>`; missing or another scheme → 400 InvalidRequest. */
export function licenseKeyOf(call: PublicCall<unknown>): string {
  const match = /^License[ \t]+(\S.{0,255})$/i.exec(call.header('authorization') ?? '');
  if (!match) throw new AppError('InvalidRequest', 'Send the license key in the header `Authorization: License <key>`.', { fields: { authorization: 'required' } });
  return match[1].trim();
}

export const releaseContext = (deps: AppDeps): ReleaseLicensingContext => ({
  ...licensingContext(deps),
  store: artifactStoreFor(deps.config),
  publicUrl: deps.config.publicUrl,
  downloadLinkSeconds: deps.config.releases.downloadLinkSeconds,
});

const Product = z.string().min(1).max(200).openapi({ description: 'The product: its id, or its exact name (what the SDKs send). A bundle license: the bundle or one of its member products. A key of another product answers `isValid: false`, `errorCode: ProductMismatch`.' });
const Channel = z.enum(RELEASE_CHANNELS).optional().openapi({ description: 'Releases of this channel and every more stable one (stable < rc < beta < alpha < dev). Default: stable.' });
const Platform = z.string().min(1).max(32).optional().openapi({ description: 'Only artifacts of this platform (`win32`, `darwin`, `linux`, …); releases without one are left out.' });
const Arch = z.string().min(1).max(32).optional().openapi({ description: 'Only artifacts of this architecture (`x64`, `arm64`, …).' });
const Device = DeviceId.optional().openapi({ description: 'When given, the license must hold an active activation for this device (else `isValid: false`, `errorCode: DeviceNotActivated`).' });

const Artifact = z
  .object({
    id: z.string(),
    filename: z.string(),
    platform: z.string(),
    arch: z.string(),
    filetype: z.string(),
    size: z.number().int().openapi({ description: 'Bytes.' }),
    sha256: z.string().openapi({ description: 'Hex.' }),
    sha512: z.string().openapi({ description: 'Hex.' }),
    signature: z.string().openapi({ description: 'Compact JWS (EdDSA, `kid` of a key in /.well-known/jwks.json) whose payload states `typ: keyforge.artifact`, `iss`, `product` (id), `productName`, `release`, `version`, `artifact`, `filename`, `platform`, `arch`, `size`, `sha256`, `sha512`, `iat`. Verify it, then the downloaded bytes against it (docs/integrate/releases.md).' }),
  })
  .openapi('Artifact');

const Release = z
  .object({
    id: z.string(),
    product: z.string().openapi({ description: 'The product id.' }),
    productName: z.string(),
    version: z.string().openapi({ description: 'Semantic version.' }),
    channel: z.enum(RELEASE_CHANNELS),
    status: z.literal('published'),
    notes: z.string().nullable(),
    publishedAt: z.string().openapi({ format: 'date-time' }),
    artifacts: z.array(Artifact),
  })
  .openapi('Release');

const ListQuery = z.object({
  product: Product,
  channel: Channel,
  platform: Platform,
  arch: Arch,
  deviceId: Device,
  limit: z.coerce.number().int().min(1).max(100).optional().openapi({ description: 'At most this many releases (1–100, default 20).' }),
});

const listRoute = createRoute({
  method: 'get',
  path: '/releases',
  operationId: 'listReleases',
  security: licenseSecurity,
  tags: ['Releases'],
  summary: 'The releases a license may download',
  description: 'Published releases of the product (never drafts or yanked ones) that this license may download — it has every feature the release requires, and, for a release that requires maintenance, its maintenance had not ended when the release was published — newest first by semantic version. Same rate limits as validate. A license validate would refuse answers HTTP 200 with `isValid: false`.',
  request: { query: ListQuery },
  responses: { 200: json(z.union([z.object({ releases: z.array(Release) }), Rejection]).openapi('ReleaseList'), 'The releases, or a rejection of the license.'), ...commonErrors },
});

const UpgradeQuery = z.object({
  product: Product,
  version: z.string().min(1).max(64).openapi({ description: 'The running version (semantic version); anything else is refused with 400 InvalidRequest.', example: '1.4.0' }),
  channel: Channel,
  platform: Platform,
  arch: Arch,
  deviceId: Device,
});

const upgradeRoute = createRoute({
  method: 'get',
  path: '/releases/upgrade',
  operationId: 'checkForUpgrade',
  security: licenseSecurity,
  tags: ['Releases'],
  summary: 'Whether a newer release may be installed',
  description: 'The newest published release newer than `version` (on the channel, with an artifact for the platform and arch when given) that this license may install: `available: true` with it. Otherwise `available: false` with `reason`: `NoNewerRelease` (`release: null`), or, when newer releases exist but the license may install none, `FeatureMissing` or `MaintenanceExpired` with the newest of them as `release` (to tell the user what they are missing).',
  request: { query: UpgradeQuery },
  responses: {
    200: json(
      z
        .union([
          z.object({ available: z.literal(true), release: Release }),
          z.object({ available: z.literal(false), reason: z.enum(['NoNewerRelease', 'MaintenanceExpired', 'FeatureMissing']), release: Release.nullable() }),
          Rejection,
        ])
        .openapi('UpgradeCheck'),
      'The upgrade, or why there is none, or a rejection of the license.',
    ),
    ...commonErrors,
  },
});

const ArtifactParams = z.object({ artifactId: z.string().openapi({ param: { name: 'artifactId', in: 'path' }, description: 'The artifact id (from a Release).' }) });

const downloadRoute = createRoute({
  method: 'get',
  path: '/artifacts/{artifactId}/download',
  operationId: 'artifactDownload',
  security: licenseSecurity,
  tags: ['Releases'],
  summary: 'A short-lived download link',
  description: 'A link to the artifact valid for RELEASES_DOWNLOAD_LINK_SECONDS (default 300 s): a presigned URL of the object store, or this server\'s `/api/v1/artifacts/{id}/file?token=…` (a token bound to the license and the artifact). Counted as a download. An unknown artifact, one of another product or company, of a draft or a yanked release: 404 NotFound; one this license may not download (a missing feature, maintenance ended): 403 Forbidden.',
  request: { params: ArtifactParams, query: z.object({ product: Product, deviceId: Device }) },
  responses: {
    200: json(z.union([z.object({ url: z.string().openapi({ format: 'uri' }), expiresAt: z.string().openapi({ format: 'date-time' }) }), Rejection]).openapi('DownloadLink'), 'The link, or a rejection of the license.'),
    403: json(ErrorResponse, 'The license may not download this release (`Forbidden`; `fields.reason`: FeatureMissing or MaintenanceExpired).'),
    404: json(ErrorResponse, 'No such published artifact of this product (`NotFound`).'),
    ...commonErrors,
  },
});

const fileRoute = createRoute({
  method: 'get',
  path: '/artifacts/{artifactId}/file',
  operationId: 'artifactFile',
  security: [],
  tags: ['Releases'],
  summary: 'The artifact\'s bytes (file store download link)',
  description: 'Where a file-store download link points: the token is the credential (bound to one license and one artifact, it expires). The bytes stream as `application/octet-stream` with `Content-Length` and `Content-Disposition: attachment`. An expired or forged token, or a license that may no longer download the artifact: 403 Forbidden; a release yanked since: 404 NotFound.',
  request: { params: ArtifactParams, query: z.object({ token: z.string().min(1).max(300).openapi({ description: 'From the download link.' }) }) },
  responses: {
    200: { description: 'The artifact.', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
    403: json(ErrorResponse, 'Expired or forged link (`Forbidden`).'),
    404: json(ErrorResponse, 'The release is no longer published (`NotFound`).'),
    ...commonErrors,
  },
});

type Query<T extends z.ZodType> = z.output<T>;

export const listReleases = (deps: AppDeps) =>
  publicRoute(listRoute, async (call) => {
    const query = call.query as Query<typeof ListQuery>;
    return { body: await listLicenseReleases(licensingContext(deps), { ...query, licenseKey: licenseKeyOf(call) }), headers: { 'Cache-Control': 'no-store' } };
  });

export const upgradeCheck = (deps: AppDeps) =>
  publicRoute(upgradeRoute, async (call) => {
    const query = call.query as Query<typeof UpgradeQuery>;
    return { body: await checkForUpgrade(licensingContext(deps), { ...query, licenseKey: licenseKeyOf(call) }), headers: { 'Cache-Control': 'no-store' } };
  });

export const artifactDownload = (deps: AppDeps) =>
  publicRoute(downloadRoute, async (call) => {
    const query = call.query as { product: string; deviceId?: string };
    return { body: await artifactDownloadLink(releaseContext(deps), { ...query, artifactId: call.params!.artifactId, licenseKey: licenseKeyOf(call) }), headers: { 'Cache-Control': 'no-store' } };
  });

export const artifactFile = (deps: AppDeps) =>
  publicRoute(fileRoute, async (call) => {
    const { token } = call.query as { token: string };
    const file = await openDownload(releaseContext(deps), call.params!.artifactId, token);
    return {
      body: {},
      stream: file.body,
      headers: {
        'Content-Type': 'application/octet-stream',
        'Content-Length': String(file.size),
        'Content-Disposition': contentDisposition(file.filename),
        'Cache-Control': 'private, no-store',
        // The SHA-256 as RFC 9530's Repr-Digest, for clients that check it while downloading.
        'Repr-Digest': `sha-256=:${Buffer.from(file.sha256, 'hex').toString('base64')}:`,
      },
    };
  });
