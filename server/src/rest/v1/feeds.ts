import { Readable } from 'node:stream';
import { createRoute, z } from '@hono/zod-openapi';
import type { AppDeps } from '../../deps.js';
import { AppError } from '../../domain/errors.js';
import { publicRoute } from '../../http/public-api.js';
import { ELECTRON_FEED_FILES, electronFeedArtifacts, electronFeedYaml, TAURI_ARCHES, TAURI_TARGETS, tauriArtifact, tauriUpdate, withTauriSignatures, type FeedRelease } from '../../services/releases/feeds.js';
import { RELEASE_CHANNELS, type ReleaseChannel } from '../../services/releases/model.js';
import { artifactDownloadLink, checkForUpgrade, listLicenseReleases } from '../../services/releases/public.js';
import { licenseKeyOf, releaseContext } from './releases.js';
import { DeviceId, ErrorResponse, commonErrors, json } from './schemas.js';

/**
 * The update feeds of electron-builder's generic provider and of Tauri's updater (docs/integrate/update-feeds.md),
 * gated by the license in `Authorization: License <key>` exactly as the release routes are: the same service calls
 * (listLicenseReleases, checkForUpgrade, artifactDownloadLink) choose what a license sees. Updaters do not read
 * Keyforge's JSON rejections, so a license the release routes would answer `isValid: false` gets 403 here.
 */

const licenseSecurity = [{ LicenseKey: [] }];
const noStore = { 'Cache-Control': 'no-store' };

function refuse(rejection: { errorCode: string; message: string }): never {
  throw new AppError('Forbidden', `The license is refused (${rejection.errorCode}): ${rejection.message}`, { fields: { license: rejection.errorCode } });
}
const isRejection = (answer: object): answer is { isValid: false; errorCode: string; message: string } => 'isValid' in answer && answer.isValid === false;

const ProductParam = z.string().min(1).max(200).openapi({ param: { name: 'product', in: 'path' }, description: 'The product\'s id (or exact name).' });
const Channel = z.enum(RELEASE_CHANNELS).optional().openapi({ description: 'Releases of this channel and every more stable one. Default: stable.' });

/** The URL of the license-gated download of an artifact, as the feeds write it. */
function downloadUrl(publicUrl: string, productId: string, artifact: { id: string; filename: string }, deviceId?: string): string {
  const url = `${publicUrl}/api/v1/feeds/download/${productId}/${artifact.id}/${encodeURIComponent(artifact.filename)}`;
  return deviceId === undefined ? url : `${url}?deviceId=${encodeURIComponent(deviceId)}`;
}

const ELECTRON_FILE = /^(latest|stable|rc|beta|alpha|dev)(-mac|-linux(?:-(?:arm64|armv7l|ia32))?)?\.yml$/;

/** `latest-linux-arm64.yml` → the channel and the artifacts it lists; null for a name electron-updater never asks for. */
export function electronFeedFile(name: string): { channel: ReleaseChannel; platform: string; arch: string | null } | null {
  const match = ELECTRON_FILE.exec(name);
  if (!match) return null;
  const file = ELECTRON_FEED_FILES[`latest${match[2] ?? ''}.yml`];
  if (!file) return null;
  return { channel: match[1] === 'latest' ? 'stable' : (match[1] as ReleaseChannel), ...file };
}

const electronRoute = createRoute({
  method: 'get',
  path: '/feeds/electron/{product}/{file}',
  operationId: 'electronFeed',
  security: licenseSecurity,
  tags: ['Update feeds'],
  summary: 'electron-builder update info (generic provider)',
  description:
    'The UpdateInfo YAML electron-updater reads from a generic provider whose `url` is `…/api/v1/feeds/electron/{product}`: `latest.yml` (Windows), `latest-mac.yml`, `latest-linux.yml`, `latest-linux-arm64.yml` (and `-armv7l`, `-ia32`); `stable`, `rc`, `beta`, `alpha` or `dev` in place of `latest` for `autoUpdater.channel`. Lists the newest release the license may download with a file for the platform: `version`, `files` (`url` to the license-gated download, `sha512` in base64, `size`), `path`, `sha512`, `releaseDate`, `releaseNotes`. 404 when there is none.',
  request: {
    params: z.object({ product: ProductParam, file: z.string().openapi({ param: { name: 'file', in: 'path' }, example: 'latest.yml' }) }),
  },
  responses: {
    200: { description: 'The update info.', content: { 'text/yaml': { schema: { type: 'string' } } } },
    403: json(ErrorResponse, 'The license is refused (`Forbidden`; `fields.license`: the rejection code validate answers).'),
    404: json(ErrorResponse, 'No such feed file, or no release this license may download has a file for the platform (`NotFound`).'),
    ...commonErrors,
  },
});

