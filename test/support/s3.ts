import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

/** s3rver's one account: every request must be signed with it (it checks expiry, not SigV4 signatures). */
export const S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

interface KoaContext { method: string; path: string; query: Record<string, string | undefined>; status: number; body: unknown; type: string }
interface S3rverInternals {
  middleware: ((ctx: KoaContext, next: () => Promise<void>) => Promise<void>)[];
  store: { getResourcePath(bucket: string, key: string | undefined, resource: string): string };
}

/**
 * s3rver 3 lacks two operations of S3's multipart API that the artifact store relies on: AbortMultipartUpload (DELETE
 * /bucket/key?uploadId=) and ListMultipartUploads (GET /bucket?uploads). This adds them, as S3 defines them, in front
 * of its router: abort removes the upload's parts, the listing names the uploads still open.
 */
function addMultipartOperations(server: S3rver) {
  const internals = server as unknown as S3rverInternals;
  const uploadsDir = (bucket: string) => internals.store.getResourcePath(bucket, undefined, 'uploads');
  internals.middleware.unshift(async (ctx, next) => {
    const [, bucket, ...rest] = ctx.path.split('/');
    if (ctx.method === 'DELETE' && bucket && rest.length && ctx.query.uploadId) {
      await rm(`${uploadsDir(bucket)}/${ctx.query.uploadId.replace(/[^A-Za-z0-9_-]/g, '')}`, { recursive: true, force: true });
      ctx.status = 204;
      return;
    }
    if (ctx.method === 'GET' && bucket && !rest.filter(Boolean).length && 'uploads' in ctx.query) {
      const ids = await readdir(uploadsDir(bucket)).catch(() => [] as string[]);
      const uploads = await Promise.all(ids.map(async (id) => ({ id, key: await readFile(`${uploadsDir(bucket)}/${id}/key`, 'utf8').catch(() => '') })));
      const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
      ctx.type = 'application/xml';
      ctx.body = `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${escape(bucket)}</Bucket>${uploads.map((upload) => `<Upload><Key>${escape(upload.key)}</Key><UploadId>${escape(upload.id)}</UploadId></Upload>`).join('')}<IsTruncated>false</IsTruncated></ListMultipartUploadsResult>`;
      return;
    }
    await next();
  });
}

/**
 * An S3-compatible server for tests (s3rver, in this process, on an ephemeral port, files in a temporary directory)
 * with one bucket. `env` is what a Keyforge process needs to keep its release artifacts there. s3rver checks that a
 * presigned URL has not expired but does not verify SigV4 signatures, and serves objects to unsigned requests.
 */
export async function startS3(bucket = 'keyforge-releases') {
  const directory = await mkdtemp(join(tmpdir(), 'keyforge-s3-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: bucket }] });
  addMultipartOperations(server);
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    directory,
    env: {
      RELEASES_STORE: 's3',
      RELEASES_S3_BUCKET: bucket,
      RELEASES_S3_ENDPOINT: endpoint,
      RELEASES_S3_REGION: 'us-east-1',
      RELEASES_S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
    },
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
