import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  S3Client,
  UploadPartCommand,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { ArtifactTooLargeError, assertStorageKey, type ArtifactStore } from './storage.js';

export interface S3StoreOptions {
  bucket: string;
  region: string;
  /** An S3-compatible server (MinIO, R2, …); unset: AWS S3 itself. */
  endpoint?: string;
  /** Bucket in the path (`https://host/bucket/key`) rather than the host name; most S3-compatible servers need it. */
  forcePathStyle: boolean;
  /** Prepended to every key (none by default). */
  prefix?: string;
  /** Bytes per multipart part (S3's minimum is 5 MiB for every part but the last). */
  partSize?: number;
  /** Overrides for the S3 client (tests give credentials here; a deployment uses the AWS SDK's usual environment). */
  client?: Partial<S3ClientConfig>;
}

/** 8 MiB: at most 10,000 parts, so objects up to 80 GiB; memory per upload is one part. */
const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
const MIN_PART_SIZE = 5 * 1024 * 1024;

/**
 * Artifacts in an S3-compatible bucket (AWS S3, MinIO, Cloudflare R2).
 *
 * An upload is a multipart upload to the final key, fed part by part as the request body arrives (memory: one part),
 * hashed on the way. S3 shows a multipart upload's object only once it is completed, so `commit()` completes it and
 * `discard()` aborts it: a checksum mismatch or an upload that stopped halfway leaves no object behind. (A process
 * that dies between the two leaves an incomplete multipart upload, invisible and removed by the bucket's
 * AbortIncompleteMultipartUpload lifecycle rule — see the releases guide.)
 *
 * Downloads are presigned GET URLs that expire, so the bytes never pass through Keyforge.
 */
export class S3ArtifactStore implements ArtifactStore {
  /** Read by tests (to watch the requests it sends). */
  readonly client: S3Client;
  private readonly partSize: number;

  constructor(private readonly options: S3StoreOptions) {
    this.partSize = Math.max(options.partSize ?? DEFAULT_PART_SIZE, MIN_PART_SIZE);
    this.client = new S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      forcePathStyle: options.forcePathStyle,
      // Checksums only when an operation requires them: S3-compatible servers do not all know the newer headers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      ...options.client,
    });
  }

  private objectKey(key: string): string {
    assertStorageKey(key);
    return `${this.options.prefix ?? ''}${key}`;
  }

  async put(key: string, body: NodeJS.ReadableStream, opts: { maxBytes: number }) {
    const Bucket = this.options.bucket;
    const Key = this.objectKey(key);
    const created = await this.client.send(new CreateMultipartUploadCommand({ Bucket, Key, ContentType: 'application/octet-stream' }));
    const UploadId = created.UploadId!;
    const abort = () => this.client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId })).then(() => undefined);

    const sha256 = createHash('sha256');
    const sha512 = createHash('sha512');
    const parts: { ETag: string; PartNumber: number }[] = [];
    let size = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;

    const sendPart = async (data: Buffer) => {
      const PartNumber = parts.length + 1;
      const answer = await this.client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body: data, ContentLength: data.length }));
      parts.push({ ETag: answer.ETag!, PartNumber });
    };

    try {
      // for await pulls one chunk at a time: while a part is being sent, the request body is not read (backpressure).
      for await (const chunk of body as AsyncIterable<Buffer | string>) {
        const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        size += buffer.length;
        if (size > opts.maxBytes) {
          throw new ArtifactTooLargeError(opts.maxBytes);
        }
        sha256.update(buffer);
        sha512.update(buffer);
        pending.push(buffer);
        pendingBytes += buffer.length;
        while (pendingBytes >= this.partSize) {
          const joined = Buffer.concat(pending);
          const part = joined.subarray(0, this.partSize);
          const rest = joined.subarray(this.partSize);
          pending = rest.length ? [rest] : [];
          pendingBytes = rest.length;
          await sendPart(part);
        }
      }
      // The last part may be smaller than the minimum (an empty file is one empty part).
      if (pendingBytes > 0 || parts.length === 0) await sendPart(Buffer.concat(pending));
      pending = [];
    } catch (error) {
      await abort().catch(() => undefined);
      throw error;
    }

    let settled = false;
    return {
      size,
      sha256: sha256.digest('hex'),
      sha512: sha512.digest('hex'),
      commit: async () => {
        if (settled) return;
        settled = true;
        await this.client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
      },
      discard: async () => {
        if (settled) return;
        settled = true;
        await abort();
      },
    };
  }

  async presignedGetUrl(key: string, opts: { expiresInSeconds: number; filename: string }): Promise<string | null> {
    const command = new GetObjectCommand({
      Bucket: this.options.bucket,
      Key: this.objectKey(key),
      ResponseContentDisposition: contentDisposition(opts.filename),
      ResponseContentType: 'application/octet-stream',
    });
    return getSignedUrl(this.client, command, { expiresIn: opts.expiresInSeconds });
  }

  async get(key: string): Promise<NodeJS.ReadableStream> {
    const answer = await this.client.send(new GetObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }));
    return answer.Body as Readable;
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }));
  }
}

/** `attachment` with the file name as plain ASCII (quotes and controls replaced) and as RFC 5987 UTF-8. */
export function contentDisposition(name: string): string {
  const filename = wellFormed(name);
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/** The string with each lone surrogate (which has no UTF-8 form) replaced by U+FFFD, as String#toWellFormed does. */
export function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}