const tauriRoute = createRoute({
  method: 'get',
  path: '/feeds/tauri/{product}/{target}/{arch}/{currentVersion}',
  operationId: 'tauriFeed',
  security: licenseSecurity,
  tags: ['Update feeds'],
  summary: 'Tauri updater (dynamic update server)',
  description:
    'Tauri\'s updater endpoint `…/api/v1/feeds/tauri/{product}/{{target}}/{{arch}}/{{current_version}}`. 204 when the license may install no newer release with a Tauri-signed bundle for the target and arch (no newer release, maintenance ended, a feature missing, no bundle). 200 with `{ version, notes, pub_date, url, signature }` otherwise: `url` is the license-gated download, `signature` the vendor\'s Tauri signature of the bundle (the `.sig` file\'s content, set on the artifact).',
  request: {
    params: z.object({
      product: ProductParam,
      target: z.string().openapi({ param: { name: 'target', in: 'path' }, description: '`windows`, `darwin` or `linux`.' }),
      arch: z.string().openapi({ param: { name: 'arch', in: 'path' }, description: '`x86_64`, `aarch64`, `i686` or `armv7`.' }),
      currentVersion: z.string().openapi({ param: { name: 'currentVersion', in: 'path' }, description: 'The running version (semantic version).', example: '1.4.0' }),
    }),
    query: z.object({ channel: Channel, deviceId: DeviceId.optional().openapi({ description: 'When given, the license must hold an active activation for this device.' }) }),
  },
  responses: {
    200: json(
      z
        .object({
          version: z.string(),
          notes: z.string(),
          pub_date: z.string().openapi({ format: 'date-time' }),
          url: z.string().openapi({ format: 'uri' }),
          signature: z.string().openapi({ description: 'The content of the bundle\'s minisign `.sig` file, made with the vendor\'s Tauri key.' }),
        })
        .openapi('TauriUpdate'),
      'An update.',
    ),
    204: { description: 'No update for this license.' },
    403: json(ErrorResponse, 'The license is refused (`Forbidden`; `fields.license`: the rejection code).'),
    ...commonErrors,
  },
});

const downloadRoute = createRoute({
  method: 'get',
  path: '/feeds/download/{product}/{artifactId}/{filename}',
  operationId: 'feedDownload',
  security: licenseSecurity,
  tags: ['Update feeds'],
  summary: 'Download a feed\'s file (redirect)',
  description:
    'The file URLs the feeds write. Answers 302 to a short-lived link (as `GET /artifacts/{artifactId}/download` hands out; counted as a download). Both updaters follow it and drop `Authorization` when it leads to another host. `filename` is the artifact\'s name (updaters name the saved file after it).',
  request: {
    params: z.object({
      product: ProductParam,
      artifactId: z.string().openapi({ param: { name: 'artifactId', in: 'path' } }),
      filename: z.string().openapi({ param: { name: 'filename', in: 'path' } }),
    }),
    query: z.object({ deviceId: DeviceId.optional() }),
  },
  responses: {
    302: { description: 'To the short-lived link (`Location`).' },
    403: json(ErrorResponse, 'The license is refused, or may not download this release (`Forbidden`).'),
    404: json(ErrorResponse, 'No such published artifact of this product (`NotFound`).'),
    ...commonErrors,
  },
});

