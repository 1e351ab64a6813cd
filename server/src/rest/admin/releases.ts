import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Hono } from 'hono';
import { AppError } from '../../domain/errors.js';
import type { AppDeps } from '../../deps.js';
import type { AppEnv } from '../../http/env.js';
import { uploadArtifact, type ReleaseStaffContext } from '../../services/releases/releases.js';
import { publicArtifact } from '../../services/releases/public.js';
import { artifactStoreFor } from '../../services/releases/store.js';
import { adminServiceContext } from './context.js';
import type { Context } from 'hono';

/** The staff service context of release management: the caller, the artifact store, the signer and the limits. */
export const releaseStaffContext = (deps: AppDeps, c: Context<AppEnv>): ReleaseStaffContext => ({
  ...adminServiceContext(deps, c),
  store: artifactStoreFor(deps.config),
  signer: deps.signer,
  issuer: deps.config.publicUrl,
  maxUploadBytes: deps.config.releases.maxUploadBytes,
});

/**
 * docs/integrate/management-api.md "Release artifacts (REST upload)": `PUT /api/releases/{releaseId}/artifacts`
 * streams the request body (any media type, any size up to RELEASES_MAX_UPLOAD_MB) into the artifact store, with
 * the artifact's description in the query (a file name is no credential). CompanyAdmin (Bearer token or X-Api-Key).
 * The management API's 256 KiB body limit does not apply to this path; the upload's own limit does.
 */
export function mountReleaseRoutes(app: Hono<AppEnv>, deps: AppDeps) {
  app.put('/api/releases/:releaseId/artifacts', async (c) => {
    const ctx = releaseStaffContext(deps, c);
    const declared = c.req.header('content-length');
    if (declared !== undefined && c.req.header('transfer-encoding') === undefined && Number(declared) > ctx.maxUploadBytes) {
      throw new AppError('InvalidRequest', `The artifact is larger than the ${Math.floor(ctx.maxUploadBytes / 1024 / 1024)} MiB limit (RELEASES_MAX_UPLOAD_MB).`);
    }
    const raw = c.req.raw.body;
    if (!raw) throw new AppError('InvalidRequest', 'Send the file as the request body.', { fields: { body: 'empty' } });
    const query = c.req.query();
    const artifact = await uploadArtifact(ctx, c.req.param('releaseId'), query, Readable.fromWeb(raw as WebReadableStream<Uint8Array>));
    c.header('Cache-Control', 'no-store');
    return c.json(
      { ...publicArtifact(artifact), releaseId: artifact.releaseId },
      201,
    );
  });
}