function feedRelease(release: { version: string; notes: string | null; publishedAt: string; artifacts: { id: string; filename: string; platform: string; arch: string; filetype: string; size: number; sha512: string }[] }): FeedRelease {
  return { version: release.version, notes: release.notes, publishedAt: release.publishedAt, artifacts: release.artifacts };
}

export const electronFeed = (deps: AppDeps) =>
  publicRoute(electronRoute, async (call) => {
    const { product, file } = call.params as { product: string; file: string };
    const feed = electronFeedFile(file);
    if (!feed) throw new AppError('NotFound', `No feed file ${file}: electron-updater asks for latest.yml, latest-mac.yml or latest-linux.yml.`);
    const licenseKey = licenseKeyOf(call);
    const ctx = releaseContext(deps);
    const answer = await listLicenseReleases(ctx, { licenseKey, product, channel: feed.channel, platform: feed.platform, ...(feed.arch !== null && { arch: feed.arch }), limit: 1 });
    if (isRejection(answer)) refuse(answer);
    const [release] = (answer as Exclude<typeof answer, { isValid: false }>).releases;
    if (!release) throw new AppError('NotFound', `No release this license may download has a file for ${feed.platform}${feed.arch ? ` ${feed.arch}` : ''} on the ${feed.channel} channel.`);
    const artifacts = electronFeedArtifacts(feedRelease(release), feed);
    const yaml = electronFeedYaml(feedRelease(release), artifacts, (artifact) => downloadUrl(ctx.publicUrl, release.product, artifact));
    return { body: {}, stream: Readable.from([Buffer.from(yaml)]), headers: { ...noStore, 'Content-Type': 'text/yaml; charset=utf-8', 'Content-Length': String(Buffer.byteLength(yaml)) } };
  });

export const tauriFeed = (deps: AppDeps) =>
  publicRoute(tauriRoute, async (call) => {
    const params = call.params as { product: string; target: string; arch: string; currentVersion: string };
    const { channel, deviceId } = call.query as { channel?: ReleaseChannel; deviceId?: string };
    const platform = TAURI_TARGETS[params.target];
    const arch = TAURI_ARCHES[params.arch];
    if (!platform) throw new AppError('InvalidRequest', `target must be one of ${Object.keys(TAURI_TARGETS).join(', ')}.`, { fields: { target: 'unknown target' } });
    if (!arch) throw new AppError('InvalidRequest', `arch must be one of ${Object.keys(TAURI_ARCHES).join(', ')}.`, { fields: { arch: 'unknown arch' } });
    const ctx = releaseContext(deps);
    // By platform only: a macOS universal bundle serves both architectures (tauriArtifact picks).
    const answer = await checkForUpgrade(ctx, { licenseKey: licenseKeyOf(call), product: params.product, version: params.currentVersion, platform, ...(channel && { channel }), ...(deviceId !== undefined && { deviceId }) });
    if (isRejection(answer)) refuse(answer);
    const upgrade = answer as Exclude<typeof answer, { isValid: false }>;
    if (!upgrade.available) return { body: {}, status: 204 as const, headers: noStore };
    const { release } = upgrade;
    const withSignatures = await withTauriSignatures(ctx.db, { ...feedRelease(release), id: release.id, product: release.product });
    const artifact = tauriArtifact(withSignatures, platform, arch);
    if (!artifact) return { body: {}, status: 204 as const, headers: noStore };
    return { body: tauriUpdate(withSignatures, artifact, downloadUrl(ctx.publicUrl, release.product, artifact, deviceId)), headers: noStore };
  });

export const feedDownload = (deps: AppDeps) =>
  publicRoute(downloadRoute, async (call) => {
    const { product, artifactId } = call.params as { product: string; artifactId: string };
    const { deviceId } = call.query as { deviceId?: string };
    const answer = await artifactDownloadLink(releaseContext(deps), { licenseKey: licenseKeyOf(call), product, artifactId, ...(deviceId !== undefined && { deviceId }) });
    if (isRejection(answer)) refuse(answer);
    return { body: {}, status: 302 as const, headers: { ...noStore, Location: (answer as { url: string }).url } };
  });
